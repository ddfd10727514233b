// The agent registry and the context builder read their arguments with the core's argument
// types (`ops::AgentArgs`, `ToolsArgs`, `DetectArgs`, `ContextArgs`, `ContextItemArgs`): bad
// input reports the fields and rules the core reports, the fields in camelCase.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { AgentRegistry, ContextBuilder, _coreProblems } from '../index.mjs'

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
/** What the core finds in `args` (its names) for argument type `kind`, named the Node way. */
const core = (kind, args) => JSON.parse(_coreProblems(kind, JSON.stringify(args)))
  .map(({ field, rule }) => ({ field: camel(field), rule }))
/** The problems `call` throws, as plain `{field, rule}`. */
function problems(call) {
  try {
    call()
  } catch (err) {
    assert.equal(err.code, 'VALIDATION', err.message)
    return err.problems.map(({ field, rule }) => ({ field, rule }))
  }
  assert.fail('the call must throw')
}

test('a bad add reports what the core reports', () => {
  const r = new AgentRegistry()
  const cases = [
    [[' padded name'], { name: ' padded name', description: '' }],
    [['x', 'd', ['ok', 'not\nok', ' ']], { name: 'x', description: 'd', collaborators: ['ok', 'not\nok', ' '] }],
    [['x', 5], { name: 'x', description: 5 }],
    [[7, 'd', 'billing'], { name: 7, description: 'd', collaborators: 'billing' }],
    [[undefined, 'd'], { description: 'd' }],
  ]
  for (const [args, snake] of cases) {
    const expected = core('agent', snake)
    assert.ok(expected.length > 0, JSON.stringify(snake))
    assert.deepEqual(problems(() => r.add(...args)), expected, JSON.stringify(snake))
  }
  const [name] = core('agent', { name: ' padded name', description: '' })
  assert.equal(name.field, 'name')
  assert.match(name.rule, /no space at either end/)
  assert.deepEqual(problems(() => r.add('x', 'd', ['ok', 'not\nok'])).map((p) => p.field), ['collaborators[1]'])
  // Left out, the description is empty and the collaborators everyone else.
  r.add('billing')
  assert.deepEqual(r.agents(), [{ name: 'billing', description: '', collaborators: null }])
})

test('a bad tools call reports what the core reports', () => {
  const r = new AgentRegistry()
  r.add('triage', 'routes')
  for (const [args, snake] of [
    [['triage', 'gemini'], { agent: 'triage', provider: 'gemini' }],
    [[5, 'mcp'], { agent: 5, provider: 'mcp' }],
    [[null, 3], { agent: null, provider: 3 }],
  ]) {
    const expected = core('tools', snake)
    assert.ok(expected.length > 0, JSON.stringify(snake))
    assert.deepEqual(problems(() => r.tools(...args)), expected, JSON.stringify(snake))
  }
})

test('detect reads multiple as the core does, the alias first included', () => {
  const r = new AgentRegistry()
  r.add('triage', 'routes')
  r.add('billing', 'money')
  const block = { type: 'tool_use', id: 't', name: 'transfer_to_billing', input: {} }
  for (const multiple of ['first_wins', 'first']) {
    assert.equal(r.detect([block, { ...block, id: 'u' }], 'triage', { multiple }).target, 'billing')
    assert.equal(r.detect(JSON.stringify([block, { ...block, id: 'u' }]), 'triage', { multiple }).target, 'billing')
  }
  const snake = { response: [], from_agent: 'triage', multiple: 'all' }
  assert.deepEqual(problems(() => r.detect([], 'triage', { multiple: 'all' })), core('detect', snake))
  assert.deepEqual(problems(() => r.detect([], 5)), core('detect', { response: [], from_agent: 5 }))
  assert.deepEqual(problems(() => r.detect([], 'triage', { fromAgent: 'x' })).map((p) => p.field), ['fromAgent'])
})

test('a bad builder or addItem reports what the core reports', () => {
  for (const [options, snake] of [
    [{ budgetTokens: -1 }, { budget_tokens: -1 }],
    [{ budgetTokens: 1.5, redact: 'no' }, { budget_tokens: 1.5, redact: 'no' }],
  ]) {
    const expected = core('context', snake)
    assert.ok(expected.length > 0, JSON.stringify(snake))
    assert.deepEqual(problems(() => new ContextBuilder(options)), expected, JSON.stringify(snake))
  }
  // `rules` is Node's own option; its problems come with the core's.
  assert.deepEqual(problems(() => new ContextBuilder({ budgetTokens: -1, rules: [{ id: 'x' }] })).map((p) => p.field),
    ['budgetTokens', 'rules[0].pattern'])
  const b = new ContextBuilder()
  for (const [args, snake] of [
    [[5], { text: 5, priority: 50 }],
    [['x', { priority: 'high' }], { text: 'x', priority: 'high' }],
    [['x', { at: 'later' }], { text: 'x', priority: 50, at: 'later' }],
    [['x', { priority: 2.5, nope: 1 }], { text: 'x', priority: 2.5, nope: 1 }],
  ]) {
    const expected = core('context_item', snake)
    assert.ok(expected.length > 0, JSON.stringify(snake))
    assert.deepEqual(problems(() => b.addItem(...args)), expected, JSON.stringify(snake))
  }
  // Left out, the priority is 50 (kept before 10 when the budget is short); a Date is a time.
  const short = new ContextBuilder({ budgetTokens: 12 })
  short.addItem('low '.repeat(8), { priority: 10 })
  short.addItem('dflt '.repeat(7), { at: new Date('2026-01-01T00:00:00Z') })
  const { manifest } = short.build()
  assert.deepEqual(manifest.included, ['item-1'])
  assert.deepEqual(manifest.dropped.map((d) => d.id), ['item-0'])
})
