// Messages in every provider's shape go in; packet.toMessages(provider) gives input each provider
// accepts: tool calls paired with their results, roles alternating for Anthropic, nothing empty.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { ContextBuilder } from '../index.mjs'

const PROVIDERS = ['openai_chat', 'openai_responses', 'anthropic']
const KEY = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t'

function build (messages, { budgetTokens = 4000, facts } = {}) {
  const b = new ContextBuilder({ budgetTokens })
  if (facts) b.addFacts(facts)
  b.addMessages(messages)
  return b.build()
}

const blank = (s) => typeof s !== 'string' || s.trim() === ''

function checkChat (out) {
  for (let i = 0; i < out.length;) {
    const m = out[i]
    assert.notEqual(m.role, 'tool', `[${i}] a result without its call right before it`)
    if (m.tool_calls) {
      const ids = m.tool_calls.map((c) => c.id)
      const results = out.slice(i + 1, i + 1 + ids.length)
      assert.deepEqual(results.map((r) => r.role), ids.map(() => 'tool'))
      assert.deepEqual(results.map((r) => r.tool_call_id).sort(), [...ids].sort())
      for (const c of m.tool_calls) assert.equal(typeof JSON.parse(c.function.arguments), 'object')
      i += ids.length + 1
    } else {
      assert.ok(['system', 'user', 'assistant'].includes(m.role) && !blank(m.content), JSON.stringify(m))
      i += 1
    }
  }
}

function checkResponses (out) {
  for (let i = 0; i < out.length;) {
    assert.notEqual(out[i].type, 'function_call_output', `[${i}] an output without its call`)
    if (out[i].type === 'function_call') {
      const ids = []
      while (out[i]?.type === 'function_call') ids.push(out[i++].call_id)
      const outputs = out.slice(i, i + ids.length)
      assert.deepEqual(outputs.map((o) => [o.type, o.call_id]), ids.map((id) => ['function_call_output', id]))
      i += ids.length
    } else {
      assert.ok(!blank(out[i].content), JSON.stringify(out[i]))
      i += 1
    }
  }
}

function checkAnthropic (out) {
  let asked = []
  out.forEach((m, i) => {
    assert.equal(m.role, i % 2 === 0 ? 'user' : 'assistant', `[${i}] roles alternate from user`)
    assert.ok(m.content.length > 0)
    const results = m.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id)
    assert.deepEqual(m.content.slice(0, results.length).map((b) => b.type), results.map(() => 'tool_result'))
    assert.deepEqual(results, asked)
    for (const b of m.content) if (b.type === 'text') assert.ok(!blank(b.text))
    asked = m.content.filter((b) => b.type === 'tool_use').map((b) => b.id)
    for (const id of asked) assert.match(id, /^[a-zA-Z0-9_-]+$/)
  })
  assert.deepEqual(asked, [], 'a tool_use at the end has no result')
}

const CHECKS = { openai_chat: checkChat, openai_responses: checkResponses, anthropic: checkAnthropic }

function checkAll (packet) {
  for (const provider of PROVIDERS) CHECKS[provider](packet.toMessages(provider))
}

test('Chat Completions messages go in and come back paired', () => {
  const p = build([
    { role: 'developer', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'find x' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'grep', arguments: '{"q":"x"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '3 hits' },
  ], { facts: ['the API is v2'] })
  const chat = p.toMessages()
  assert.deepEqual(chat, p.messages)
  assert.deepEqual(chat, p.toMessages('openai_chat'))
  assert.equal(chat[0].role, 'system')
  assert.deepEqual(chat.slice(1), [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'find x' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'grep', arguments: '{"q":"x"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '3 hits' },
  ])
  checkAll(p)
})

test('@openai/agents and Responses items', () => {
  const p = build([
    { role: 'user', content: [{ type: 'input_text', text: 'find x' }] },
    { type: 'reasoning', id: 'rs_1', content: [] },
    { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'looking' }] },
    { type: 'function_call', callId: 'call_9', name: 'grep', arguments: '{"q":"x"}', status: 'completed' },
    { type: 'function_call_result', callId: 'call_9', name: 'grep', status: 'completed', output: { type: 'text', text: '3 hits' } },
  ])
  assert.deepEqual(p.toMessages('openai_responses'), [
    { role: 'user', content: 'find x' },
    { role: 'assistant', content: 'looking' },
    { type: 'function_call', call_id: 'call_9', name: 'grep', arguments: '{"q":"x"}' },
    { type: 'function_call_output', call_id: 'call_9', output: '3 hits' },
  ])
  checkAll(p)
})

