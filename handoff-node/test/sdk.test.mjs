// Meeting the SDKs as they are (issue 19, item 4): `null` options are left out, a provider's
// response object (a class instance, one with `toJSON`) is read by `detect`, and the tools are
// the shapes `TransferTools` declares in the .d.ts (test/fixtures/usage.ts checks the types).
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { AgentRegistry, ContextBuilder, Store, _catalogJson } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const ARGS = JSON.stringify({ reason: 'refund', summary: 'double charged', pending: null, instructions: null })

function registry() {
  const r = new AgentRegistry()
  r.add('triage', 'routes requests', ['billing'])
  r.add('billing', 'refunds')
  return r
}

test('no argument of the core means by null anything but its absence, so null options may be left out', () => {
  const { operations } = JSON.parse(_catalogJson())
  const nullable = (p) => [p.type ?? []].flat().includes('null') || (p.anyOf ?? p.oneOf ?? []).some((a) => a.type === 'null')
  for (const op of operations) {
    for (const [name, property] of Object.entries(op.arguments.properties ?? {})) {
      if (!nullable(property)) continue
      assert.ok(property.default === undefined || property.default === null,
        `${op.name}.${name} defaults to ${JSON.stringify(property.default)} but takes null: null would not be its absence`)
    }
  }
})

test('every optional create option takes null, as from JSON or an SDK: the same record as leaving it out', async () => {
  const store = Store.memory()
  const nulls = {
    fromAgent: null, toAgent: null, kind: null, reason: null, contextPct: null, timeoutSeconds: null, progress: null,
    completed: null, pending: null, decisions: null, assumptions: null, warnings: null, errors: null, files: null,
    instructions: null, metadata: null, parentId: null, sessionId: null, blockers: null, lockedFiles: null,
    priorityItems: null, successCriteria: null, expiresAt: null, maxAttempts: null,
  }
  const withNulls = store.create({ taskId: 't', goal: 'g', id: 'h1', ...nulls })
  const plain = Store.memory().create({ taskId: 't', goal: 'g', id: 'h1' })
  const data = ({ createdAt, updatedAt, ...rest }) => rest
  assert.deepEqual(data(withNulls), data(plain))
  const async = await store.createAsync({ taskId: 't', goal: 'g2', ...nulls })
  assert.deepEqual(async.completedSteps, [])
  // A list of records (createMany's items, a plan's steps) reads its objects as options too.
  const many = store.createMany([{ taskId: 't', goal: 'g3', toAgent: null, completed: null }])
  assert.equal(many[0].toAgent, null)
  const task = store.createTask({ name: 'n', goal: 'g', steps: [{ id: 'a', name: 'A', agent: 'x', dependencies: null, instructions: null }], successCriteria: null, orchestrator: null })
  assert.deepEqual(task.steps[0].dependencies, [])
  // The other options objects alike.
  assert.equal(store.list({ status: null, taskId: null, toAgent: null, limit: null }).length, 3)
  const claim = store.claimNext('b', { taskId: null, leaseSeconds: null, waitSeconds: null })
  assert.ok(claim)
  store.heartbeat({ handoffId: claim.handoffId, token: claim.token, secret: claim.secret, leaseSeconds: null })
  store.complete(claim, { outcome: null })
  store.addFacts('main', [{ text: 'x', confidence: null, source: null }])
  assert.equal(registry().detect({ choices: [] }, 'triage', { multiple: null }), null)
})

test('null does not hide a misspelt option or a wrong value', async () => {
  const store = Store.memory()
  const err = await bothFail(() => store.create({ taskId: 't', goal: 'g', to_agent: null }), () => store.createAsync({ taskId: 't', goal: 'g', to_agent: null }))
  assert.deepEqual(err.problems.map((p) => p.field), ['to_agent'])
  // An option given as null is missing: a goal, which a task with no goal to lend needs.
  const missing = await bothFail(() => store.create({ taskId: 't', goal: null }), () => store.createAsync({ taskId: 't', goal: null }))
  assert.deepEqual(missing.problems.map((p) => p.field), ['goal'])
  assert.ok(missing.problems[0].rule.startsWith('is required'), missing.problems[0].rule)
  // Inside a value, null stays null: metadata keeps it.
  assert.deepEqual(store.create({ taskId: 't', goal: 'g', metadata: { a: null } }).metadata, { a: null })
})

