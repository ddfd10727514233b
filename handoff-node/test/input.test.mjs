// Hostile input (docs/design.md §14): text is never altered silently (a lone surrogate is refused in
// every string that enters the binding, naming the field), and deep values are refused without
// crashing Node or writing what no reader could read back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { AgentRegistry, ContextBuilder, ManualClock, Store, handoffFromJson, open, redact, toMarkdown } from '../index.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const LONE = ['\ud800', '\udfff', 'ok\ud83d', '\ude00ok', 'a\ud800b\udc00', '\udc00\ud800']

/** `call` must fail with VALIDATION naming `field`, and with the surrogate rule. */
function refused(call, field) {
  assert.throws(call, (err) => {
    assert.equal(err.code, 'VALIDATION', err.message)
    assert.ok(err.problems.some((p) => p.field === field && /lone surrogate/.test(p.rule)),
      `expected ${field}: ${JSON.stringify(err.problems)}`)
    return true
  })
}

test('a lone surrogate is refused in every string that enters, naming the field', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g', fromAgent: 'alice' })
  const claim = s.claim(h.id, 'bob')
  for (const lone of LONE) {
    // Record fields, list items, metadata values and keys, at any depth.
    refused(() => s.create({ taskId: lone, goal: 'g' }), 'taskId')
    refused(() => s.create({ taskId: 't', goal: lone }), 'goal')
    refused(() => s.create({ taskId: 't', goal: 'g', fromAgent: lone }), 'fromAgent')
    refused(() => s.create({ taskId: 't', goal: 'g', progress: lone }), 'progress')
    refused(() => s.create({ taskId: 't', goal: 'g', completed: ['fine', lone] }), 'completed[1]')
    refused(() => s.create({ taskId: 't', goal: 'g', instructions: lone }), 'instructions')
    refused(() => s.create({ taskId: 't', goal: 'g', metadata: { note: lone } }), 'metadata.note')
    refused(() => s.create({ taskId: 't', goal: 'g', metadata: { list: [1, { x: lone }] } }), 'metadata.list[1].x')
    refused(() => s.create({ taskId: 't', goal: 'g', metadata: { [`k${lone}`]: 1 } }), 'metadata')
    refused(() => s.create({ taskId: 't', goal: 'g', metadata: { a: { [lone]: 'v' } } }), 'metadata.a')
    refused(() => s.createMany([{ taskId: 't', goal: 'g' }, { taskId: 't', goal: lone }]), '[1].goal')
    refused(() => s.checkpoint('t', 'bob', { goal: 'g', progress: lone }), 'progress')
    // Ids, agent names and reasons given as arguments.
    refused(() => s.get(lone), 'id')
    refused(() => s.claim(h.id, lone), 'agent')
    refused(() => s.claimNext(lone), 'agent')
    refused(() => s.reject(h.id, 'bob', { reason: lone }), 'reason')
    refused(() => s.cancel(h.id, lone), 'by')
    refused(() => s.release(claim, { reason: lone }), 'reason')
    refused(() => s.complete(claim, { outcome: lone }), 'outcome')
    refused(() => s.heartbeat({ ...claim, handoffId: lone }), 'handoffId')
    refused(() => s.list({ taskId: lone }), 'taskId')
    refused(() => s.events({ taskId: lone }), 'taskId')
    refused(() => s.chain(lone), 'taskId')
    refused(() => open(join(tmpdir(), `x${lone}.db`)), 'path')
    // Records, JSON text, redaction, the context builder, the registry, the clock.
    refused(() => toMarkdown({ ...h, goal: lone }), 'handoff.goal')
    refused(() => handoffFromJson(`{"goal": "${lone}"}`), 'json')
    refused(() => redact(`key ${lone}`), 'text')
    refused(() => redact('x', { rules: [{ id: 'r', pattern: lone }] }), 'rules[0].pattern')
    refused(() => new ContextBuilder().addFacts(['ok', lone]), 'facts[1]')
    refused(() => new ContextBuilder().addItem(lone), 'text')
    refused(() => new ContextBuilder().addMessages([{ role: 'user', content: lone }]), 'messages[0].content')
    refused(() => new AgentRegistry().add(lone), 'name')
    refused(() => new AgentRegistry().add('a', lone), 'description')
    refused(() => new ManualClock().set(`2026-01-01T00:00:00Z${lone}`), 'at')
    // The Promise variants refuse alike.
    await assert.rejects(s.createAsync({ taskId: 't', goal: lone }), (err) =>
      err.code === 'VALIDATION' && err.problems[0].field === 'goal')
  }
  // Nothing was written, and the claim is untouched.
  assert.equal(s.list().length, 1)
  assert.equal(s.get(h.id).claimedBy, 'bob')
})

