// Durable handoffs for @openai/agents (docs/design.md §13), the twin of the Python
// `handoff_core.integrations.openai_agents`: the same record ids, fields and metadata, so a
// worker in either language takes a record written from the other.
//
// A handoff made with `durableHandoff` is recorded instead of run: the model calls
// `transfer_to_<agent>` as usual, the record is written (once per tool call), and the run ends
// with an answer naming it. Any process that claims the record runs the agent with `runClaimed`.
import { createHash } from 'node:crypto'

import { Agent, Handoff, Runner, Usage } from '@openai/agents'

import { AgentRegistry, ContextBuilder } from './index.mjs'
import { handoffAttributes, recordAttributes, startSpan, traceFields, traced, unwrap } from './tracing.mjs'

/** The prefix of the records this adapter writes (the Python twin uses the same). */
export const ID_PREFIX = 'oa'

/** The transcript kept on a record: enough for the successor, bounded so the record stays small. */
export const TRANSCRIPT_BUDGET_TOKENS = 4000

/** An outcome longer than this (in UTF-8 bytes) is cut, and says so: a field holds at most 64 KiB. */
export const MAX_OUTCOME_BYTES = 60_000

/**
 * The id of the record a tool call writes: the same for the same task and call, so a run retried
 * with the same call writes one record. `oa-` + 32 hex digits of SHA-256 of `task\ncall`.
 */
export function recordId(taskId, callId) {
  const digest = createHash('sha256').update(`${taskId}\n${callId}`, 'utf8').digest('hex')
  return `${ID_PREFIX}-${digest.slice(0, 32)}`
}

/**
 * A handoff to `agent` that is recorded in `store` instead of run here (see openai-agents.d.ts).
 */
export function durableHandoff(store, agent, options) {
  if (typeof agent?.name !== 'string') throw new TypeError('durableHandoff: agent must be an @openai/agents Agent')
  const { fromAgent, taskId, goal = null, toolDescription = null } = options ?? {}
  if (typeof fromAgent !== 'string') throw new TypeError('durableHandoff: options.fromAgent must be a string')
  if (typeof taskId !== 'string' && typeof taskId !== 'function') {
    throw new TypeError('durableHandoff: options.taskId must be a string or a function of the run context')
  }
  const target = agent.name
  // The registry gives the transfer tool's strict schema and description, and reads the model's
  // call back into create options exactly as the Python twin does. Adding the agents checks
  // their names now (VALIDATION), before any run.
  const registry = new AgentRegistry()
  registry.add(target, agent.handoffDescription || target)
  registry.add(fromAgent, fromAgent, [target])
  const [transfer] = registry.tools(fromAgent, 'openai_responses')
  const raw = unwrap(store)

  // Each invocation gets a stand-in agent of its own (named as the target, so the SDK's transfer
  // message and `lastAgent` read as usual); the input filter finds its state through the
  // handoff's output item, whose target it is.
  const invocations = new WeakMap()
  const standIn = (state) => new Agent({
    name: target,
    instructions: `Stands in for ${target}, who runs elsewhere from the durable handoff.`,
    model: new AnswerModel(() => state.answer ?? `handoff to ${target} was not recorded`),
  })

  // The SDK's own handoff gives the tool name (`transfer_to_` + its own name transform) and
  // `clone` swaps the agent that runs for the stand-in while keeping that name.
  const sdkHandoff = new Handoff(agent, async () => agent)
  const toolName = sdkHandoff.toolName

  const onInvokeHandoff = async (runContext) => {
    // The call id is not given here, only in the filter below, which cannot await: a task id
    // function is resolved now, so it may be async.
    const task = typeof taskId === 'function' ? await taskId(runContext) : taskId
    const state = { task, answer: null }
    const stub = standIn(state)
    invocations.set(stub, state)
    return stub
  }

  const inputFilter = (data) => {
    // Run items are told apart by their `type`, not their class: an application may load a second
    // copy of the SDK, whose classes differ from this module's.
    const output = (data.newItems ?? []).findLast((item) => item?.type === 'handoff_output_item' && invocations.has(item.targetAgent))
    const state = output && invocations.get(output.targetAgent)
    const { call, before } = handoffCall(data, output?.rawItem?.callId)
    if (state === undefined || call === null) {
      throw new Error(`${toolName}: the SDK ran the handoff without its tool call`)
    }
    const handoff = record(state.task, call, before)
    state.answer = `Handed off to ${target}: handoff ${handoff.id} (task ${state.task}) is pending.`
    // The stand-in answers from its state and reads none of this: the history stays as the SDK
    // made it, for the run's result.
    return data
  }

  const record = (task, call, before) => {
    const intent = registry.detect({ type: 'function_call', call_id: call.callId, name: transfer.name, arguments: call.arguments }, fromAgent)
    if (intent === null) throw new Error(`${toolName}: the call's arguments were not a transfer`)
    const summary = typeof intent.arguments.summary === 'string' ? intent.arguments.summary.trim() : ''
    const fields = intent.toCreateOptions(task, fromAgent, goal || summary || `Continue as ${target}`)
    if (!goal) delete fields.progress // the summary is the goal: once is enough
    fields.id = recordId(task, call.callId)
    fields.metadata = { ...fields.metadata, adapter: 'openai-agents', transcript: transcript(before) }
    const known = { id: fields.id, taskId: task, fromAgent, toAgent: target }
    return traced('create', fromAgent, handoffAttributes('create', fromAgent, known, { toolName, callId: call.callId }), (span) => {
      // The successor's spans continue from this one.
      const handoff = createOnce(raw, { ...fields, ...traceFields(span) })
      span?.setAttributes(recordAttributes(handoff))
      return handoff
    })
  }

  return sdkHandoff.clone({
    agent: standIn({ task: null, answer: null }),
    onInvokeHandoff,
    toolDescription: toolDescription || transfer.description,
    inputJsonSchema: transfer.parameters,
    strictJsonSchema: true,
    inputFilter,
  })
}

