// `store.withLease(claim, work)`, the JavaScript form of `with store.lease(claim):` (issue #19):
// the core heartbeats from a thread of its own while the work runs, then the claim is completed
// with the work's outcome, or failed with its error, which is rethrown as it is.
//
// The stores stand on a ManualClock, so no lease can lapse while a test waits: the heartbeats
// are seen in the event log, each wait bounded by a generous deadline (a liveness bound, not a
// timing claim).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { Lease, ManualClock, Store, open } from '../index.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))

/** A store whose clock stands still, and a handoff claimed on it with a 30 ms lease. */
function claimed(options = {}) {
  const store = Store.memory({ clock: new ManualClock() })
  const h = store.create({ taskId: 't', goal: 'port the billing service', fromAgent: 'boss', ...options })
  return { store, h, claim: store.claim(h.id, 'worker', { leaseSeconds: 0.03 }) }
}

const DEADLINE_MS = 60_000
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until `done()`, giving the event loop a turn between looks. */
async function until(done, what) {
  const deadline = Date.now() + DEADLINE_MS
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`gave up waiting for ${what}`)
    await sleep(5)
  }
}

const beats = (store, id) => store.events({ handoffId: id }).filter((e) => e.kind === 'heartbeat').length
const lastEvent = (store, id) => store.events({ handoffId: id }).at(-1)

test('the claim is renewed while the work runs, then completed with the outcome it returns', async () => {
  const { store, h, claim } = claimed()
  let held
  const done = await store.withLease(claim, async (lease) => {
    held = lease
    assert.ok(lease instanceof Lease)
    assert.equal(lease.lost, false)
    assert.deepEqual(lease.claim, { handoffId: h.id, token: claim.token, secret: claim.secret, leaseSeconds: 0.03 })
    await until(() => beats(store, h.id) >= 2, 'two heartbeats')
    assert.equal(lease.lost, false)
    return 'ported'
  })
  assert.equal(done.result, 'ported')
  assert.equal(done.handoff.id, h.id)
  assert.equal(done.handoff.status, 'completed')
  assert.equal(done.handoff.outcome, 'ported')
  assert.deepEqual(store.get(h.id), done.handoff)
  assert.equal(lastEvent(store, h.id).kind, 'completed')
  // Settled: the lease says so clearly, and still names its claim.
  assert.throws(() => held.lost, (err) => err.code === 'LEASE_LOST' && err.id === h.id && /settled/.test(err.reason))
  assert.equal(held.claim.handoffId, h.id)
})

test('the heartbeats go on while the JavaScript thread is busy', async () => {
  const { store, h, claim } = claimed()
  const { result } = await store.withLease(claim, () => {
    // Sync work holding the thread: only the core's own thread can renew the claim meanwhile.
    const deadline = Date.now() + DEADLINE_MS
    while (beats(store, h.id) < 2) {
      if (Date.now() > deadline) assert.fail('gave up waiting for two heartbeats')
    }
    return 42
  })
  assert.equal(result, 42)
  assert.equal(store.get(h.id).status, 'completed')
})

test('the outcome: a string returned, else options.outcome, else a function of the value', async () => {
  const { store } = claimed()
  const make = () => store.claim(store.create({ taskId: 't', goal: 'g' }).id, 'worker')
  const report = { files: 3 }

  let done = await store.withLease(make(), () => report)
  assert.equal(done.result, report, 'the value as it is')
  assert.equal(done.handoff.outcome, '')

  done = await store.withLease(make(), async () => report, { outcome: 'three files' })
  assert.equal(done.handoff.outcome, 'three files')

  done = await store.withLease(make(), async () => 'said so', { outcome: 'fallback' })
  assert.equal(done.handoff.outcome, 'said so', 'a string returned is the outcome')

  done = await store.withLease(make(), async () => report, { outcome: (r) => `${r.files} files` })
  assert.equal(done.handoff.outcome, '3 files')
  assert.equal(done.result, report)

  done = await store.withLease(make(), () => undefined, { outcome: null })
  assert.equal(done.result, undefined)
  assert.equal(done.handoff.status, 'completed')

  // A claim reference serves as the claim.
  const c = make()
  done = await store.withLease({ handoffId: c.handoffId, token: c.token, secret: c.secret }, () => 'by reference')
  assert.equal(done.handoff.outcome, 'by reference')
})