test('paired surrogates and a real U+FFFD are text, kept exactly', () => {
  const s = Store.memory()
  for (const text of ['💥', 'a\ud83d\ude00b', '\ufffd', 'x\ufffd\ufffdy', '\ufffd💥\ufffd', 'é\u0000z']) {
    const h = s.create({ taskId: 't', goal: text, completed: [text], metadata: { [text]: text } })
    assert.equal(h.goal, text)
    assert.deepEqual(h.completedSteps, [text])
    assert.deepEqual(h.metadata, { [text]: text })
    assert.deepEqual(s.get(h.id), h)
    assert.equal(redact(text).text, text)
  }
  // Two keys that differ only in their lone surrogate no longer collapse into one: refused.
  assert.throws(() => s.create({ taskId: 't', goal: 'g', metadata: { '\ud800': 1, '\ud801': 2 } }), { code: 'VALIDATION' })
})

test('5,000-deep metadata is VALIDATION and never crashes Node (child process)', () => {
  // In a child, so that a stack overflow or abort fails this test instead of ending the run.
  const script = `
    import { Store, open, toMarkdown, handoffFromJson, ContextBuilder, redact } from './index.mjs'
    const deep = (n, leaf) => { let v = leaf; for (let i = 0; i < n; i++) v = { d: v }; return v }
    const deepArray = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v }
    const results = []
    const expect = (name, call) => {
      try { call(); results.push(name + ': accepted') } catch (err) { results.push(name + ': ' + err.code) }
    }
    const stores = [Store.memory(), Store.memory({ limits: { maxDepth: 100 } }), open(':memory:', { limits: { maxDepth: 100 } })]
    for (const [i, s] of stores.entries()) {
      expect('object ' + i, () => s.create({ taskId: 't', goal: 'g', metadata: deep(5000, 1) }))
      expect('array ' + i, () => s.create({ taskId: 't', goal: 'g', metadata: { a: deepArray(5000) } }))
      expect('checkpoint ' + i, () => s.checkpoint('t', 'a', { goal: 'g', metadata: deep(5000, 1) }))
      await s.createAsync({ taskId: 't', goal: 'g', metadata: deep(5000, 1) }).then(
        () => results.push('async ' + i + ': accepted'), (err) => results.push('async ' + i + ': ' + err.code))
    }
    const h = Store.memory().create({ taskId: 't', goal: 'g' })
    expect('toMarkdown', () => toMarkdown({ ...h, metadata: deep(5000, 1) }))
    expect('fromJson', () => handoffFromJson('{"metadata":' + '{"d":'.repeat(5000) + '1' + '}'.repeat(5000) + '}'))
    expect('messages', () => new ContextBuilder().addMessages([{ role: 'assistant', content: 'x', toolCalls: [{ id: '1', name: 'f', arguments: deep(5000, 1) }] }]))
    console.log(JSON.stringify(results))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 120_000 })
  const results = JSON.parse(out.trim().split('\n').at(-1))
  assert.equal(results.length, 15)
  for (const line of results) assert.match(line, /: VALIDATION$/)
})

test('whatever depth is accepted reads back (no record poisons the store)', () => {
  const db = join(mkdtempSync(join(tmpdir(), 'handoff-depth-')), 'handoff.db')
  const s = open(db, { limits: { maxDepth: 100 } })
  let accepted = 0
  for (let n = 90; n <= 110; n++) {
    let metadata = 'leaf'
    for (let i = 0; i < n; i++) metadata = { d: metadata }
    let h
    try {
      h = s.create({ taskId: `t${n}`, goal: 'g', metadata: { m: metadata } })
    } catch (err) {
      assert.equal(err.code, 'VALIDATION', err.message)
      continue
    }
    accepted++
    assert.deepEqual(s.get(h.id).metadata, { m: metadata })
  }
  assert.ok(accepted > 0 && accepted < 21, `${accepted} of 21 depths accepted`)
  // Every reader still reads the whole store.
  const again = open(db)
  assert.equal(again.list().length, accepted)
  assert.equal(again.events().length, accepted)
  assert.ok(Array.isArray(again.stats()))
  assert.equal(again.claimNext('worker')?.handoff.taskId, 't90')
})