test('Anthropic messages: tool_use answered first in the next user message', () => {
  const p = build([
    { role: 'user', content: 'find x' },
    { role: 'assistant', content: [{ type: 'text', text: 'looking' }, { type: 'tool_use', id: 'toolu_1', name: 'grep', input: { q: 'x' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3 hits' }, { type: 'text', text: 'and?' }] },
  ], { facts: ['the API is v2'] })
  const out = p.toMessages('anthropic')
  assert.deepEqual(out.map((m) => m.role), ['user', 'assistant', 'user'])
  assert.deepEqual(out[2].content, [
    { type: 'tool_result', tool_use_id: 'toolu_1', content: '3 hits' },
    { type: 'text', text: 'and?' },
  ])
  checkAll(p)
})

test('LangChain message dicts and dumps', () => {
  const p = build([
    { lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'HumanMessage'], kwargs: { content: 'find x' } },
    { type: 'ai', content: '', tool_calls: [{ name: 'grep', args: { q: 'x' }, id: 'call_1', type: 'tool_call' }] },
    { type: 'tool', content: '3 hits', tool_call_id: 'call_1' },
  ])
  assert.deepEqual(p.toMessages().map((m) => m.role), ['user', 'assistant', 'tool'])
  checkAll(p)
})

test('toMessages is a method, not data: packets still compare and serialise as before', () => {
  const b = new ContextBuilder()
  b.addMessages([{ role: 'user', content: 'hi', at: new Date('2026-01-01T00:00:00Z'), id: 'm1', priority: 60 }])
  const p = b.build()
  assert.equal(typeof p.toMessages, 'function')
  assert.ok(!Object.keys(p).includes('toMessages'))
  assert.ok(!('toMessages' in JSON.parse(JSON.stringify(p))))
  assert.deepEqual(b.build(), p)
  assert.deepEqual(p.sections.map((s) => s.id), ['m1'])
})

test('a dropped result leaves its call as text; secrets in calls are redacted', () => {
  const p = build([
    { role: 'user', content: 'log in', priority: 90 },
    { role: 'assistant', content: null, priority: 90, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'login', arguments: JSON.stringify({ key: KEY }) } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(4000), priority: 1 },
  ], { budgetTokens: 40 }) // too little room left for even a cut of the result
  assert.ok(p.manifest.dropped.some((d) => d.id === 'message-2'), JSON.stringify(p.manifest))
  for (const provider of PROVIDERS) {
    const text = JSON.stringify(p.toMessages(provider))
    assert.match(text, /\[tool call c1\] login/)
    assert.doesNotMatch(text, new RegExp(KEY))
    assert.match(text, /REDACTED:openai-api-key/)
  }
  checkAll(p)
})

test('unreadable shapes and unknown providers are VALIDATION errors naming the field', () => {
  const b = new ContextBuilder()
  assert.throws(() => b.addMessages([{ role: 'user', content: 'ok' }, { role: 'critic', content: 'x' }]),
    (err) => err.code === 'VALIDATION' && err.problems.some((p) => p.field === 'messages[1].role'))
  assert.throws(() => b.addMessages([{ role: 'user', content: [{ type: 'video' }] }]),
    (err) => err.code === 'VALIDATION' && err.problems.some((p) => p.field === 'messages[0].content[0].type'))
  assert.throws(() => b.addMessages('hi'), (err) => err.code === 'VALIDATION')
  assert.equal(b.build().sections.length, 0, 'nothing added')
  const p = build([{ role: 'user', content: 'x' }])
  for (const provider of ['mcp', 'gemini', 3]) {
    assert.throws(() => p.toMessages(provider),
      (err) => err.code === 'VALIDATION' && err.problems.some((q) => q.field === 'provider'))
  }
})

test('random conversations with random drops stay valid for every provider', () => {
  let seed = 7
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
  const ids = ['call_0', 'call_1', 'call_2', 'toolu.bad/id', 'c'.repeat(60)]
  for (let run = 0; run < 200; run++) {
    const messages = []
    for (let k = rand(12); k > 0; k--) {
      const text = ['', '  ', 'some words '.repeat(1 + rand(6))][rand(3)]
      const priority = rand(100)
      switch (rand(4)) {
        case 0: messages.push({ role: ['user', 'assistant', 'system'][rand(3)], content: text, priority }); break
        case 1: messages.push({ role: 'tool', tool_call_id: ids[rand(ids.length)], content: text, priority }); break
        default: {
          const calls = ids.filter(() => rand(2))
          messages.push({ role: 'assistant', content: text || null, priority, tool_calls: calls.map((id) => ({ id, type: 'function', function: { name: 'grep', arguments: ['{}', '{oops'][rand(2)] } })) })
          for (const id of calls.filter(() => rand(3))) messages.push({ role: 'tool', tool_call_id: id, content: text, priority: rand(100) })
        }
      }
    }
    checkAll(build(messages, { budgetTokens: rand(300), facts: rand(2) ? ['the API is v2'] : undefined }))
  }
})