test('work that throws or rejects fails the claim, and its error comes back as it was', async () => {
  const { store, h, claim } = claimed({ maxAttempts: 3 })
  const failure = new RangeError('the billing API timed out')
  failure.stack = 'RangeError: the billing API timed out\n    at secret/place.js:1:1'
  await assert.rejects(store.withLease(claim, async () => { await sleep(1); throw failure }), (err) => err === failure)
  let record = store.get(h.id)
  assert.equal(record.status, 'pending', 'back in the queue')
  assert.equal(record.attempts, 1)
  const event = lastEvent(store, h.id)
  assert.equal(event.kind, 'attempt_failed')
  assert.equal(event.detail.error, 'the billing API timed out', 'the message, not the stack')

  // Thrown synchronously: the same, and withLease still returns a Promise.
  const again = store.claim(h.id, 'worker', { leaseSeconds: 0.03 })
  const promise = store.withLease(again, () => { throw failure })
  assert.ok(promise instanceof Promise)
  await assert.rejects(promise, (err) => err === failure)
  record = store.get(h.id)
  assert.deepEqual([record.status, record.attempts], ['pending', 2])

  // Whatever is thrown comes back unchanged; the claim's error is its message, or says none.
  const third = store.claim(h.id, 'worker')
  await assert.rejects(store.withLease(third, () => Promise.reject(new Error())), (err) => err instanceof Error && err.message === '')
  record = store.get(h.id)
  assert.deepEqual([record.status, record.attempts], ['failed', 3], 'the last attempt')
  assert.equal(record.outcome, 'the work failed without a message')

  for (const thrown of ['plain text', 7, null, { why: 'an object' }]) {
    const { store: s, h: other, claim: c } = claimed()
    await assert.rejects(s.withLease(c, () => { throw thrown }), (err) => err === thrown)
    assert.equal(lastEvent(s, other.id).detail.error, thrown === 'plain text' ? 'plain text' : 'the work failed without a message')
  }
})

test('an outcome function that throws or gives no string fails the claim too', async () => {
  const { store, h, claim } = claimed()
  const failure = new TypeError('cannot summarise')
  await assert.rejects(store.withLease(claim, () => ({}), { outcome: () => { throw failure } }), (err) => err === failure)
  assert.equal(lastEvent(store, h.id).detail.error, 'cannot summarise')

  const again = store.claim(h.id, 'worker')
  await assert.rejects(store.withLease(again, () => ({}), { outcome: () => 5 }), (err) => {
    assert.equal(err.code, 'VALIDATION')
    assert.deepEqual(err.problems, [{ field: 'outcome', rule: 'must give a string, gave a number' }])
    return true
  })
  assert.equal(store.get(h.id).status, 'pending')
  assert.match(lastEvent(store, h.id).detail.error, /outcome: must give a string/)
})

test('a cancelled handoff: lease.lost turns true and completing rejects with LEASE_LOST', async () => {
  const { store, h, claim } = claimed()
  let sawLost = false
  await assert.rejects(store.withLease(claim, async (lease) => {
    store.cancel(h.id, 'boss')
    await until(() => lease.lost, 'a heartbeat to find the claim gone')
    sawLost = lease.lost
    return 'too late'
  }), (err) => {
    assert.equal(err.code, 'LEASE_LOST')
    assert.equal(err.id, h.id)
    return true
  })
  assert.equal(sawLost, true)
  assert.equal(store.get(h.id).status, 'cancelled', 'nothing written over the cancellation')

  // Work that fails after its claim was lost: its own error still comes back.
  const { store: s, h: other, claim: c } = claimed()
  const failure = new Error('gave up')
  await assert.rejects(s.withLease(c, async (lease) => {
    s.cancel(other.id, 'boss')
    await until(() => lease.lost, 'a heartbeat to find the claim gone')
    throw failure
  }), (err) => err === failure)
})

test('a forged claim is lost at the first heartbeat', async () => {
  const { store, h, claim } = claimed()
  const forged = { ...claim, secret: `hcs_${'0'.repeat(64)}` }
  await assert.rejects(store.withLease(forged, async (lease) => {
    await until(() => lease.lost, 'the heartbeat to be refused')
    return 'mine'
  }), (err) => err.code === 'LEASE_LOST')
  assert.equal(store.get(h.id).status, 'claimed', 'the real claim is untouched')
  assert.equal(store.complete(claim, { outcome: 'real' }).outcome, 'real')
})

