// The agent registry: provider tool JSON, the policy it implies, and the detector.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { AgentRegistry, Store } from '../index.mjs'

const ARGS = JSON.stringify({ reason: 'refund request', summary: 'customer 42 was double charged', pending: ['refund the second charge'], instructions: null })
const chat = (calls) => ({
  id: 'chatcmpl-1', object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: calls }, finish_reason: 'tool_calls' }],
})
const call = (id, name, args = ARGS) => ({ id, type: 'function', function: { name, arguments: args } })

function registry() {
  const r = new AgentRegistry()
  r.add('triage', 'routes requests', ['billing', 'sales'])
  r.add('billing', 'refunds and invoices')
  r.add('sales')
  return r
}

test('tools are each provider\'s JSON, named transfer_to_<agent>', () => {
  const r = registry()
  assert.deepEqual(r.agents().map((a) => [a.name, a.collaborators]), [['triage', ['billing', 'sales']], ['billing', null], ['sales', null]])
  const openai = r.tools('triage', 'openai_chat')
  assert.deepEqual(openai.map((t) => t.function.name), ['transfer_to_billing', 'transfer_to_sales'])
  assert.equal(openai[0].type, 'function')
  assert.equal(openai[0].function.strict, true)
  assert.equal(openai[0].function.parameters.additionalProperties, false)
  assert.equal(r.tools('triage', 'openai_responses')[0].name, 'transfer_to_billing')
  assert.ok(r.tools('triage', 'anthropic')[0].input_schema)
  assert.ok(r.tools('triage', 'mcp')[0].inputSchema)
  assert.equal(r.tools('sales', 'mcp').length, 2)
  assert.throws(() => r.tools('triage', 'gemini'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'provider')
  assert.throws(() => r.tools('nobody', 'mcp'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'agent')
})

test('detect reads an intent from an object or JSON text', () => {
  const r = registry()
  const response = chat([call('call_abc123', 'transfer_to_billing')])
  const intent = r.detect(response, 'triage')
  assert.deepEqual(intent, {
    target: 'billing', callId: 'call_abc123', tool: 'transfer_to_billing',
    arguments: { reason: 'refund request', summary: 'customer 42 was double charged', pending: ['refund the second charge'], instructions: null },
  })
  assert.deepEqual(r.detect(JSON.stringify(response), 'triage'), intent)
  assert.equal(r.detect({ choices: [{ message: { role: 'assistant', content: 'Hello!' } }] }, 'triage'), null)
  const two = chat([call('a', 'transfer_to_billing'), call('b', 'transfer_to_sales')])
  assert.throws(() => r.detect(two, 'triage'), { code: 'VALIDATION' })
  assert.equal(r.detect(two, 'triage', { multiple: 'first_wins' }).target, 'billing')
  assert.throws(() => r.detect(chat([call('c', 'transfer_to_billing', '{not json')]), 'triage'), { code: 'VALIDATION' })
  assert.throws(() => r.detect(chat([call('c', 'transfer_to_nobody')]), 'triage'), { code: 'VALIDATION' })
  assert.throws(() => r.detect('{', 'triage'), { code: 'VALIDATION' })
  assert.throws(() => r.detect(42, 'triage'), { code: 'VALIDATION' })
  assert.throws(() => r.detect(response, 'triage', { multiple: 'all' }), (e) => e.problems[0].field === 'multiple')
})

test('the registry\'s policy guards a store', () => {
  const r = registry()
  const policy = r.policy()
  assert.deepEqual(policy.collaborators.triage, ['billing', 'sales'])
  const store = Store.memory({ policy })
  store.create({ taskId: 't', goal: 'g', fromAgent: 'triage', toAgent: 'billing' })
  assert.throws(() => store.create({ taskId: 'u', goal: 'g', fromAgent: 'triage', toAgent: 'triage' }), { code: 'CHAIN_VIOLATION' })
  assert.throws(() => r.add(' padded name'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'name')
  assert.throws(() => r.add('x', 'd', ['ok', 'not\nok']), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'collaborators[1]')
  assert.throws(() => r.add('x', 5), (e) => e.problems[0].field === 'description')
})