/**
 * The handoff's tool call (the one answered by the output item with `callId`) and the
 * conversation before it, as input items.
 */
function handoffCall(data, callId) {
  const history = typeof data.inputHistory === 'string'
    ? [{ role: 'user', content: data.inputHistory }]
    : [...(Array.isArray(data.inputHistory) ? data.inputHistory : [])]
  for (const item of data.preHandoffItems ?? []) pushRaw(history, item)
  for (const item of data.newItems ?? []) {
    if (item?.type === 'handoff_call_item' && callId !== undefined && item.rawItem?.callId === callId) {
      return { call: item.rawItem, before: history }
    }
    pushRaw(history, item)
  }
  return { call: null, before: history }
}

function pushRaw(history, item) {
  // A run item carries the protocol item the model saw; approval placeholders carry none.
  if (item?.rawItem !== undefined && item.rawItem !== null) history.push(item.rawItem)
}

/**
 * The conversation so far as chat messages, redacted and within TRANSCRIPT_BUDGET_TOKENS (the
 * newest kept), in any shape `ContextBuilder` reads.
 */
export function transcript(items) {
  const build = (readable) => {
    const builder = new ContextBuilder({ budgetTokens: TRANSCRIPT_BUDGET_TOKENS, redact: true })
    builder.addMessages(readable)
    return builder.build().messages
  }
  try {
    return build(items)
  } catch (err) {
    if (err?.code !== 'VALIDATION') throw err
    // An item of a kind the core does not read (one a newer SDK added) must not cost the
    // handoff: the transcript is context, so such items are left out and the rest kept.
    return build(items.filter((item) => {
      try {
        new ContextBuilder({ budgetTokens: TRANSCRIPT_BUDGET_TOKENS }).addMessages([item])
        return true
      } catch {
        return false
      }
    }))
  }
}

/**
 * Creates the record with its caller-chosen id, or returns the one already there: a retried run
 * (same call, same id) writes nothing new even when its transcript differs.
 */
function createOnce(store, fields) {
  try {
    return store.create(fields)
  } catch (err) {
    if (err?.code === 'CONFLICT') return store.get(fields.id)
    throw err
  }
}

