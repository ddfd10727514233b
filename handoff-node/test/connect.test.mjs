// `connect(url, options)`: every backend of the core by its URL (memory:, files:DIR, a path or
// sqlite:PATH, postgres://…?schema=NAME), the same lifecycle on each, the options each backend
// reads, what each can do (`capabilities()`), and `claimNextAsync` with `waitSeconds` woken by
// work created after it started waiting.
//
// The PostgreSQL tests run when HANDOFF_TEST_POSTGRES names a server (CI sets
// postgres://postgres@127.0.0.1:5432/test); each uses a fresh schema, dropped afterwards. Set
// but unreachable, they fail: only an unset variable skips them.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ManualClock, Store, connect, connectAsync, open } from '../index.mjs'

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
    [undefined, 'url'], ['postgres://u@127.0.0.1/db?schema=Bad-Name', 'url.schema'],
    ['postgres://u@127.0.0.1/db?sslmode=verify', 'url.sslmode'], ['postgres://u@127.0.0.1/db?sslkey=k.pem', 'url.sslkey'],
    ['postgres://u@127.0.0.1/db?reply_timeout=soon', 'url.reply_timeout'],
    ['postgres://u@127.0.0.1/db?tcp_user_timeout=1.5', 'url.tcp_user_timeout'],
    ['postgres://u@127.0.0.1/db?keepalives_count=3&keepalives_retries=3', 'url.keepalives_retries'],
    ['postgres://u@127.0.0.1:notaport/db', 'url.port'], ['postgres://u@127.0.0.1/db?bogus=1', 'url.bogus']]) {
    const check = (err) => err.code === 'VALIDATION' && err.problems.some((p) => p.field === field)
    assert.throws(() => connect(url), check, String(url))
    await assert.rejects(connectAsync(url), check, String(url))
  }
  assert.throws(() => connect('memory:', { limits: { maxDepth: 101 } }), (err) => err.problems[0].field === 'limits.maxDepth')
})

test('an unreachable server is STORAGE, and its message never shows the password', async () => {
  for (const url of ['postgres://u:pw1@127.0.0.1:1/db', 'postgres://u@127.0.0.1:1/db?password=pw1']) {
    await assert.rejects(connectAsync(url, { connectTimeoutSeconds: 5 }),
      (err) => err.code === 'STORAGE' && !err.message.includes('pw1') && err.message.includes('***'), url)
  }
})

/** The fields of the VALIDATION problems `call` throws, and that its Promise twin rejects with. */
async function fieldsOf(call, callAsync) {
  let fields
  assert.throws(call, (err) => {
    assert.equal(err.code, 'VALIDATION', err.message)
    fields = err.problems.map((p) => p.field)
    return true
  })
  await assert.rejects(callAsync(), (err) => {
    assert.equal(err.code, 'VALIDATION', err.message)
    assert.deepEqual(err.problems.map((p) => p.field), fields)
    return true
  })
  return fields
}

test('connect options: bad ones are VALIDATION errors naming them in camelCase, and nothing is created', async () => {
  const dir = tmp('handoff-bad-options-')
  for (const url of [join(dir, 'x.db'), `files:${join(dir, 'folder')}`, 'memory:']) {
    const bad = [
      [{ synchronous: 'off' }, 'synchronous'],
      [{ synchronous: 1 }, 'synchronous'],
      [{ lockPatienceSeconds: -1 }, 'lockPatienceSeconds'],
      [{ lockPatienceSeconds: '1' }, 'lockPatienceSeconds'],
      [{ poolSize: 0 }, 'poolSize'],
      [{ poolSize: -2 }, 'poolSize'],
      [{ poolSize: 1.5 }, 'poolSize'],
      [{ poolSize: '8' }, 'poolSize'],
      [{ connectTimeoutSeconds: 0 }, 'connectTimeoutSeconds'],
      [{ connectTimeoutSeconds: -1 }, 'connectTimeoutSeconds'],
      [{ readOnly: 'yes' }, 'readOnly'],
    ]
    for (const [options, field] of bad) {
      const fields = await fieldsOf(() => connect(url, options), () => connectAsync(url, options))
      assert.deepEqual(fields, [field], `${url} ${JSON.stringify(options)}`)
    }
    // A key spelled otherwise is named as it should be spelled, the rule quoting it.
    assert.throws(() => connect(url, { pool_size: 2 }), (err) => err.code === 'VALIDATION' &&
      err.problems[0].field === 'poolSize' && err.problems[0].rule.includes('`pool_size`'))
    // Every value problem at once.
    const both = { synchronous: 'off', poolSize: 0, connectTimeoutSeconds: 0 }
    const fields = await fieldsOf(() => connect(url, both), () => connectAsync(url, both))
    assert.deepEqual(fields, ['synchronous', 'poolSize', 'connectTimeoutSeconds'])
  }
  assert.deepEqual(readdirSync(dir), [])
})

