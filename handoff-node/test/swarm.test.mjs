// A swarm as SDK users name it: display names through registry → tools → detect →
// toCreateOptions → create → claimNext; agents from Markdown files; the shapes the detector
// reads (LangChain, lone blocks) and refuses.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { AgentRegistry, Store, open } from '../index.mjs'

const AGENT_RULE = 'must be 1 to 128 printable characters, with no control, bidirectional or zero-width characters and no space at either end'
const ARGS = { reason: 'VPN drops', summary: 'customer 42 cannot connect', pending: ['check the logs'], instructions: 'be kind' }
const chat = (name, args = ARGS, id = 'call_1') => ({
  id: 'chatcmpl-1', object: 'chat.completion',
  choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] } }],
})

function swarm() {
  const r = new AgentRegistry()
  r.add('Triage', 'routes requests', ['Tech Support', 'Billing agent'])
  r.add('Tech Support', 'fixes setups', ['Billing agent'])
  r.add('Billing agent', 'refunds and invoices', [])
  return r
}

test('display names: registry → tools → detect → toCreateOptions → create → claimNext', async () => {
  const r = swarm()
  assert.deepEqual(r.tools('Triage', 'openai_chat').map((t) => t.function.name), ['transfer_to_tech_support', 'transfer_to_billing_agent'])
  assert.deepEqual(r.tools('Triage', 'anthropic').map((t) => t.name), ['transfer_to_tech_support', 'transfer_to_billing_agent'])
  const intent = r.detect(chat('transfer_to_tech_support'), 'Triage')
  assert.deepEqual(intent, { target: 'Tech Support', tool: 'transfer_to_tech_support', callId: 'call_1', arguments: ARGS })
  for (const s of [Store.memory({ policy: r.policy() }), open(':memory:', { policy: r.policy() })]) {
    const options = intent.toCreateOptions('T-1', 'Triage', 'Fix the VPN')
    assert.deepEqual(options, {
      taskId: 'T-1', goal: 'Fix the VPN', fromAgent: 'Triage', toAgent: 'Tech Support',
      progress: ARGS.summary, pending: ARGS.pending, instructions: 'be kind',
      metadata: { handoff_reason: 'VPN drops', call_id: 'call_1' },
    })
    const h = s.create(options)
    assert.equal(h.toAgent, 'Tech Support')
    assert.deepEqual(s.list({ toAgent: 'Tech Support' }).map((x) => x.id), [h.id])
    assert.equal(s.claimNext('Billing agent'), null)
    const claim = await s.claimNextAsync('Tech Support')
    assert.equal(claim.handoff.id, h.id)
    assert.equal(claim.handoff.claimedBy, 'Tech Support')
    // Tech Support hands on to Billing agent, as the registry allows.
    const next = r.detect(chat('transfer_to_billing_agent', { reason: 'refund' }, 'call_2'), 'Tech Support')
    const h2 = s.create({ ...next.toCreateOptions('T-1', 'Tech Support', 'Refund the month'), parentId: h.id })
    assert.equal(s.claimNext('Billing agent').handoff.id, h2.id)
    assert.equal(s.complete(claim, { outcome: 'fixed' }).status, 'completed')
    assert.equal(s.chain('T-1').text, 'Triage → Tech Support → Billing agent')
  }
})

