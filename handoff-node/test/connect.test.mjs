// `connect(url)`: every backend of the core by its URL (memory:, files:DIR, a path or
// sqlite:PATH, postgres://…?schema=NAME), the same lifecycle on each, and `claimNextAsync`
// with `waitSeconds` woken by work created after it started waiting.
//
// The PostgreSQL tests run when HANDOFF_TEST_POSTGRES names a server (CI sets
// postgres://postgres@127.0.0.1:5432/test); each uses a fresh schema, dropped afterwards. Set
// but unreachable, they fail: only an unset variable skips them.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ManualClock, connect, connectAsync } from '../index.mjs'

const POSTGRES = process.env.HANDOFF_TEST_POSTGRES
const NO_POSTGRES = POSTGRES ? false : 'HANDOFF_TEST_POSTGRES is not set (e.g. postgres://postgres@127.0.0.1:5432/test)'

/** A fresh schema's URL on the test server; the schema is dropped when the tests end. */
function freshSchema() {
  const schema = `hc_node_${randomBytes(6).toString('hex')}`
  after(() => {
    execFileSync('psql', [POSTGRES, '-q', '-v', 'ON_ERROR_STOP=1', '-c', `DROP SCHEMA IF EXISTS ${schema} CASCADE`])
  })
  return `${POSTGRES}${POSTGRES.includes('?') ? '&' : '?'}schema=${schema}`
}

const tmp = (prefix) => mkdtempSync(join(tmpdir(), prefix))

/** create → claimNext → heartbeat → complete, then what every reader sees of it. */
async function lifecycle(store) {
  const h = store.create({ taskId: 'T-1', goal: 'Move sessions out', fromAgent: 'planner', pending: ['tests'] })
  const open = await store.createAsync({ taskId: 'T-1', goal: 'Second hop', fromAgent: 'planner', toAgent: 'reviewer' })
  assert.deepEqual(store.get(h.id), h)
  const claim = store.claimNext('coder', { leaseSeconds: 60 })
  assert.equal(claim.handoffId, h.id)
  assert.equal(claim.token, 1)
  await store.heartbeatAsync(claim)
  const done = store.complete(claim, { outcome: 'done' })
  assert.equal(done.status, 'completed')
  assert.equal(store.claimNext('coder'), null, 'the other handoff is addressed to reviewer')
  const review = await store.claimNextAsync('reviewer')
  assert.equal(review.handoffId, open.id)
  store.release(review, { reason: 'not now' })
  assert.deepEqual(store.events({ handoffId: h.id }).map((e) => e.kind), ['created', 'claimed', 'heartbeat', 'completed'])
  assert.deepEqual(store.list({ status: 'pending' }).map((x) => x.id), [open.id])
  assert.equal(store.chain('T-1').hops.length, 2)
  return { done: h.id, pending: open.id }
}

/** What a second connection to the same store sees of `lifecycle`'s records. */
async function seenAgain(store, { done, pending }) {
  assert.equal(store.get(done).status, 'completed')
  assert.equal((await store.getAsync(pending)).status, 'pending')
  assert.deepEqual(store.events({ handoffId: done }).map((e) => e.kind), ['created', 'claimed', 'heartbeat', 'completed'])
  assert.deepEqual(store.list({ taskId: 'T-1' }).map((x) => x.id).sort(), [done, pending].sort())
}

/** `claimNextAsync` waiting for work, woken by a create made after it started. */
async function wakes(waiter, creator) {
  let settled = false
  const waiting = waiter.claimNextAsync('sleeper', { waitSeconds: 30 }).finally(() => { settled = true })
  await new Promise((resolve) => setTimeout(resolve, 150))
  assert.equal(settled, false, 'claimNextAsync waits while there is no work')
  const h = await creator.createAsync({ taskId: 'W-1', goal: 'wake up', toAgent: 'sleeper' })
  const claim = await waiting
  // A wait that ran out would give null: a claim means the create woke it.
  assert.equal(claim?.handoffId, h.id)
  assert.equal(claim.handoff.claimedBy, 'sleeper')
}

test('memory: a full lifecycle; each connect is a store of its own; the options apply', async () => {
  const store = connect('memory:')
  await lifecycle(store)
  assert.deepEqual(connect('memory:').list(), [])
  const clock = new ManualClock('2030-01-01T00:00:00Z')
  const timed = await connectAsync('memory:', { clock, policy: { maxHandoffs: 1 }, limits: { maxListItems: 2 } })
  const h = timed.create({ taskId: 't', goal: 'g', expiresAt: '2030-01-01T01:00:00Z' })
  assert.throws(() => timed.create({ taskId: 't', goal: 'g', pending: ['a', 'b', 'c'] }), { code: 'VALIDATION' })
  clock.advance(7200)
  assert.equal(timed.reap(), 1)
  assert.equal(timed.get(h.id).status, 'expired')
})