test('bad arguments reject with VALIDATION, every problem at once, and nothing is held', async () => {
  const { store, h, claim } = claimed()
  let called = false
  const work = () => { called = true }
  const invalid = async (args, fields) => {
    const promise = store.withLease(...args)
    assert.ok(promise instanceof Promise, 'rejects, never throws')
    await assert.rejects(promise, (err) => {
      assert.equal(err.code, 'VALIDATION', err.message)
      assert.deepEqual(err.problems.map((p) => p.field), fields)
      return true
    })
  }
  await invalid([undefined, work], ['claim'])
  await invalid([{}, work], ['handoffId', 'token', 'secret'])
  await invalid([{ ...claim, token: '1' }, work], ['token'])
  await invalid([{ ...claim, secret: 'nope' }, work], ['secret'])
  await invalid([claim], ['work'])
  await invalid([claim, 'not a function'], ['work'])
  await invalid([claim, work, 'fast'], ['options'])
  await invalid([claim, work, { outcome: 3, after: 1 }], ['after', 'outcome'])
  await invalid([claim, work, { outcome: '\ud800' }], ['outcome'])
  await invalid([{}, 5, { outcome: [] }], ['handoffId', 'token', 'secret', 'work', 'outcome'])
  assert.equal(called, false)
  assert.deepEqual(store.events({ handoffId: h.id }).map((e) => e.kind), ['created', 'claimed'])

  // A string returned that is not Unicode text: the claim is failed and the Promise rejects.
  await assert.rejects(store.withLease(claim, () => 'half a pair: \ud800'), (err) => {
    assert.equal(err.code, 'VALIDATION')
    assert.deepEqual(err.problems.map((p) => p.field), ['outcome'])
    return true
  })
  assert.equal(store.get(h.id).status, 'pending')
})

test('no value given to withLease crashes Node or throws instead of rejecting', async () => {
  const { store, claim } = claimed()
  const cyclic = {}
  cyclic.c = cyclic
  const values = [undefined, null, true, 0, NaN, 2 ** 64, 10n, '', 'x', Symbol('s'), [], {}, cyclic, new Date(),
    new Proxy({}, {}), Object.create(null), { outcome: () => 1 }, { ...claim, token: -1 }, { ...claim, leaseSeconds: -1 }]
  for (const a of values) {
    for (const args of [[a], [a, a], [a, a, a], [claim, a], [claim, () => 'x', a], [a, () => 'x']]) {
      let promise
      try {
        promise = store.withLease(...args)
      } catch (err) {
        assert.fail(`withLease threw instead of rejecting: ${err.message}`)
      }
      await promise.then(() => {}, (err) => {
        if (!(err instanceof Error) || typeof err.code !== 'string') assert.fail(`rejected without a code: ${err}`)
      })
    }
  }
})

test('on SQLite, across a reopen, a lease completes what it held', async () => {
  const db = join(mkdtempSync(join(tmpdir(), 'handoff-lease-')), 'handoff.db')
  const store = open(db)
  const h = store.create({ taskId: 't', goal: 'g' })
  const claim = await store.claimAsync(h.id, 'worker', { leaseSeconds: 60 })
  const { handoff } = await store.withLease(claim, async () => {
    await store.checkpointAsync('t', 'worker', { goal: 'halfway' })
    return 'done'
  })
  assert.equal(handoff.status, 'completed')
  assert.equal(open(db, { readOnly: true }).get(h.id).outcome, 'done')
})

test('work that never settles does not keep Node running', () => {
  // The heartbeats run on the core's thread and hold nothing of Node's event loop: a process
  // whose work waits on nothing exits, and its claim lapses as it would on a crash.
  const script = `
    import { Store } from 'handoff-core'
    const store = Store.memory()
    const h = store.create({ taskId: 't', goal: 'g' })
    store.withLease(store.claim(h.id, 'worker', { leaseSeconds: 0.03 }), () => new Promise(() => {}))
    console.log('started')
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, timeout: DEADLINE_MS })
  assert.equal(out.toString().trim(), 'started')
})

test('work whose Promise is dropped unsettled fails its claim once collected', () => {
  // Nothing can settle it any more: the core's lease, dropped, gives the work back at once
  // (its DROPPED error) instead of holding it until the process ends.
  const script = `
    import { ManualClock, Store } from 'handoff-core'
    const store = Store.memory({ clock: new ManualClock() })
    const h = store.create({ taskId: 't', goal: 'g' })
    ;(() => { store.withLease(store.claim(h.id, 'worker', { leaseSeconds: 0.03 }), () => new Promise(() => {})) })()
    const deadline = Date.now() + ${DEADLINE_MS}
    let last = store.events({ handoffId: h.id }).at(-1)
    while (last.kind !== 'attempt_failed' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      globalThis.gc()
      last = store.events({ handoffId: h.id }).at(-1)
    }
    console.log(JSON.stringify([store.get(h.id).status, last.detail.error ?? last.kind]))
  `
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { cwd: root, timeout: 2 * DEADLINE_MS })
  assert.deepEqual(JSON.parse(out.toString()), ['pending', 'the holder stopped without completing or failing its claim'])
})
