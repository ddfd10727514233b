// Memory and sessions (docs/design.md §7) through the Node face: versioned JSON documents by scope,
// written by compare-and-swap or by `memoryUpdate`'s read-change-write loop, and who owns a
// conversation after its handoffs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ManualClock, Store, open } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-memory-')), 'handoff.db')

test('memoryPut, memoryGet, memoryList and memoryDelete, with compare-and-swap', async () => {
  const clock = new ManualClock('2025-01-01T00:00:00Z')
  const store = Store.memory({ clock })
  assert.equal(store.memoryGet('agent:writer'), null)
  assert.equal(await store.memoryGetAsync('agent:writer'), null)

  const first = store.memoryPut('agent:writer', { style: 'short', drafts: [1, 2] }, { expectedVersion: 0 })
  assert.deepEqual(first, { scope: 'agent:writer', value: { style: 'short', drafts: [1, 2] }, version: 1, updatedAt: '2025-01-01T00:00:00.000000Z' })
  assert.deepEqual(store.memoryGet('agent:writer'), first)
  const second = await store.memoryPutAsync('agent:writer', { style: 'long' })
  assert.equal(second.version, 2)

  const stale = await bothFail(
    () => store.memoryPut('agent:writer', { style: 'stale' }, { expectedVersion: 1 }),
    () => store.memoryPutAsync('agent:writer', { style: 'stale' }, { expectedVersion: 1 }),
  )
  assert.equal(stale.code, 'CONFLICT')
  assert.equal(stale.id, 'agent:writer')
  assert.deepEqual([stale.expected, stale.actual], [1, 2])
  assert.deepEqual(store.memoryGet('agent:writer').value, { style: 'long' })

  store.memoryPut('agent:reviewer', { strict: true })
  store.memoryPut('shared', { topic: 'tea' })
  assert.deepEqual(store.memoryList({ prefix: 'agent:' }).map((m) => m.scope), ['agent:reviewer', 'agent:writer'])
  assert.deepEqual((await store.memoryListAsync()).map((m) => m.scope), ['agent:reviewer', 'agent:writer', 'shared'])

  const conflict = await bothFail(
    () => store.memoryDelete('shared', { expectedVersion: 7 }),
    () => store.memoryDeleteAsync('shared', { expectedVersion: 7 }),
  )
  assert.equal(conflict.code, 'CONFLICT')
  assert.equal(store.memoryDelete('shared', { expectedVersion: 1 }), true)
  assert.equal(await store.memoryDeleteAsync('shared'), false, 'nothing left to forget')
  assert.equal(store.memoryGet('shared'), null)
  // The scope's version goes on after a delete: a writer that read it before conflicts.
  assert.equal(store.memoryPut('shared', { topic: 'coffee' }).version, 3)

  const bad = await bothFail(
    () => store.memoryPut('bad scope', [1, 2]),
    () => store.memoryPutAsync('bad scope', [1, 2]),
  )
  assert.equal(bad.code, 'VALIDATION')
  assert.deepEqual(bad.problems.map((p) => p.field), ['value'])
  const fn = await bothFail(() => store.memoryPut('shared', { f() {} }), () => store.memoryPutAsync('shared', { f() {} }))
  assert.deepEqual(fn.problems.map((p) => p.field), ['f'])
})

test('memoryUpdate reads, changes and writes; `{}` when nothing was written', () => {
  const store = Store.memory()
  const seen = []
  const first = store.memoryUpdate('shared', (value) => {
    seen.push(value)
    return { ...value, count: (value.count ?? 0) + 1 }
  })
  assert.deepEqual(seen, [{}])
  assert.deepEqual([first.value, first.version], [{ count: 1 }, 1])
  const second = store.memoryUpdate('shared', (value) => ({ ...value, count: value.count + 1 }))
  assert.deepEqual([second.value, second.version], [{ count: 2 }, 2])
})

test('memoryUpdate with a throwing change writes nothing and throws its error as it is', async () => {
  const store = Store.memory()
  store.memoryPut('shared', { count: 1 })
  const boom = new TypeError('the model refused')
  boom.detail = 42
  assert.throws(() => store.memoryUpdate('shared', () => { throw boom }), (err) => err === boom)
  await assert.rejects(store.memoryUpdateAsync('shared', () => { throw boom }), (err) => err === boom)
  await assert.rejects(store.memoryUpdateAsync('shared', async () => { throw boom }), (err) => err === boom)
  const after = store.memoryGet('shared')
  assert.deepEqual([after.value, after.version], [{ count: 1 }, 1])
  assert.equal(store.memoryGet('nothing-yet'), null)
  assert.throws(() => store.memoryUpdate('nothing-yet', () => { throw boom }), (err) => err === boom)
  assert.equal(store.memoryGet('nothing-yet'), null)
})

