// What operators meet (docs/design.md §14): a stuck writer costs others at most lockPatienceSeconds
// (BUSY) while reads go on; read-only opens change nothing; the policy saved in the store
// applies to every opener; the event log is read in pages.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, open, openAsync } from '../index.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-operators-')), 'handoff.db')

/** Holds an exclusive flock on `path` from another process until killed. */
async function holdLock(path) {
  const holder = spawn('python3', ['-c',
    "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
    path], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  holder.stdout.setEncoding('utf8')
  await new Promise((resolve, reject) => {
    holder.stdout.on('data', (chunk) => {
      out += chunk
      if (out.includes('held')) resolve()
    })
    holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding the lock`)))
  })
  return holder
}

async function release(holder) {
  if (holder.exitCode === null && holder.signalCode === null) {
    holder.kill('SIGKILL')
    await once(holder, 'exit')
  }
}

test('a writer stuck holding the lock costs others at most lockPatienceSeconds (BUSY); reads go on', async () => {
  const db = tempDb()
  const store = open(db, { lockPatienceSeconds: 0.5 })
  const h = store.create({ taskId: 't', goal: 'g' })
  const holder = await holdLock(`${db}-lock`)
  try {
    for (const call of [() => store.create({ taskId: 't', goal: 'blocked' }), () => store.claim(h.id, 'bob')]) {
      const started = performance.now()
      assert.throws(call, (err) => {
        assert.equal(err.code, 'BUSY', err.message)
        return true
      })
      const waited = performance.now() - started
      assert.ok(waited >= 400, `gave up after ${waited} ms, before its patience`)
      assert.ok(waited < 10_000, `waited ${waited} ms for a patience of 500 ms`)
    }
    const started = performance.now()
    await assert.rejects(store.createAsync({ taskId: 't', goal: 'blocked' }), { code: 'BUSY' })
    assert.ok(performance.now() - started < 10_000)
    // Nothing changed, and reads never waited for the lock.
    assert.deepEqual(store.list().map((r) => r.id), [h.id])
    assert.equal(store.get(h.id).status, 'pending')
    assert.equal((await store.listAsync()).length, 1)
    assert.equal(store.events().length, 1)
    // Opening the current store does not wait for the writer either.
    const again = open(db, { lockPatienceSeconds: 0.5 })
    assert.equal(again.get(h.id).id, h.id)
    assert.equal(open(db, { readOnly: true }).list().length, 1)
  } finally {
    await release(holder)
  }
  // The lock freed, writes go through again.
  assert.equal(store.create({ taskId: 't', goal: 'after' }).status, 'pending')
})

test('readOnly: an empty file is refused and left empty; a missing one is not created', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-ro-'))
  const empty = join(dir, 'empty.db')
  writeFileSync(empty, '')
  assert.throws(() => open(empty, { readOnly: true }), (err) => err.code === 'STORAGE' && /empty/.test(err.message))
  await assert.rejects(openAsync(empty, { readOnly: true }), { code: 'STORAGE' })
  assert.equal(statSync(empty).size, 0)
  for (const side of ['-wal', '-shm', '-lock', '-journal']) assert.ok(!existsSync(empty + side), side)
  const missing = join(dir, 'missing.db')
  assert.throws(() => open(missing, { readOnly: true }), { code: 'STORAGE' })
  assert.ok(!existsSync(missing))
  // A foreign SQLite-looking file is refused unchanged too.
  const foreign = join(dir, 'foreign.db')
  writeFileSync(foreign, 'not a database at all, just text')
  assert.throws(() => open(foreign, { readOnly: true }))
  assert.equal(readFileSync(foreign, 'utf8'), 'not a database at all, just text')
  // readOnly belongs to SQLite.
  assert.throws(() => Store.memory({ readOnly: true }), { code: 'VALIDATION' })
  assert.throws(() => open(empty, { readOnly: 'yes' }), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'readOnly')
})

test('readOnly: reads work, every write fails with STORAGE and changes nothing', async () => {
  const db = tempDb()
  const writer = open(db)
  const h = writer.create({ taskId: 't', goal: 'g', fromAgent: 'alice' })
  const claimed = writer.create({ taskId: 't', goal: 'g2', fromAgent: 'alice', parentId: h.id })
  const claim = writer.claim(claimed.id, 'bob')
  const reader = open(db, { readOnly: true })
  const readerAsync = await openAsync(db, { readOnly: true })
  for (const r of [reader, readerAsync]) {
    assert.deepEqual(r.get(h.id), writer.get(h.id))
    assert.equal(r.list().length, 2)
    assert.equal((await r.listAsync({ status: 'claimed' })).length, 1)
    assert.equal(r.events().length, writer.events().length)
    assert.equal(r.chain('t').hops.length, 2)
    assert.ok(Array.isArray(r.stats()))
    assert.deepEqual(r.stalled(0), writer.stalled(0))
    assert.equal(r.savedPolicy(), null)
  }
  const before = JSON.stringify([writer.list(), writer.events()])
  const writes = [
    ['create', [{ taskId: 't', goal: 'g' }]],
    ['createMany', [[{ taskId: 't', goal: 'g' }]]],
    ['claim', [h.id, 'bob']],
    ['claimNext', ['bob']],
    ['heartbeat', [claim]],
    ['release', [claim, { reason: 'x' }]],
    ['complete', [claim]],
    ['cancelClaim', [claim]],
    ['reject', [h.id, 'bob', { reason: 'no' }]],
    ['cancel', [h.id, 'alice']],
    ['checkpoint', ['t', 'bob', { goal: 'g' }]],
    ['savePolicy', []],
  ]
  for (const [method, args] of writes) {
    assert.throws(() => reader[method](...args), (err) => {
      assert.equal(err.code, 'STORAGE', `${method}: ${err.message}`)
      assert.match(err.message, /read-only/)
      return true
    }, method)
    await assert.rejects(reader[`${method}Async`](...args), { code: 'STORAGE' }, `${method}Async`)
  }
  assert.equal(JSON.stringify([writer.list(), writer.events()]), before)
})

test('savePolicy: a later open(path) applies the saved policy and limits unless it brings its own', async () => {
  const db = tempDb()
  const first = open(db, { policy: { maxHandoffs: 2, collaborators: { a: ['b'], b: ['c', 'a'] } }, limits: { maxFieldBytes: 100, maxDepth: 8 } })
  assert.equal(first.savedPolicy(), null)
  assert.equal(first.savePolicy(), undefined)
  const saved = {
    policy: { maxHandoffs: 2, maxRevisits: 0, collaborators: { a: ['b'], b: ['a', 'c'] } },
    limits: { maxRecordBytes: 256 * 1024, maxFieldBytes: 100, maxListItems: 1024, maxDepth: 8 },
  }
  assert.deepEqual(first.savedPolicy(), saved)
  assert.deepEqual(await first.savedPolicyAsync(), saved)

  const second = open(db)
  assert.deepEqual(second.savedPolicy(), saved)
  // The saved limits apply...
  assert.throws(() => second.create({ taskId: 'x', goal: 'y'.repeat(101) }), (err) =>
    err.code === 'VALIDATION' && err.problems.some((p) => p.field === 'goal'))
  let deep = 1
  for (let i = 0; i < 10; i++) deep = { d: deep }
  assert.throws(() => second.create({ taskId: 'x', goal: 'g', metadata: deep }), { code: 'VALIDATION' })
  // ...and so does the saved policy: a → c is no collaboration, and a third hop is too many.
  assert.throws(() => second.create({ taskId: 'x', goal: 'g', fromAgent: 'a', toAgent: 'c' }), { code: 'CHAIN_VIOLATION' })
  second.create({ taskId: 'x', goal: 'g', fromAgent: 'a', toAgent: 'b' })
  second.create({ taskId: 'x', goal: 'g', fromAgent: 'b', toAgent: 'c' })
  assert.throws(() => second.create({ taskId: 'x', goal: 'g', fromAgent: 'c', toAgent: 'a' }), { code: 'CHAIN_VIOLATION' })
  // The same through openAsync and a read-only open.
  const third = await openAsync(db)
  await assert.rejects(third.createAsync({ taskId: 'y', goal: 'g', fromAgent: 'a', toAgent: 'c' }), { code: 'CHAIN_VIOLATION' })
  assert.deepEqual(open(db, { readOnly: true }).savedPolicy(), saved)

  // An opener's own policy wins over the saved one (its limits stay the saved ones).
  const own = open(db, { policy: { maxHandoffs: 5 } })
  own.create({ taskId: 'z', goal: 'g', fromAgent: 'a', toAgent: 'c' })
  assert.throws(() => own.create({ taskId: 'z', goal: 'y'.repeat(101) }), { code: 'VALIDATION' })
  // What savedPolicy returns is valid open options.
  const again = open(db, first.savedPolicy())
  assert.throws(() => again.create({ taskId: 'w', goal: 'g', fromAgent: 'a', toAgent: 'c' }), { code: 'CHAIN_VIOLATION' })
  // An open policy (no collaborators) round-trips as null, not as "nobody".
  const db2 = tempDb()
  open(db2, { policy: { maxHandoffs: 3 } }).savePolicy()
  assert.equal(open(db2).savedPolicy().policy.collaborators, null)
  open(db2).create({ taskId: 'q', goal: 'g', fromAgent: 'a', toAgent: 'z' })
  // Store.memory saves into its own memory.
  const memory = Store.memory({ limits: { maxListItems: 3 } })
  await memory.savePolicyAsync()
  assert.equal(memory.savedPolicy().limits.maxListItems, 3)
})

test('store files are created private (0600)', () => {
  const db = tempDb()
  open(db).create({ taskId: 't', goal: 'g' })
  for (const file of [db, `${db}-wal`, `${db}-shm`, `${db}-lock`]) {
    if (existsSync(file)) assert.equal(statSync(file).mode & 0o777, 0o600, file)
  }
})

test('maxDepth over 100 is refused by name; 100 is allowed', () => {
  for (const make of [(o) => Store.memory(o), (o) => open(':memory:', o), (o) => open(tempDb(), o)]) {
    for (const maxDepth of [101, 1000, 2 ** 31]) {
      assert.throws(() => make({ limits: { maxDepth } }), (err) => {
        assert.equal(err.code, 'VALIDATION', err.message)
        assert.deepEqual(err.problems.map((p) => p.field), ['limits.maxDepth'])
        assert.match(err.problems[0].rule, /at most 100/)
        return true
      })
    }
    assert.throws(() => make({ limits: { maxDepth: 0 } }), { code: 'VALIDATION' })
    make({ limits: { maxDepth: 100 } })
  }
  // Nothing was created by a refused open.
  const db = tempDb()
  assert.throws(() => open(db, { limits: { maxDepth: 500 } }), { code: 'VALIDATION' })
  assert.ok(!existsSync(db))
})

test('events in pages: 1,000 events read by cursor, by task and by handoff', async () => {
  for (const store of [Store.memory(), open(tempDb(), { synchronous: 'normal' })]) {
    const made = store.createMany(Array.from({ length: 1000 }, (_, i) => ({ taskId: i % 2 ? 'odd' : 'even', goal: `g${i}` })))
    const all = store.events()
    assert.equal(all.length, 1000)
    for (const [filter, expected] of [[{}, all], [{ taskId: 'odd' }, all.filter((_, i) => i % 2)]]) {
      const pages = []
      let after
      for (;;) {
        const page = await store.eventsAsync({ ...filter, after, limit: 64 })
        if (page.length === 0) break
        assert.ok(page.length <= 64)
        pages.push(page)
        after = page.at(-1).seq
      }
      const read = pages.flat()
      assert.deepEqual(read, expected)
      assert.ok(read.every((e, i) => i === 0 || e.seq > read[i - 1].seq))
      assert.equal(pages.length, Math.ceil(expected.length / 64))
    }
    // One handoff's events after a cursor; `id` (the older name) still works.
    const h = made[10]
    const claim = store.claim(h.id, 'bob')
    store.complete(claim)
    const mine = store.events({ handoffId: h.id })
    assert.deepEqual(mine.map((e) => e.kind), ['created', 'claimed', 'completed'])
    assert.deepEqual(store.events({ id: h.id }), mine)
    assert.deepEqual(store.events({ handoffId: h.id, after: mine[0].seq }), mine.slice(1))
    assert.deepEqual(store.events({ handoffId: h.id, after: mine[0].seq, limit: 1 }), mine.slice(1, 2))
    assert.deepEqual(store.events({ after: all.at(-1).seq }).map((e) => e.kind), ['claimed', 'completed'])
    assert.deepEqual(store.events({ limit: 0 }), [])
    // Bad pages are VALIDATION errors naming the key.
    for (const [options, field] of [[{ after: -1 }, 'after'], [{ after: 1.5 }, 'after'], [{ after: '3' }, 'after'],
      [{ limit: -1 }, 'limit'], [{ taskId: 'has space' }, 'taskId'], [{ handoffId: 'a/b' }, 'handoffId'],
      [{ id: h.id, handoffId: h.id }, 'id'], [{ cursor: 3 }, 'cursor']]) {
      assert.throws(() => store.events(options), (err) =>
        err.code === 'VALIDATION' && err.problems.some((p) => p.field === field), JSON.stringify(options))
      await assert.rejects(store.eventsAsync(options), { code: 'VALIDATION' })
    }
  }
})

test('backup copies a store in use into a new owner-only file, never over one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-backup-'))
  const db = join(dir, 'handoff.db')
  const store = open(db)
  const h = store.create({ taskId: 't', goal: 'g' })
  const claim = store.claim(h.id, 'w')
  store.backup(join(dir, 'copy.backup'))
  await store.backupAsync(join(dir, 'copy2.backup'))
  store.complete(claim, { outcome: 'after the backup' })
  assert.equal(statSync(join(dir, 'copy.backup')).mode & 0o777, 0o600)
  // Any store restores it, once: a store with something in it is refused.
  const restored = open(join(dir, 'moved.db'))
  restored.restore(join(dir, 'copy.backup'))
  assert.equal(restored.get(h.id).status, 'claimed')
  assert.equal(restored.complete(claim, { outcome: 'on the copy' }).status, 'completed')
  assert.throws(() => restored.restore(join(dir, 'copy.backup')), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'store')
  const other = open(join(dir, 'moved2.db'))
  await other.restoreAsync(join(dir, 'copy2.backup'))
  assert.equal(other.list().length, 1)
  const before = readFileSync(db)
  assert.throws(() => store.backup(db), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'path')
  assert.deepEqual(readFileSync(db), before)
})
