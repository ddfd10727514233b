// handoff-core/openai-agents against the real @openai/agents (pinned in the lockfile), its models
// scripted here with no network: the handoff is recorded, not run; once per tool call; the
// successor runs on the store's redacted packet; a failure is recorded; spans are emitted.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import { Agent, run, setTracingDisabled, Usage } from '@openai/agents'
import { trace, SpanStatusCode } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { z } from 'zod'

import { Store } from 'handoff-core'
import { durableHandoff, outcomeText, recordId, runClaimed, transcript, MAX_OUTCOME_BYTES } from 'handoff-core/openai-agents'
import { instrument, unwrap } from 'handoff-core/tracing'

setTracingDisabled(true) // the SDK's own traces would go to OpenAI's servers

// One provider for the whole file (the global provider can be set once per process); each
// tracing test reads and resets the exporter.
const spans = new InMemorySpanExporter()
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }))

const root = fileURLToPath(new URL('..', import.meta.url))

/** A finished span's parent span id (sdk-trace-base 2 names it in `parentSpanContext`). */
const parentId = (span) => span.parentSpanContext?.spanId ?? span.parentSpanId

const OPENAI_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789'
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE'
const QUESTION = `I was charged twice for order 1042. My API key is ${OPENAI_KEY} and my AWS key ${AWS_KEY}`

/**
 * A model that answers from a script, one step per request: a list of output items, an Error to
 * throw, or a function of the request giving either. Records every request in `calls`.
 */
class ScriptedModel {
  constructor(steps) {
    this.steps = [...steps]
    this.calls = []
  }

  async getResponse(request) {
    this.calls.push(request)
    if (this.steps.length === 0) throw new Error('the script has no more steps')
    let step = this.steps.shift()
    if (typeof step === 'function') step = step(request)
    if (step instanceof Error) throw step
    return { usage: new Usage({ requests: 1 }), output: step, responseId: `resp_${this.calls.length}` }
  }

  async * getStreamedResponse(request) {
    const response = await this.getResponse(request)
    yield {
      type: 'response_done',
      response: { id: response.responseId, usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }, output: response.output },
    }
  }
}