test('files:DIR: a full lifecycle, and a second connect to the folder sees the records', async () => {
  const dir = tmp('handoff-files-')
  const first = connect(`files:${dir}`)
  const ids = await lifecycle(first)
  await seenAgain(connect(`files:${dir}`), ids)
  await seenAgain(await connectAsync(`files:${dir}`), ids)
})

test('a path and sqlite:PATH open the same SQLite store', async () => {
  const db = join(tmp('handoff-connect-'), 'handoff.db')
  const ids = await lifecycle(connect(db))
  await seenAgain(connect(`sqlite:${db}`), ids)
})

test('bad URLs and options are VALIDATION errors naming them, thrown and rejected alike', async () => {
  for (const [url, field] of [['', 'url'], ['files:', 'url'], ['http://example.com/x', 'url'], [42, 'url'],
    [undefined, 'url'], ['postgres://u@127.0.0.1/db?schema=Bad-Name', 'url.schema']]) {
    const check = (err) => err.code === 'VALIDATION' && err.problems.some((p) => p.field === field)
    assert.throws(() => connect(url), check, String(url))
    await assert.rejects(connectAsync(url), check, String(url))
  }
  for (const options of [{ synchronous: 'full' }, { readOnly: true }, { lockPatienceSeconds: 1 }]) {
    assert.throws(() => connect('memory:', options), { code: 'VALIDATION' })
    await assert.rejects(connectAsync('memory:', options), { code: 'VALIDATION' })
  }
  assert.throws(() => connect('memory:', { limits: { maxDepth: 101 } }), (err) => err.problems[0].field === 'limits.maxDepth')
})

test('claimNextAsync with waitSeconds is woken by work created after it started (memory:, files:)', async () => {
  const store = connect('memory:')
  await wakes(store, store)
  const dir = tmp('handoff-wait-')
  await wakes(connect(`files:${dir}`), connect(`files:${dir}`))
})

test('waiting claims hold none of libuv\'s threads; the sync claimNext blocks and answers null when the wait runs out', async () => {
  const store = connect('memory:')
  // More waiters than libuv's pool has threads (4 by default): were each to hold one, the
  // pool's other work (a file read, any other *Async call) would wait for them.
  const agents = Array.from({ length: 6 }, (_, i) => `w${i}`)
  let woken = 0
  const waits = agents.map((agent) => store.claimNextAsync(agent, { waitSeconds: 60 }).then((c) => { woken++; return c }))
  const h = await store.createAsync({ taskId: 'p', goal: 'g' })
  assert.equal((await store.getAsync(h.id)).id, h.id)
  assert.ok((await readFile(new URL(import.meta.url))).length > 0)
  const claim = await Promise.race(waits)
  assert.equal(claim.handoffId, h.id)
  assert.equal(woken, 1)
  for (const agent of agents) await store.createAsync({ taskId: 'p', goal: 'g', toAgent: agent })
  const claims = await Promise.all(waits)
  assert.ok(claims.every((c) => c !== null))
  assert.equal(new Set(claims.map((c) => c.handoffId)).size, agents.length)

  assert.equal(store.claimNext('nobody', { waitSeconds: 0.1 }), null)
  assert.equal(await store.claimNextAsync('nobody', { waitSeconds: 0.1 }), null)
  for (const waitSeconds of [-1, 'soon', Infinity]) {
    assert.throws(() => store.claimNext('w', { waitSeconds }), (err) => err.code === 'VALIDATION' && err.problems.some((p) => p.field === 'waitSeconds'))
    await assert.rejects(store.claimNextAsync('w', { waitSeconds }), { code: 'VALIDATION' })
  }
})

test('postgres://…?schema=: a full lifecycle in a fresh schema, seen by a second connection', { skip: NO_POSTGRES }, async () => {
  const url = freshSchema()
  const ids = await lifecycle(await connectAsync(url))
  await seenAgain(connect(url), ids)
})

test('postgres://…?schema=: claimNextAsync is woken by a create on another connection', { skip: NO_POSTGRES }, async () => {
  const url = freshSchema()
  const waiter = await connectAsync(url)
  await wakes(waiter, await connectAsync(url))
})
