// The context builder and redaction, as the core builds them, in the JavaScript shapes.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { ContextBuilder, Store, redact } from '../index.mjs'

const KEY = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t'

test('a packet within the budget, secrets redacted, every item accounted for', () => {
  const h = Store.memory().create({ taskId: 't', goal: 'Ship the parser', pending: ['tests'], instructions: 'go' })
  const b = new ContextBuilder({ budgetTokens: 200 })
  b.addHandoff(h)
  b.addFacts([`the CI key is ${KEY}`])
  b.addMessages([
    { role: 'user', content: 'please continue', at: '2026-01-01T00:00:00Z' },
    { role: 'assistant', content: 'on it', at: new Date('2026-01-01T00:01:00Z'), toolCalls: [{ name: 'x' }], id: 'm-2', priority: 60 },
  ])
  b.addItem('x'.repeat(4000), { priority: 1 })
  const p = b.build()
  assert.ok(p.tokens <= 200)
  assert.equal(p.budget, 200)
  assert.match(p.markdown, /\[REDACTED:openai-api-key\]/)
  assert.doesNotMatch(p.markdown, new RegExp(KEY))
  assert.match(p.markdown, /Ship the parser/)
  assert.ok(p.manifest.redacted.some((r) => r.rule === 'openai-api-key' && r.count === 1))
  assert.equal(p.unit, 'tokens')
  const { included, truncated, summarized, dropped } = p.manifest
  const accounted = new Set([...included, ...[...truncated, ...summarized, ...dropped].map((d) => d.id)])
  for (const s of p.sections) assert.ok(accounted.has(s.id), s.id)
  // The 4,000-character note does not fit whole: it is cut to the room left, and says so.
  const cut = truncated.find((t) => t.id.startsWith('item-'))
  assert.ok(cut && cut.keptTokens < cut.originalTokens, JSON.stringify(p.manifest))
  assert.match(p.sections.find((s) => s.id === cut.id).text, /… \[truncated\]$/)
  assert.ok(Array.isArray(p.messages))
  const wire = JSON.parse(p.json)
  assert.equal(wire.tokens, p.tokens)
  assert.deepEqual(wire.manifest.included, p.manifest.included)
  // Deterministic: the same input gives the same packet.
  assert.deepEqual(b.build(), p)
  // redact: false keeps the text.
  const plain = new ContextBuilder({ redact: false })
  plain.addFacts([`key ${KEY}`])
  assert.match(plain.build().markdown, new RegExp(KEY))
})

test('redact() returns the clean text and JavaScript string offsets', () => {
  const text = `héllo ✓ ${KEY} end`
  const { text: clean, redactions } = redact(text)
  assert.equal(clean, 'héllo ✓ [REDACTED:openai-api-key] end')
  assert.equal(redactions.length, 1)
  assert.equal(redactions[0].rule, 'openai-api-key')
  assert.equal(text.slice(redactions[0].start, redactions[0].end), KEY)
  assert.deepEqual(redact('nothing here'), { text: 'nothing here', redactions: [] })
})

test('users add their own redaction rules, to redact() and to the builder', () => {
  const rules = [{ id: 'ticket', pattern: '\\b(TCK-\\d{6})\\b', keywords: ['tck-'] }]
  const text = `see TCK-123456 and ${KEY}`
  const { text: clean, redactions } = redact(text, { rules })
  assert.equal(clean, 'see [REDACTED:ticket] and [REDACTED:openai-api-key]')
  assert.deepEqual(redactions.map((r) => r.rule), ['ticket', 'openai-api-key'])
  assert.equal(redact(text).text.includes('TCK-123456'), true, 'the built-in rules alone do not know it')
  const b = new ContextBuilder({ rules })
  b.addFacts([text])
  const packet = b.build()
  assert.ok(!packet.markdown.includes('TCK-123456'))
  assert.deepEqual(packet.manifest.redacted.map((r) => r.rule).sort(), ['openai-api-key', 'ticket'])
  assert.throws(() => redact('x', { rules: [{ id: 'Bad Id', pattern: 'x' }] }),
    (e) => e.code === 'VALIDATION' && e.problems[0].field === 'rules[0].id')
  assert.throws(() => redact('x', { rules: [{ id: 'ok', pattern: '(' }] }),
    (e) => e.code === 'VALIDATION' && e.problems[0].field === 'rules[0].pattern')
  assert.throws(() => new ContextBuilder({ redact: false, rules }),
    (e) => e.code === 'VALIDATION' && e.problems[0].field === 'rules')
})

test('bad input to the builder is VALIDATION naming the field', () => {
  assert.throws(() => new ContextBuilder({ budgetTokens: -1 }), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'budgetTokens')
  assert.throws(() => new ContextBuilder({ nope: 1 }), { code: 'VALIDATION' })
  const b = new ContextBuilder()
  assert.throws(() => b.addFacts('x'), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'facts')
  assert.throws(() => b.addFacts([1]), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'facts[0]')
  assert.throws(() => b.addMessages([{ role: 'user' }]), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'messages[0].content')
  assert.throws(() => b.addMessages([{ role: 'user', content: 'x', at: 'later' }]), (e) => e.problems[0].field === 'messages[0].at')
  assert.throws(() => b.addItem(5), (e) => e.problems[0].field === 'text')
  assert.throws(() => b.addItem('x', { priority: 'high' }), (e) => e.problems[0].field === 'priority')
  assert.throws(() => b.addHandoff({ goal: 'g' }), { code: 'VALIDATION' })
  assert.throws(() => redact(undefined), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'text')
})