test('memoryUpdate reads what the change returns as memoryPut reads its value', async () => {
  const store = Store.memory()
  const notObject = await bothFail(
    () => store.memoryUpdate('shared', () => [1]),
    () => store.memoryUpdateAsync('shared', () => [1]),
  )
  assert.equal(notObject.code, 'VALIDATION')
  assert.deepEqual(notObject.problems.map((p) => p.field), ['value'])
  const notJson = await bothFail(
    () => store.memoryUpdate('shared', () => ({ f() {} })),
    () => store.memoryUpdateAsync('shared', () => ({ f() {} })),
  )
  assert.deepEqual(notJson.problems.map((p) => p.field), ['f'])
  // The sync update cannot wait for an asynchronous change.
  assert.throws(() => store.memoryUpdate('shared', async () => ({})), (err) => {
    assert.equal(err.code, 'VALIDATION')
    assert.deepEqual(err.problems.map((p) => p.field), ['change'])
    assert.match(err.message, /memoryUpdateAsync/)
    return true
  })
  const badScope = await bothFail(
    () => store.memoryUpdate('bad scope', (v) => v),
    () => store.memoryUpdateAsync('bad scope', (v) => v),
  )
  assert.deepEqual(badScope.problems.map((p) => p.field), ['scope'])
  const notFunction = await bothFail(
    () => store.memoryUpdate('shared', { count: 1 }),
    () => store.memoryUpdateAsync('shared', { count: 1 }),
  )
  assert.deepEqual(notFunction.problems, [{ field: 'change', rule: 'must be a function, got an object' }])
  const notString = await bothFail(() => store.memoryUpdate(7, (v) => v), () => store.memoryUpdateAsync(7, (v) => v))
  assert.deepEqual(notString.problems.map((p) => p.field), ['scope'])
  assert.equal(store.memoryGet('shared'), null, 'nothing was written')
})

test('memoryUpdateAsync: concurrent updates from several Promises give the exact count', async () => {
  const store = open(tempDb())
  const WORKERS = 6
  const ROUNDS = 15
  let calls = 0
  const worker = async () => {
    for (let i = 0; i < ROUNDS; i++) {
      await store.memoryUpdateAsync('shared', async (value) => {
        calls++
        // Yield so that the other updates read the same version meanwhile.
        await new Promise((resolve) => setImmediate(resolve))
        return { ...value, count: (value.count ?? 0) + 1 }
      })
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, worker))
  const memory = store.memoryGet('shared')
  assert.equal(memory.value.count, WORKERS * ROUNDS)
  assert.equal(memory.version, WORKERS * ROUNDS)
  assert.ok(calls > WORKERS * ROUNDS, `the updates did conflict and were applied again (${calls} calls)`)

  // A change that returns the value itself (not a Promise) works too, and the sync one
  // interleaves with them.
  await Promise.all([
    store.memoryUpdateAsync('shared', (value) => ({ ...value, count: value.count + 1 })),
    store.memoryUpdateAsync('shared', (value) => ({ ...value, count: value.count + 1 })),
    Promise.resolve().then(() => store.memoryUpdate('shared', (value) => ({ ...value, count: value.count + 1 }))),
  ])
  assert.equal(store.memoryGet('shared').value.count, WORKERS * ROUNDS + 3)
})

test('session(sessionId): who owns the conversation after its handoffs, its hops and its context', async () => {
  const store = Store.memory()
  const empty = store.session('s1')
  assert.deepEqual(empty, { sessionId: 's1', currentAgent: null, handoffChain: [], context: {} })

  const first = store.create({ taskId: 't1', goal: 'Answer the customer', fromAgent: 'triage', toAgent: 'billing', sessionId: 's1' })
  assert.equal(store.session('s1').currentAgent, 'triage', 'not taken yet: still its sender')
  const claim = store.claim(first.id, 'billing')
  assert.equal(store.session('s1').currentAgent, 'billing')
  store.complete(claim, { outcome: 'refund issued' })
  const second = store.create({ taskId: 't1', goal: 'Confirm the refund', fromAgent: 'billing', toAgent: 'support', parentId: first.id, sessionId: 's1' })
  store.create({ taskId: 't1', goal: 'Elsewhere', fromAgent: 'billing', sessionId: 's2' })
  store.memoryPut('session:s1', { language: 'ko' })

  const session = await store.sessionAsync('s1')
  assert.equal(session.sessionId, 's1')
  assert.equal(session.currentAgent, 'billing')
  assert.deepEqual(session.handoffChain.map((h) => [h.handoffId, h.fromAgent, h.toAgent, h.status]), [
    [first.id, 'triage', 'billing', 'completed'],
    [second.id, 'billing', 'support', 'pending'],
  ])
  assert.equal(session.handoffChain[1].parentId, first.id)
  assert.deepEqual(session.context, { language: 'ko' })
  const bad = await bothFail(() => store.session('bad id'), () => store.sessionAsync('bad id'))
  assert.deepEqual(bad.problems.map((p) => p.field), ['sessionId'])
})

test('an update that loses every round to another writer gives up with BUSY', async () => {
  const store = Store.memory()
  // The change writes the scope itself each time: the update's own write always comes second.
  const rival = (value) => {
    store.memoryPut('contended', { n: (value.n ?? 0) + 1 })
    return { mine: true }
  }
  const err = await bothFail(() => store.memoryUpdate('contended', rival), () => store.memoryUpdateAsync('contended', rival))
  assert.equal(err.code, 'BUSY')
  assert.equal(err.message, 'store busy: memory contended changed under every one of 10000 updates')
  const left = store.memoryGet('contended')
  assert.equal(left.value.mine, undefined, 'the update never wrote')
  assert.equal(left.version, 20000)
})