/** A Chat Completion as the OpenAI SDK's client returns it: a class instance, not a plain object. */
class ChatCompletion {
  constructor(name) {
    this.id = 'chatcmpl-1'
    this.object = 'chat.completion'
    this.choices = [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: ARGS } }] } }]
  }

  get firstMessage() { return this.choices[0].message } // a getter of the prototype: not data
}

/** A message that keeps its data private and gives it through `toJSON` (as LangChain's do). */
class Serializable {
  #data
  constructor(data) { this.#data = data }
  toJSON() { return this.#data }
}

test('detect reads an SDK\'s class instance as JSON.stringify does: own properties, or toJSON()', () => {
  const r = registry()
  const intent = r.detect(new ChatCompletion('transfer_to_billing'), 'triage')
  assert.equal(intent?.target, 'billing')
  assert.equal(intent?.callId, 'call_1')
  // Whole, in a list, or nested: each toJSON() is called once, its result read as data.
  const anthropic = { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'transfer_to_billing', input: JSON.parse(ARGS) }] }
  assert.equal(r.detect(new Serializable(anthropic), 'triage')?.callId, 'toolu_1')
  assert.equal(r.detect([new Serializable(anthropic.content[0])], 'triage')?.callId, 'toolu_1')
  assert.equal(r.detect({ ...anthropic, content: [new Serializable(anthropic.content[0])] }, 'triage')?.target, 'billing')
  assert.equal(r.detect(new Serializable(JSON.stringify(anthropic)), 'triage')?.target, 'billing')
  assert.deepEqual(JSON.parse(JSON.stringify(new ChatCompletion('x'))).choices, new ChatCompletion('x').choices)
  // A toJSON that throws: its error, unchanged.
  assert.throws(() => r.detect({ toJSON() { throw new RangeError('no') } }, 'triage'), RangeError)
  // And the messages a context builder takes.
  const b = new ContextBuilder()
  b.addMessages([new Serializable({ role: 'user', content: 'hello' })])
  assert.match(JSON.stringify(b.build().toMessages('openai_chat')), /hello/)
})

test('the tools are exactly the shapes the .d.ts declares (TransferTools)', () => {
  const r = registry()
  const parameters = (p) => {
    assert.deepEqual(Object.keys(p).sort(), ['additionalProperties', 'properties', 'required', 'type'])
    assert.equal(p.type, 'object')
    assert.equal(p.additionalProperties, false)
    assert.deepEqual(p.required, ['reason', 'summary', 'pending', 'instructions'])
    const { reason, summary, pending, instructions } = p.properties
    assert.deepEqual(Object.keys(p.properties), ['reason', 'summary', 'pending', 'instructions'])
    assert.deepEqual([reason.type, summary.type, pending.type, pending.items, instructions.type],
      ['string', 'string', ['array', 'null'], { type: 'string' }, ['string', 'null']])
    for (const property of [reason, summary, pending, instructions]) assert.equal(typeof property.description, 'string')
  }
  const [chat] = r.tools('triage', 'openai_chat')
  assert.deepEqual(Object.keys(chat).sort(), ['function', 'type'])
  assert.equal(chat.type, 'function')
  assert.deepEqual(Object.keys(chat.function).sort(), ['description', 'name', 'parameters', 'strict'])
  assert.equal(chat.function.strict, true)
  parameters(chat.function.parameters)
  const [responses] = r.tools('triage', 'openai_responses')
  assert.deepEqual(Object.keys(responses).sort(), ['description', 'name', 'parameters', 'strict', 'type'])
  assert.equal(responses.type, 'function')
  assert.equal(responses.strict, true)
  parameters(responses.parameters)
  const [anthropic] = r.tools('triage', 'anthropic')
  assert.deepEqual(Object.keys(anthropic).sort(), ['description', 'input_schema', 'name'])
  parameters(anthropic.input_schema)
  const [mcp] = r.tools('triage', 'mcp')
  assert.deepEqual(Object.keys(mcp).sort(), ['description', 'inputSchema', 'name'])
  parameters(mcp.inputSchema)
  for (const tool of [chat.function, responses, anthropic, mcp]) {
    assert.equal(tool.name, 'transfer_to_billing')
    assert.equal(typeof tool.description, 'string')
  }
})