const say = (text) => [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }]
const call = (name, args, callId) => [{ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' }]
const ARGS = { reason: 'a billing question', summary: 'Customer was charged twice for order 1042', pending: ['refund the double charge'], instructions: 'Check the ledger first' }
const transfer = (callId = 'call_1', args = ARGS) => call('transfer_to_billing', args, callId)

/** A triage agent whose model hands over to billing at once, and billing, which answers. */
function agents(store, { taskId = 'ticket-1042', callId = 'call_1', billingSteps = [say('Refunded the second charge of order 1042')] } = {}) {
  const billingModel = new ScriptedModel(billingSteps)
  const billing = new Agent({ name: 'billing', instructions: 'You handle billing.', model: billingModel })
  const triage = new Agent({
    name: 'triage',
    instructions: 'Route the customer.',
    model: new ScriptedModel([transfer(callId)]),
    handoffs: [durableHandoff(store, billing, { fromAgent: 'triage', taskId })],
  })
  return { triage, billing, billingModel }
}

test('the handoff is recorded, the target does not run here, and the output names the record', async () => {
  const store = Store.memory()
  const { triage, billingModel } = agents(store)
  const result = await run(triage, QUESTION)

  const [h, ...more] = store.list({ taskId: 'ticket-1042' })
  assert.equal(more.length, 0)
  assert.deepEqual([h.status, h.fromAgent, h.toAgent], ['pending', 'triage', 'billing'])
  assert.equal(h.goal, 'Customer was charged twice for order 1042')
  assert.deepEqual(h.pendingSteps, ['refund the double charge'])
  assert.equal(h.instructions, 'Check the ledger first')
  assert.equal(h.id, recordId('ticket-1042', 'call_1'))
  assert.deepEqual([h.metadata.adapter, h.metadata.call_id, h.metadata.handoff_reason], ['openai-agents', 'call_1', 'a billing question'])
  assert.equal(billingModel.calls.length, 0, 'billing must not run in the process that hands over')
  assert.match(result.finalOutput, new RegExp(`handoff ${h.id} \\(task ticket-1042\\) is pending`))
  assert.equal(result.lastAgent.name, 'billing')

  // The transcript on the record is the conversation before the handoff, as chat messages,
  // redacted.
  const [said, ...rest] = h.metadata.transcript
  assert.equal(rest.length, 0)
  assert.equal(said.role, 'user')
  assert.match(said.content, /charged twice for order 1042/)
  const stored = JSON.stringify(h)
  assert.ok(!stored.includes(OPENAI_KEY) && !stored.includes(AWS_KEY), stored)
  assert.match(said.content, /\[REDACTED:openai-api-key\].*\[REDACTED:aws-access-key-id\]/)
})

test('the tool is the SDK\'s transfer_to_<name> with the registry\'s strict transfer schema', async () => {
  const store = Store.memory()
  const billing = new Agent({ name: 'Billing agent', handoffDescription: 'Refunds and invoices', model: new ScriptedModel([]) })
  const made = durableHandoff(store, billing, { fromAgent: 'Triage agent', taskId: 't' })
  // The JS SDK's own transform keeps the case (the Python SDK's lowers it).
  assert.equal(made.toolName, 'transfer_to_Billing_agent')
  assert.equal(made.agentName, 'Billing agent')
  const tool = made.getHandoffAsFunctionTool()
  assert.equal(tool.strict, true)
  assert.deepEqual(tool.parameters.required, ['reason', 'summary', 'pending', 'instructions'])
  assert.equal(tool.parameters.additionalProperties, false)
  assert.equal(durableHandoff(store, billing, { fromAgent: 'x', taskId: 't', toolDescription: 'Ask billing' }).toolDescription, 'Ask billing')

  // What the model is offered is that tool, and the record names the agents as they are named.
  const triageModel = new ScriptedModel([call(made.toolName, { ...ARGS, pending: null, instructions: null }, 'c9')])
  const triage = new Agent({ name: 'Triage agent', model: triageModel, handoffs: [made] })
  await run(triage, 'hi')
  const [offered] = triageModel.calls[0].handoffs
  assert.equal(offered.toolName, 'transfer_to_Billing_agent')
  assert.deepEqual(offered.inputJsonSchema, tool.parameters)
  const [h] = store.list()
  assert.deepEqual([h.fromAgent, h.toAgent, h.pendingSteps, h.instructions], ['Triage agent', 'Billing agent', [], null])
})

test('an agent name the store refuses is named before any run', () => {
  assert.throws(() => durableHandoff(Store.memory(), new Agent({ name: 'billing\n' }), { fromAgent: 'triage', taskId: 't' }),
    (err) => err.code === 'VALIDATION')
  assert.throws(() => durableHandoff(Store.memory(), new Agent({ name: 'billing' }), { taskId: 't' }), TypeError)
  assert.throws(() => durableHandoff(Store.memory(), {}, { fromAgent: 'triage', taskId: 't' }), TypeError)
})

test('a retried run writes the record once; another call is another record', async () => {
  const store = Store.memory()
  const outputs = []
  for (let i = 0; i < 2; i++) {
    const { triage } = agents(store)
    outputs.push((await run(triage, i === 0 ? QUESTION : `${QUESTION} (retried)`)).finalOutput)
  }
  assert.equal(store.list({ taskId: 'ticket-1042' }).length, 1)
  assert.equal(outputs[0], outputs[1], 'the retry names the same record')

  // Even once a worker holds it, the retry finds it rather than failing.
  const claim = store.claimNext('billing')
  const { triage } = agents(store)
  assert.equal((await run(triage, QUESTION)).finalOutput, outputs[0])
  assert.equal(store.get(claim.handoffId).status, 'claimed')

  const { triage: again } = agents(store, { callId: 'call_2' })
  await run(again, QUESTION)
  assert.equal(store.list({ taskId: 'ticket-1042' }).length, 2)
})

test('the task id can come from the run context, and a streamed run records the same', async () => {
  const store = Store.memory()
  const ticket = async (runContext) => `ticket-${runContext.context.ticket}`
  const { triage } = agents(store, { taskId: ticket })
  const streamed = await run(triage, QUESTION, { context: { ticket: 7 }, stream: true })
  for await (const _ of streamed) { /* drain the events */ }
  await streamed.completed
  const [h] = store.list()
  assert.equal(h.taskId, 'ticket-7')
  assert.equal(h.id, recordId('ticket-7', 'call_1'))
  assert.match(streamed.finalOutput, new RegExp(h.id))
})

test('record ids are those the Python adapter computes', () => {
  // hashlib.sha256(b"ticket-1\ncall_1").hexdigest()[:32], from Python.
  assert.equal(recordId('ticket-1', 'call_1'), 'oa-790c7dfeccdbbd5524c2a28b377f4c99')
})

test('the successor runs on the redacted packet, and the handoff completes with its output', async () => {
  const store = Store.memory()
  const { triage, billing, billingModel } = agents(store)
  await run(triage, QUESTION)

  const claim = store.claimNext('billing')
  assert.ok(claim)
  const result = await runClaimed(store, billing, claim)
  assert.equal(result.finalOutput, 'Refunded the second charge of order 1042')

  assert.equal(billingModel.calls.length, 1)
  const seen = JSON.stringify(billingModel.calls[0].input)
  assert.match(seen, /Customer was charged twice for order 1042/, 'the goal')
  assert.match(seen, /Check the ledger first/, 'the instructions')
  assert.match(seen, /I was charged twice for order 1042/, 'the transcript')
  assert.ok(!seen.includes(OPENAI_KEY) && !seen.includes(AWS_KEY), seen)
  assert.match(seen, /\[REDACTED:/)

  const done = store.get(claim.handoffId)
  assert.deepEqual([done.status, done.outcome], ['completed', 'Refunded the second charge of order 1042'])
})

test('runClaimed gives the model the store\'s packet: the predecessor\'s findings, the task\'s history, its own transcript', async () => {
  const store = Store.memory()
  // An earlier hop of the task, and what triage found before handing over, on its own branch.
  const earlier = store.create({ taskId: 'ticket-1042', goal: 'Look up the order', fromAgent: 'intake', toAgent: 'triage' })
  store.complete(store.claim(earlier.id, 'triage'), { outcome: 'order 1042 found in the ledger' })
  store.addFacts('task/ticket-1042/triage', ['order 1042 was charged at 09:14 and again at 09:15'])
  const { triage, billing, billingModel } = agents(store)
  await run(triage, QUESTION)

  const claim = store.claimNext('billing', { taskId: 'ticket-1042' })
  assert.equal(claim.handoff.fromAgent, 'triage')
  // Exactly the packet the store builds for the handoff, with the transcript the record carries.
  const expected = store.contextFor(claim.handoffId, { budgetTokens: 4000, transcript: claim.handoff.metadata.transcript }).toMessages('openai_responses')
  await runClaimed(store, billing, claim)
  const input = billingModel.calls[0].input
  assert.deepEqual(input, expected)
  const seen = JSON.stringify(input)
  assert.match(seen, /order 1042 was charged at 09:14 and again at 09:15 \(unverified\)/, 'the predecessor\'s finding')
  assert.match(seen, /Unverified Findings of triage/)
  assert.match(seen, /Agent History/)
  assert.match(seen, /order 1042 found in the ledger/, 'the earlier hop\'s outcome')
  assert.match(seen, /I was charged twice for order 1042/, 'the framework\'s transcript')
  assert.match(seen, /Continue on `task\/ticket-1042\/billing`/)
  assert.ok(!seen.includes(OPENAI_KEY) && !seen.includes(AWS_KEY), seen)
})

test('a record written elsewhere (another language, a claim reference) runs the same way', async () => {
  // As the Python adapter writes it: chat messages in metadata.transcript.
  const store = Store.memory()
  const h = store.create({
    taskId: 'ticket-9', goal: 'Refund order 9', fromAgent: 'triage', toAgent: 'billing', id: recordId('ticket-9', 'call_py'),
    metadata: { adapter: 'openai-agents', call_id: 'call_py', transcript: [{ role: 'user', content: 'Refund order 9 please' }, { role: 'assistant', content: 'Sure' }, 'not a message'] },
  })
  const model = new ScriptedModel([say('{"refund": 9}')])
  const billing = new Agent({ name: 'billing', model, outputType: z.object({ refund: z.number() }) })
  const { handoffId, token, secret, leaseSeconds } = store.claim(h.id, 'billing')
  const result = await runClaimed(store, billing, { handoffId, token, secret, leaseSeconds }, { budgetTokens: 500, context: { user: 'u1' } })
  assert.deepEqual(result.finalOutput, { refund: 9 })
  assert.match(JSON.stringify(model.calls[0].input), /Refund order 9 please/)
  assert.equal(store.get(h.id).outcome, '{"refund":9}', 'a structured output is kept as JSON')
})

test('a failing successor is recorded as a failed attempt and the error propagates', async () => {
  const store = Store.memory()
  const failure = new Error('the ledger is down')
  const { triage, billing } = agents(store, { billingSteps: [failure] })
  await run(triage, QUESTION)
  const claim = store.claimNext('billing')
  await assert.rejects(runClaimed(store, billing, claim), (err) => err === failure)
  const back = store.get(claim.handoffId)
  assert.deepEqual([back.status, back.attempts], ['pending', 1])
  assert.equal(store.events({ handoffId: claim.handoffId }).at(-1).detail.error, 'the ledger is down')

  // On its last attempt the handoff fails for good.
  const last = store.create({ taskId: 't', goal: 'g', toAgent: 'billing', maxAttempts: 1 })
  await assert.rejects(runClaimed(store, agents(store, { billingSteps: [new Error('still down')] }).billing, store.claim(last.id, 'billing')), /still down/)
  assert.deepEqual([store.get(last.id).status, store.get(last.id).outcome], ['failed', 'still down'])
})

test('outcomes: text as it is, anything else as JSON, cut to the field limit', () => {
  assert.equal(outcomeText('done'), 'done')
  assert.equal(outcomeText({ a: [1] }), '{"a":[1]}')
  assert.equal(outcomeText(undefined), 'undefined')
  const cyclic = {}
  cyclic.self = cyclic
  assert.equal(outcomeText(cyclic), '[object Object]')
  const long = outcomeText('é'.repeat(MAX_OUTCOME_BYTES))
  assert.ok(Buffer.byteLength(long) < MAX_OUTCOME_BYTES + 100)
  assert.match(long, /\n\[cut: the output had 120000 bytes\]$/)
  assert.ok(!long.includes('\uFFFD'), 'no half character')
})

test('spans for create, claim and complete carry the shared attribute names', async () => {
  spans.reset()
  const store = instrument(Store.memory())
  assert.notEqual(store, unwrap(store))
  const { triage, billing } = agents(store)
  await run(triage, QUESTION)
  const claim = store.claimNext('billing')
  await runClaimed(store, billing, claim)

  const byName = Object.fromEntries(spans.getFinishedSpans().map((s) => [s.name, s]))
  assert.deepEqual(Object.keys(byName).sort(), ['handoff.claim billing', 'handoff.complete billing', 'handoff.create triage', 'handoff.work billing'])
  // One trace: the record carries its create span's context; the claim and the holder's work
  // continue from it, and the completion is part of the work.
  const created = byName['handoff.create triage'].spanContext()
  const work = byName['handoff.work billing']
  assert.equal(claim.handoff.traceparent, `00-${created.traceId}-${created.spanId}-01`)
  assert.deepEqual(new Set(Object.values(byName).map((s) => s.spanContext().traceId)), new Set([created.traceId]))
  assert.equal(parentId(byName['handoff.claim billing']), created.spanId)
  assert.equal(parentId(work), created.spanId)
  assert.equal(parentId(byName['handoff.complete billing']), work.spanContext().spanId)
  const create = byName['handoff.create triage'].attributes
  assert.deepEqual(create, {
    'gen_ai.operation.name': 'handoff.create',
    'gen_ai.agent.name': 'triage',
    'gen_ai.conversation.id': 'ticket-1042',
    'gen_ai.tool.name': 'transfer_to_billing',
    'gen_ai.tool.call.id': 'call_1',
    'handoff.id': claim.handoffId,
    'handoff.task_id': 'ticket-1042',
    'handoff.from_agent': 'triage',
    'handoff.to_agent': 'billing',
  })
  const claimed = byName['handoff.claim billing'].attributes
  assert.equal(claimed['gen_ai.operation.name'], 'handoff.claim')
  assert.equal(claimed['gen_ai.agent.name'], 'billing')
  assert.equal(claimed['handoff.id'], claim.handoffId)
  assert.equal(claimed['handoff.claim_token'], 1)
  assert.equal(claimed['gen_ai.tool.call.id'], 'call_1')
  const complete = byName['handoff.complete billing'].attributes
  assert.equal(complete['gen_ai.operation.name'], 'handoff.complete')
  assert.equal(complete['handoff.claim_token'], 1)
  assert.equal(complete['gen_ai.conversation.id'], 'ticket-1042')
  assert.equal(complete['handoff.to_agent'], 'billing')
  for (const s of Object.values(byName)) assert.notEqual(s.status.code, SpanStatusCode.ERROR, s.name)
})

test('a failed run gives a fail span; an operation the store refuses gives an error span', async () => {
  spans.reset()
  const store = instrument(Store.memory())
  const billing = new Agent({ name: 'billing', model: new ScriptedModel([new Error('the ledger is down')]) })
  const h = store.create({ taskId: 't', goal: 'Refund order 1042', fromAgent: 'triage', toAgent: 'billing' })
  const claim = store.claim(h.id, 'billing')
  await assert.rejects(runClaimed(store, billing, claim), /the ledger is down/)
  const [failed] = spans.getFinishedSpans().filter((s) => s.name === 'handoff.fail billing')
  assert.equal(failed.attributes['handoff.id'], h.id)
  assert.equal(failed.attributes['error.type'], 'Error')
  // Recording the failure worked: the span of that operation is not itself an error.
  assert.notEqual(failed.status.code, SpanStatusCode.ERROR)

  spans.reset()
  assert.throws(() => store.complete(claim, { outcome: 'late' }), (err) => err.code === 'LEASE_LOST')
  const [refused] = spans.getFinishedSpans()
  assert.equal(refused.name, 'handoff.complete billing')
  assert.equal(refused.status.code, SpanStatusCode.ERROR)
  assert.equal(refused.events[0].name, 'exception')
  await assert.rejects(store.claimAsync('no-such-id', 'billing'), (err) => err.code === 'NOT_FOUND')
  assert.equal(spans.getFinishedSpans().at(-1).status.code, SpanStatusCode.ERROR)
})

test('without @opentelemetry/api the adapter works untraced', () => {
  // A resolve hook that hides the package, as if it were not installed.
  const hide = `data:text/javascript,${encodeURIComponent(`
    import { register } from 'node:module'
    register('data:text/javascript,' + encodeURIComponent(\`
      export async function resolve(specifier, context, next) {
        if (specifier === '@opentelemetry/api') {
          throw Object.assign(new Error('hidden'), { code: 'ERR_MODULE_NOT_FOUND' })
        }
        return next(specifier, context)
      }\`))`)}`
  const script = `
    import { Agent, run, setTracingDisabled, Usage } from '@openai/agents'
    import { Store } from 'handoff-core'
    import { durableHandoff } from 'handoff-core/openai-agents'
    import { instrument, tracingAvailable } from 'handoff-core/tracing'
    setTracingDisabled(true)
    const model = { async getResponse() {
      return { usage: new Usage(), output: [{ type: 'function_call', callId: 'c1', name: 'transfer_to_billing', status: 'completed',
        arguments: JSON.stringify({ reason: 'r', summary: 's', pending: null, instructions: null }) }] } } }
    const store = Store.memory()
    const triage = new Agent({ name: 'triage', model, handoffs: [durableHandoff(store, new Agent({ name: 'billing' }), { fromAgent: 'triage', taskId: 't' })] })
    await run(triage, 'hi')
    console.log(JSON.stringify([tracingAvailable, instrument(store) === store, store.list().length]))
  `
  const out = execFileSync(process.execPath, ['--import', hide, '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' })
  assert.deepEqual(JSON.parse(out), [false, true, 1])
})

test('the .d.ts meets @openai/agents\' own types without a cast (tsc --strict on a fixture)', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  let output = ''
  try {
    // skipLibCheck stays off so that openai-agents.d.ts and tracing.d.ts are checked themselves.
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
      '--moduleResolution', 'nodenext', '--skipLibCheck', 'false', 'test/fixtures/openai-agents.mts'],
    { cwd: root, encoding: 'utf8' })
  } catch (err) {
    output = `${err.stdout ?? ''}${err.stderr ?? ''}`
  }
  // @openai/agents 0.20's own declarations do not pass with the @types/node installed here
  // (their EventEmitter shim): those errors, under node_modules/, are the SDK's; every other is ours.
  const ours = output.split('\n').filter((line) => /^\S.*\(\d+,\d+\): error /.test(line) && !line.startsWith('node_modules/'))
  assert.deepEqual(ours, [], output)
})

test('the transcript keeps what the core reads and leaves out items of unknown kinds', () => {
  const messages = transcript([{ role: 'user', content: `refund me, key ${OPENAI_KEY}` }, { type: 'a_kind_from_a_newer_sdk' }, say('On it')[0]])
  assert.deepEqual(messages, [{ role: 'user', content: 'refund me, key [REDACTED:openai-api-key]' }, { role: 'assistant', content: 'On it' }])
})

test('with server-managed history the SDK refuses the handoff loudly, and nothing is recorded', async () => {
  // The record is written by the handoff's input filter, which the SDK does not allow with
  // previousResponseId / conversationId: the run must fail, not hand off unrecorded.
  const store = Store.memory()
  const { triage } = agents(store)
  await assert.rejects(run(triage, QUESTION, { previousResponseId: 'resp_0' }), /input filters cannot be used with conversationId or previousResponseId/)
  assert.equal(store.list().length, 0)
})