/**
 * Runs `agent` on the claimed handoff (see openai-agents.d.ts): the store's packet in,
 * heartbeats while it runs, completed with the final output, or failed with the error, which
 * propagates. All of it is the holder's span, `handoff.work <holder>`, a child of the record's
 * `traceparent`: the successor continues the creator's trace.
 */
export async function runClaimed(store, agent, claim, options = {}) {
  const { budgetTokens = 4000, context, runConfig } = options ?? {}
  const raw = unwrap(store)
  const handoff = isObject(claim?.handoff) ? claim.handoff : await raw.getAsync(claim?.handoffId)
  const holder = handoff.claimedBy ?? undefined
  const attributes = (op) => handoffAttributes(op, holder, handoff, { token: claim.token })
  return traced('work', holder, attributes('work'), (work) => runLeased(raw, agent, claim, handoff, {
    budgetTokens, context, runConfig, holder, attributes, work,
  }), handoff)
}

/** `runClaimed` under its work span (`work`, null when tracing is off), which the settling spans are children of. */
async function runLeased(raw, agent, claim, handoff, { budgetTokens, context, runConfig, holder, attributes, work }) {
  const runner = new Runner(runConfig ?? {})
  let settling = null
  try {
    const { result } = await raw.withLease(claim, async () => {
      try {
        // Built under the lease, so that a record whose transcript cannot be read fails its claim
        // at once, instead of holding it until the lease lapses.
        const input = await packetMessages(raw, handoff, budgetTokens)
        return await runner.run(agent, input, { context })
      } catch (err) {
        // The lease fails the claim with this error once the work returns: that write is the span.
        settling = startSpan('fail', holder, { ...attributes('fail'), 'error.type': errorType(err) }, work)
        throw err
      }
    }, {
      outcome: (result) => {
        settling = startSpan('complete', holder, attributes('complete'), work)
        return outcomeText(result.finalOutput)
      },
    })
    settling?.end()
    return result
  } catch (err) {
    // The fail span records a failure the store did write, so it is no error itself; a complete
    // that the store refused (LEASE_LOST) is.
    if (settling?.op === 'complete') settling.end(err)
    else settling?.end()
    throw err
  }
}

/**
 * The successor's input: the store's packet for the handoff (`contextFor`: the record, its task's
 * plan and the outputs it depends on, who worked on it before, the predecessor's findings, the
 * relevant knowledge on `main`), with the framework's own transcript the record carries as one
 * more conversation, redacted, within `budgetTokens`, as Responses items.
 */
async function packetMessages(store, handoff, budgetTokens) {
  const carried = handoff.metadata?.transcript
  const transcript = Array.isArray(carried) ? carried.filter(isObject) : []
  const packet = await store.contextForAsync(handoff.id, { budgetTokens, transcript })
  return packet.toMessages('openai_responses')
}

/** A run's final output as the handoff's outcome: text as it is, anything else as JSON. */
export function outcomeText(output) {
  let text
  if (typeof output === 'string') {
    text = output
  } else {
    try {
      text = JSON.stringify(output) ?? String(output)
    } catch {
      text = String(output)
    }
  }
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= MAX_OUTCOME_BYTES) return text
  // Decoding a cut in the middle of a character would leave a replacement character: drop it.
  const kept = bytes.subarray(0, MAX_OUTCOME_BYTES).toString('utf8').replace(/\uFFFD$/, '')
  return `${kept}\n[cut: the output had ${bytes.length} bytes]`
}

function errorType(err) {
  if (err instanceof Error) return err.name || err.constructor?.name || 'Error'
  return typeof err
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/**
 * A model that makes no request: it answers `answer()` as the assistant, for the stand-in agent
 * that ends a run at a durable handoff.
 */
class AnswerModel {
  constructor(answer) {
    this.answer = answer
  }

  async getResponse() {
    return {
      usage: new Usage(),
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: this.answer() }] }],
    }
  }

  async * getStreamedResponse(request) {
    const response = await this.getResponse(request)
    yield {
      type: 'response_done',
      response: { id: 'handoff-core-stand-in', usage: { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 }, output: response.output },
    }
  }
}