test('readOnly: an SQLite store that refuses writes with STORAGE; any other URL is VALIDATION on readOnly', async () => {
  const dir = tmp('handoff-read-only-')
  const db = join(dir, 'h.db')
  const h = connect(db).create({ taskId: 't', goal: 'g', toAgent: 'b' })
  for (const url of [db, `sqlite:${db}`]) {
    for (const reader of [connect(url, { readOnly: true }), await connectAsync(url, { readOnly: true })]) {
      assert.deepEqual(reader.get(h.id), h)
      assert.deepEqual(reader.events({ handoffId: h.id }).map((e) => e.kind), ['created'])
      assert.throws(() => reader.create({ taskId: 't', goal: 'more' }), (err) => err.code === 'STORAGE' && /read-only/.test(err.message))
      assert.throws(() => reader.claim(h.id, 'b'), { code: 'STORAGE' })
      await assert.rejects(reader.createAsync({ taskId: 't', goal: 'more' }), { code: 'STORAGE' })
      assert.deepEqual(reader.list().map((x) => x.id), [h.id])
    }
  }
  const missing = join(dir, 'missing.db')
  assert.throws(() => connect(missing, { readOnly: true }), { code: 'STORAGE' })
  assert.equal(existsSync(missing), false)
  for (const url of ['memory:', `files:${join(dir, 'folder')}`, 'postgres://u@127.0.0.1:1/db']) {
    const fields = await fieldsOf(() => connect(url, { readOnly: true }), () => connectAsync(url, { readOnly: true }))
    assert.deepEqual(fields, ['readOnly'], url)
  }
  assert.equal(existsSync(join(dir, 'folder')), false)
})

test('connect options that concern another store are accepted and left; lockPatienceSeconds reaches files', async () => {
  const dir = tmp('handoff-options-')
  const options = { synchronous: 'normal', lockPatienceSeconds: 2.5, poolSize: 2, connectTimeoutSeconds: 3 }
  for (const url of ['memory:', join(dir, 'a.db'), `files:${join(dir, 'f')}`]) {
    const store = await connectAsync(url, options)
    const h = store.create({ taskId: 't', goal: 'g' })
    assert.deepEqual(connect(url, options).list().length, url === 'memory:' ? 0 : 1)
    assert.equal(store.get(h.id).id, h.id)
  }
  // A files store waits for another process's lock at most lockPatienceSeconds, then BUSY.
  const folder = join(dir, 'locked')
  const store = connect(`files:${folder}`, { lockPatienceSeconds: 0.3 })
  store.create({ taskId: 't', goal: 'before' })
  const holder = spawn('python3', ['-c',
    "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
    join(folder, '.lock')], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    await new Promise((resolve, reject) => {
      holder.stdout.once('data', resolve)
      holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code})`)))
    })
    const started = performance.now()
    assert.throws(() => store.create({ taskId: 't', goal: 'while stuck' }), { code: 'BUSY' })
    const waited = performance.now() - started
    assert.ok(waited >= 250 && waited < 10_000, `waited ${waited} ms for a patience of 300 ms`)
  } finally {
    holder.kill('SIGKILL')
    await once(holder, 'exit')
  }
  assert.equal(store.create({ taskId: 't', goal: 'after' }).status, 'pending')
})

// Every store writes portable backups.
const MEMORY = { durable: false, sharedByProcesses: false, sharedByMachines: false, backup: true, wakesWaiters: false }
const SQLITE = { ...MEMORY, durable: true, sharedByProcesses: true }
const FILES = { ...MEMORY, durable: true, sharedByProcesses: true }
const POSTGRES_CAN = { ...MEMORY, durable: true, sharedByProcesses: true, sharedByMachines: true, wakesWaiters: true }

test('capabilities: what each store can do, sync and as a Promise', async () => {
  const dir = tmp('handoff-capabilities-')
  const cases = [
    [connect('memory:'), MEMORY],
    [Store.memory(), MEMORY],
    [connect(join(dir, 'a.db')), SQLITE],
    [open(join(dir, 'b.db')), SQLITE],
    [open(':memory:'), { ...SQLITE, durable: false, sharedByProcesses: false }],
    [connect(`files:${join(dir, 'f')}`), FILES],
  ]
  for (const [store, expected] of cases) {
    assert.deepEqual(store.capabilities(), expected)
    assert.deepEqual(await store.capabilitiesAsync(), expected)
  }
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

test('postgres://…&sslmode=require: the lifecycle over TLS when the server offers it, a STORAGE error when not', { skip: NO_POSTGRES }, async () => {
  const application = `hc_node_tls_${process.pid}`
  const url = `${freshSchema()}&sslmode=require&application_name=${application}`
  const psql = (sql) => execFileSync('psql', [POSTGRES, '-Atqc', sql]).toString().trim()
  if (psql('SHOW ssl') !== 'on') {
    await assert.rejects(connectAsync(url), (err) => err.code === 'STORAGE' && /TLS/.test(err.message))
    return
  }
  const store = await connectAsync(url)
  await lifecycle(store)
  assert.equal(psql('SELECT bool_and(s.ssl) FROM pg_stat_ssl AS s JOIN pg_stat_activity AS a USING (pid) ' +
    `WHERE a.application_name = '${application}'`), 't')
})

test('postgres://…?schema=: claimNextAsync is woken by a create on another connection', { skip: NO_POSTGRES }, async () => {
  const url = freshSchema()
  const waiter = await connectAsync(url)
  await wakes(waiter, await connectAsync(url))
})

test('postgres://…?schema=: capabilities and the pool options', { skip: NO_POSTGRES }, async () => {
  const url = freshSchema()
  const store = await connectAsync(url, { poolSize: 2, connectTimeoutSeconds: 5, synchronous: 'normal' })
  assert.deepEqual(store.capabilities(), POSTGRES_CAN)
  assert.deepEqual(await store.capabilitiesAsync(), POSTGRES_CAN)
  await lifecycle(store)
  assert.deepEqual((await connectAsync(url, { poolSize: 1 })).capabilities(), POSTGRES_CAN)
  assert.deepEqual(await fieldsOf(() => connect(url, { readOnly: true }), () => connectAsync(url, { readOnly: true })), ['readOnly'])
  assert.deepEqual(await fieldsOf(() => connect(url, { poolSize: 0 }), () => connectAsync(url, { poolSize: 0 })), ['poolSize'])
})