test('toCreateOptions is a method JSON does not see, and checks its arguments', () => {
  const intent = swarm().detect(chat('transfer_to_billing_agent', { reason: 'refund' }), 'Triage')
  assert.deepEqual(Object.keys(intent).sort(), ['arguments', 'callId', 'target', 'tool'])
  assert.deepEqual(JSON.parse(JSON.stringify(intent)), { target: 'Billing agent', tool: 'transfer_to_billing_agent', callId: 'call_1', arguments: { reason: 'refund' } })
  assert.equal(typeof intent.toCreateOptions, 'function')
  // Only what differs from create's defaults: no progress, pending or instructions here.
  assert.deepEqual(intent.toCreateOptions('T', 'Triage', 'g'), {
    taskId: 'T', goal: 'g', fromAgent: 'Triage', toAgent: 'Billing agent', metadata: { handoff_reason: 'refund', call_id: 'call_1' },
  })
  assert.throws(() => intent.toCreateOptions('T', 'Triage'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'goal')
  assert.throws(() => intent.toCreateOptions(1, 'Triage', 'g'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'taskId')
  // The store checks the result like any options.
  assert.throws(() => Store.memory().create(intent.toCreateOptions('has space', 'Triage', 'g')), (e) => e.problems[0].field === 'taskId')
})

test('bad agent names get the core\'s problem, wherever they are given', async () => {
  const r = new AgentRegistry()
  const names = [' padded', 'trailing ', '', 'tab\there', 'x'.repeat(129)]
  for (const name of names) {
    assert.throws(() => r.add(name), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'name' && e.problems[0].rule === AGENT_RULE, JSON.stringify(name))
  }
  assert.throws(() => r.add('ok', '', ['Tech Support', 'new\nline']), (e) => e.problems[0].field === 'collaborators[1]' && e.problems[0].rule === AGENT_RULE)
  r.add('x'.repeat(128))
  r.add('Ünïcödé agent ✓')
  const s = Store.memory()
  for (const [options, field] of [
    [{ taskId: 't', goal: 'g', fromAgent: 'bell\u0007' }, 'fromAgent'],
    [{ taskId: 't', goal: 'g', toAgent: ' Tech Support' }, 'toAgent'],
  ]) {
    assert.throws(() => s.create(options), (e) => e.code === 'VALIDATION' && e.problems[0].field === field && e.problems[0].rule === AGENT_RULE)
  }
  const h = s.create({ taskId: 't', goal: 'g', fromAgent: 'Triage' })
  for (const call of [() => s.claim(h.id, 'x\ny'), () => s.claimNext(''), () => s.reject(h.id, ' Billing', { reason: 'no' })]) {
    assert.throws(call, (e) => e.code === 'VALIDATION' && e.problems[0].field === 'agent' && e.problems[0].rule === AGENT_RULE)
  }
  assert.throws(() => s.cancel(h.id, 'by\r'), (e) => e.problems[0].field === 'by' && e.problems[0].rule === AGENT_RULE)
  assert.throws(() => s.list({ toAgent: '\u0000' }), (e) => e.problems[0].field === 'toAgent')
  await assert.rejects(s.claimNextAsync(' x'), (e) => e.problems[0].field === 'agent')
})

test('AgentRegistry.fromMarkdownDir reads agents and their ## Collaborations', () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-agents-'))
  writeFileSync(join(dir, 'tech-support.md'), '---\nname: Tech Support\ndescription: Fixes customer setups\n---\n# Support desk\n\n## Collaborations\n- **Billing agent**: refunds\n')
  writeFileSync(join(dir, 'billing.md'), '# Billing agent\n\nRefunds and\ninvoices.\n\n## Collaborations\n- [Tech Support](tech-support.md) — when it is technical\n\n## Tools\n- stripe\n')
  writeFileSync(join(dir, 'triage.md'), '# Triage\n\nRoutes requests.\n\n## Collaborations\n- Tech Support\n- Billing agent (money)\n')
  writeFileSync(join(dir, 'notes.txt'), '# Not an agent\n')
  const r = AgentRegistry.fromMarkdownDir(dir)
  assert.ok(r instanceof AgentRegistry)
  assert.deepEqual(r.agents(), [
    { name: 'Billing agent', description: 'Refunds and invoices.', collaborators: ['Tech Support'] },
    { name: 'Tech Support', description: 'Fixes customer setups', collaborators: ['Billing agent'] },
    { name: 'Triage', description: 'Routes requests.', collaborators: ['Tech Support', 'Billing agent'] },
  ])
  // Targets come in the registry's order: the files' order.
  assert.deepEqual(r.tools('Triage', 'openai_responses').map((t) => t.name), ['transfer_to_billing_agent', 'transfer_to_tech_support'])
  assert.equal(r.detect(chat('transfer_to_billing_agent'), 'Tech Support').target, 'Billing agent')
  const s = Store.memory({ policy: r.policy() })
  assert.throws(() => s.create({ taskId: 't', goal: 'g', fromAgent: 'Billing agent', toAgent: 'Triage' }), { code: 'CHAIN_VIOLATION' })

  assert.throws(() => AgentRegistry.fromMarkdownDir(join(dir, 'missing')), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'path')
  assert.throws(() => AgentRegistry.fromMarkdownDir(42), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'path')
  const bad = mkdtempSync(join(tmpdir(), 'handoff-agents-'))
  writeFileSync(join(bad, 'bad_agent.md'), '---\nname: bell\u0007\n---\n')
  assert.throws(() => AgentRegistry.fromMarkdownDir(bad), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'bad_agent.name' && e.problems[0].rule === AGENT_RULE)
  writeFileSync(join(bad, 'bad_agent.md'), '# Twin\n')
  writeFileSync(join(bad, 'other.md'), '# Twin\n')
  assert.throws(() => AgentRegistry.fromMarkdownDir(bad), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'other.name')
})

test('detect reads LangChain messages and lone blocks, refuses unknown shapes', () => {
  const r = swarm()
  const toolCall = { name: 'transfer_to_tech_support', args: ARGS, id: 'call_lc', type: 'tool_call' }
  // A LangChain AIMessage as a dict (`message.model_dump()` / `.dict()`).
  const aiMessage = { type: 'ai', content: '', tool_calls: [toolCall], invalid_tool_calls: [], additional_kwargs: {}, response_metadata: {}, id: 'run-1' }
  const lc = r.detect(aiMessage, 'Triage')
  assert.deepEqual(lc, { target: 'Tech Support', tool: 'transfer_to_tech_support', callId: 'call_lc', arguments: ARGS })
  assert.deepEqual(r.detect(JSON.stringify(aiMessage), 'Triage'), lc)
  // The same message serialised by langchain_core.load.dumpd.
  const dumped = { lc: 1, type: 'constructor', id: ['langchain', 'schema', 'messages', 'AIMessage'], kwargs: { content: '', type: 'ai', tool_calls: [toolCall] } }
  assert.equal(r.detect(dumped, 'Triage').target, 'Tech Support')
  // A lone Anthropic tool_use block, and a list of blocks.
  const block = { type: 'tool_use', id: 'toolu_1', name: 'transfer_to_billing_agent', input: { reason: 'refund' } }
  assert.deepEqual(r.detect(block, 'Triage'), { target: 'Billing agent', tool: 'transfer_to_billing_agent', callId: 'toolu_1', arguments: { reason: 'refund' } })
  assert.equal(r.detect([{ type: 'text', text: 'Passing you on.' }, block], 'Triage').target, 'Billing agent')
  // Known shapes with no handoff: null.
  for (const none of [
    { type: 'ai', content: 'Hello!', tool_calls: [] },
    { role: 'assistant', content: 'Hello!' },
    { type: 'text', text: 'Hello!' },
    { content: [{ type: 'text', text: 'Hello!' }], role: 'assistant' },
    { type: 'tool_use', id: 'toolu_2', name: 'search', input: { q: 'x' } },
  ]) {
    assert.equal(r.detect(none, 'Triage'), null, JSON.stringify(none))
  }
  // Shapes it cannot read: VALIDATION, never a silent null.
  for (const unknown of [{ foo: 1 }, {}, '{"foo": 1}', [1, 2]]) {
    assert.throws(() => r.detect(unknown, 'Triage'), (e) => e.code === 'VALIDATION', JSON.stringify(unknown))
  }
  assert.throws(() => r.detect({ foo: 1 }, 'Triage'), (e) => e.problems[0].field === 'response' && /not a provider response/.test(e.problems[0].rule))
})

test('multiple: first_wins (canonical) and first (alias)', () => {
  const r = swarm()
  const two = chat('transfer_to_tech_support')
  two.choices[0].message.tool_calls.push({ id: 'call_2', type: 'function', function: { name: 'transfer_to_billing_agent', arguments: '{}' } })
  assert.throws(() => r.detect(two, 'Triage'), { code: 'VALIDATION' })
  assert.throws(() => r.detect(two, 'Triage', { multiple: 'error' }), { code: 'VALIDATION' })
  assert.equal(r.detect(two, 'Triage', { multiple: 'first_wins' }).target, 'Tech Support')
  assert.equal(r.detect(two, 'Triage', { multiple: 'first' }).target, 'Tech Support')
  assert.throws(() => r.detect(two, 'Triage', { multiple: 'all' }), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'multiple')
})
