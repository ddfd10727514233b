// Records round-trip JS ↔ JSON ↔ Rust unchanged, and the JSON is the core's wire form.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, open, handoffToJson, handoffFromJson, handoffJsonSchema } from '../index.mjs'

const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** Fields the wire JSON leaves out when a record has none. */
const LEFT_OUT_WHEN_NULL = new Set(['protocol', 'traceparent', 'tracestate'])

function fullRecord(store) {
  const parent = store.create({ taskId: 'rt', goal: 'parent', fromAgent: 'a', toAgent: 'b' })
  return store.create({
    taskId: 'rt', goal: 'Ünïcødé goal — 💥 with "quotes" and \\ backslashes\nand lines',
    fromAgent: 'b', toAgent: 'c', kind: 'error_recovery', reason: 'error: disk full: /var',
    contextPct: 0, progress: 'p', completed: ['a', ''], pending: ['b'], decisions: ['d'], assumptions: ['x'],
    warnings: ['w'], errors: ['e'], files: ['f'], instructions: 'i', id: 'rt:1@host-2.b_c', parentId: parent.id,
    sessionId: 'session', blockers: ['bl'], lockedFiles: ['lf'], priorityItems: ['pi'], successCriteria: ['sc'],
    expiresAt: '2099-12-31T23:59:59.123456Z', maxAttempts: 7, priority: -3,
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=abc,other=1',
    metadata: { nested: { deeper: [1, -2.5, 1e-7, 9007199254740991, 'ß', null, true, false, {}] }, empty: [], 'weird key': 'v' },
  })
}

test('JS → JSON → JS gives the same record, for every lifecycle state', () => {
  const store = Store.memory()
  const created = fullRecord(store)
  const claim = store.claim(created.id, 'c')
  const beat = store.heartbeat(claim, { progress: { done: 2, of: [3, 'ß'], note: null } })
  const done = store.complete(claim, { outcome: 'done ✓' })
  // Protocol messages: their `protocol` body in the seed's form, every key of it kept.
  const init = store.initialize('rt-protocol', {
    manager: 'm', worker: 'w', instructions: 'Do it — ✓', successCriteria: ['done'],
    context: { project_root: '/app', relevant_files: ['a.js'], patterns: ['p'], constraints: ['c'] }, qualityGates: ['q'],
  })
  const held = store.claimNext('w')
  const report = store.report(held, 'PARTIAL', {
    accomplished: ['x'], filesModified: [{ path: 'a.js', description: 'd' }], tests: { added: 1, passing: 1, coverage: '9%' },
    issues: ['i'], validation: ['v'],
  })
  const answered = store.get(init.id)
  assert.equal(created.protocol, null)
  assert.deepEqual([created.priority, beat.progress, done.traceparent, init.traceparent], [-3, { done: 2, of: [3, 'ß'], note: null }, created.traceparent, null])
  for (const h of [created, claim.handoff, beat, done, init, held.handoff, answered, report]) {
    const json = handoffToJson(h)
    assert.deepEqual(handoffFromJson(json), h)
    // Through JSON.stringify/parse (what an app would store or send) too.
    assert.deepEqual(handoffFromJson(handoffToJson(JSON.parse(JSON.stringify(h)))), h)
    // The wire JSON carries every field under its snake_case name with the same value; it
    // leaves `protocol` and the trace context out when a record has none (`null` here).
    const wire = JSON.parse(json)
    const keys = Object.keys(h).filter((key) => !(LEFT_OUT_WHEN_NULL.has(key) && h[key] === null))
    assert.deepEqual(Object.keys(wire), keys.map(snake))
    for (const key of keys) assert.deepEqual(wire[snake(key)], h[key], key)
  }
})

for (const [name, make] of [['memory', () => Store.memory()], ['SQLite', () => open(join(mkdtempSync(join(tmpdir(), 'handoff-rt-')), 'h.db'))]]) {
  test(`the created event names the task and the addressee; get reads the record (${name})`, () => {
    const store = make()
    const h = fullRecord(store)
    const [created] = store.events({ id: h.id })
    assert.equal(created.kind, 'created')
    assert.equal(created.handoffId, h.id)
    // A priority other than 0 is in it too.
    assert.deepEqual(created.detail, { priority: -3, taskId: 'rt', toAgent: 'c' })
    assert.equal(handoffToJson(store.get(h.id)), handoffToJson(h))
    const anyone = store.create({ taskId: 'rt2', goal: 'for whoever comes' })
    assert.deepEqual(store.events({ id: anyone.id })[0].detail, { taskId: 'rt2', toAgent: null })
  })
}

test('JSON written elsewhere (Rust, Python) reads back byte for byte', () => {
  const store = Store.memory()
  const h = fullRecord(store)
  const json = handoffToJson(h)
  // Parsing then writing again is the identity on the wire form.
  assert.equal(handoffToJson(handoffFromJson(json)), json)
  // Defaults of the wire form (fields left out) are filled as Rust fills them.
  const minimal = JSON.stringify({ schema_version: 1, id: 'm1', task_id: 't', goal: 'g', created_at: '2026-01-01T00:00:00Z' })
  const m = handoffFromJson(minimal)
  assert.equal(m.status, 'pending')
  assert.equal(m.kind, 'full')
  assert.equal(m.reason, 'explicit')
  assert.equal(m.maxAttempts, 3)
  assert.deepEqual(m.metadata, {})
  assert.equal(m.createdAt, '2026-01-01T00:00:00.000000Z')
  // A wrong schema_version is refused.
  assert.throws(() => handoffFromJson(minimal.replace('"schema_version":1', '"schema_version":2')), { code: 'VALIDATION' })
})

test('metadata stays plain JSON', () => {
  const store = Store.memory()
  const metadata = { a: 1, b: [true, null, 'x', { c: 2.5 }], d: { e: {} } }
  const h = store.create({ taskId: 't', goal: 'g', metadata })
  assert.deepEqual(h.metadata, metadata)
  assert.equal(Object.getPrototypeOf(h.metadata), Object.prototype)
  // undefined members are dropped as JSON.stringify drops them.
  const u = store.create({ taskId: 'u', goal: 'g', metadata: { keep: 1, drop: undefined } })
  assert.deepEqual(u.metadata, { keep: 1 })
})

test('the JSON Schema describes the wire form', () => {
  const schema = JSON.parse(handoffJsonSchema())
  assert.equal(schema.title, 'Handoff')
  assert.ok(schema.properties.task_id)
  assert.ok(schema.required.includes('goal'))
})
