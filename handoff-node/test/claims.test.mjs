// Claim secrets and cancel rights (docs/design.md §3): only the claimer settles a claim, with the
// claim or a plain reference to it; nothing a caller can read (`get`, `list`, events) does.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, open } from '../index.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-claims-')), 'handoff.db')

/** Runs the sync and the Promise variant of one call; both must fail with `code`. */
async function bothFail(store, method, args, code) {
  let syncError
  try {
    store[method](...args)
  } catch (err) {
    syncError = err
  }
  assert.ok(syncError, `${method} must throw`)
  assert.equal(syncError.code, code, syncError.message)
  await assert.rejects(store[`${method}Async`](...args), (err) => {
    assert.equal(err.code, code)
    assert.equal(err.message, syncError.message)
    return true
  })
  return syncError
}

/** The record and its whole event log: what must not change after a refused call. */
const snapshot = (store, id) => ({ record: store.get(id), events: store.events({ handoffId: id }) })

test('a claim carries its secret; nothing else shows it', () => {
  const store = open(tempDb())
  const h = store.create({ taskId: 't', goal: 'g', fromAgent: 'alice' })
  const claim = store.claim(h.id, 'bob', { leaseSeconds: 60 })
  assert.match(claim.secret, /^hcs_[0-9a-f]{64}$/)
  assert.equal(claim.handoffId, h.id)
  assert.equal(claim.handoffId, claim.handoff.id)
  assert.equal(claim.token, 1)
  assert.equal(claim.leaseSeconds, 60)
  assert.deepEqual(Object.keys(claim).sort(), ['handoff', 'handoffId', 'leaseSeconds', 'secret', 'token'])
  // Two claims never share a secret.
  store.release(claim, { reason: 'again' })
  const again = store.claim(h.id, 'bob')
  assert.notEqual(again.secret, claim.secret)
  const hex = claim.secret.slice(4)
  for (const shown of [store.get(h.id), store.list(), store.events(), store.chain('t'), again.handoff]) {
    assert.ok(!JSON.stringify(shown).includes(hex), 'the secret leaked')
    assert.ok(!JSON.stringify(shown).includes(again.secret.slice(4)), 'the secret leaked')
  }
})

test('a plain reference settles a claim, in this process or another opener of the file', async () => {
  const db = tempDb()
  const store = open(db)
  const other = open(db)
  for (const settle of ['complete', 'release', 'cancelClaim']) {
    const h = store.create({ taskId: `t-${settle}`, goal: 'g' })
    const claim = store.claim(h.id, 'worker', { leaseSeconds: 30 })
    // What a supervisor hands to the process that does the work: four values, as JSON.
    const reference = JSON.parse(JSON.stringify({
      handoffId: claim.handoffId, token: claim.token, secret: claim.secret, leaseSeconds: claim.leaseSeconds,
    }))
    assert.equal(other.heartbeat(reference).status, 'claimed')
    assert.equal((await other.heartbeatAsync(reference)).status, 'claimed')
    const options = settle === 'release' ? { reason: 'later' } : settle === 'cancelClaim' ? { reason: 'stop' } : { outcome: 'ok' }
    const done = await other[`${settle}Async`](reference, options)
    assert.equal(done.status, { complete: 'completed', release: 'pending', cancelClaim: 'cancelled' }[settle])
    assert.equal(store.get(h.id).status, done.status)
  }
  // leaseSeconds is optional in a reference (default 300).
  const h = store.create({ taskId: 't-default', goal: 'g' })
  const claim = store.claim(h.id, 'worker', { leaseSeconds: 5 })
  const beat = store.heartbeat({ handoffId: claim.handoffId, token: claim.token, secret: claim.secret })
  assert.ok(Date.parse(beat.leaseUntil) - Date.parse(beat.heartbeatAt) >= 299_000)
})

test('settling reads only handoffId, token, secret and leaseSeconds, never the record', () => {
  const store = Store.memory()
  const h = store.create({ taskId: 't', goal: 'g' })
  const decoy = store.create({ taskId: 't', goal: 'decoy' })
  const claim = store.claim(h.id, 'bob')
  const read = new Set()
  const watched = new Proxy({ ...claim, handoff: { ...claim.handoff, id: decoy.id } }, {
    get(target, key, receiver) {
      read.add(key)
      return Reflect.get(target, key, receiver)
    },
  })
  assert.equal(store.heartbeat(watched).id, h.id)
  assert.deepEqual([...read].sort(), ['handoffId', 'leaseSeconds', 'secret', 'token'])
  assert.equal(store.get(decoy.id).status, 'pending')
  // A Claim saved before claims had `handoffId` is read by its `handoff.id`.
  const { handoffId, ...older } = claim
  assert.equal(store.complete(older, { outcome: 'ok' }).status, 'completed')
})

test('fail: pending again while attempts remain, then failed with the error; sync and Promise', async () => {
  const store = Store.memory()
  const h = store.create({ taskId: 't', goal: 'g', maxAttempts: 2 })
  const first = store.claim(h.id, 'bob')
  const before = snapshot(store, h.id)
  const err = await bothFail(store, 'fail', [first, { error: ' ' }], 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['error'])
  assert.deepEqual(snapshot(store, h.id), before)
  const retried = store.fail(first, { error: 'the API timed out' })
  assert.equal(retried.status, 'pending')
  assert.equal(retried.attempts, 1)
  await bothFail(store, 'fail', [first, { error: 'again' }], 'LEASE_LOST')
  const failed = await store.failAsync(store.claim(h.id, 'carol'), { error: 'still timing out' })
  assert.equal(failed.status, 'failed')
  assert.equal(failed.outcome, 'still timing out')
  const log = store.events({ handoffId: h.id })
  assert.deepEqual(log.map((e) => e.kind), ['created', 'claimed', 'attempt_failed', 'claimed', 'failed'])
  assert.deepEqual(log[2].detail, { token: 1, error: 'the API timed out' })
  assert.deepEqual(log[4].detail, { token: 2, error: 'still timing out' })
})

test('a missing or malformed secret is VALIDATION naming secret, and changes nothing', async () => {
  const store = Store.memory()
  const h = store.create({ taskId: 't', goal: 'g' })
  const claim = store.claim(h.id, 'bob')
  const before = snapshot(store, h.id)
  const { secret, ...noSecret } = claim
  const bad = [noSecret, { ...claim, secret: undefined }, { ...claim, secret: null }, { ...claim, secret: 42 },
    { ...claim, secret: '' }, { ...claim, secret: 'hcs_xyz' }, { ...claim, secret: claim.secret.toUpperCase() },
    { ...claim, secret: claim.secret.slice(0, -1) }, { ...claim, secret: `${claim.secret}0` },
    { ...claim, secret: claim.secret.slice(4) }, { ...claim, secret: `${claim.secret.slice(0, -1)}\ud800` }]
  for (const ref of bad) {
    for (const [method, options] of [['heartbeat'], ['release', { reason: 'x' }], ['fail', { error: 'x' }], ['complete', {}], ['cancelClaim', {}]]) {
      const err = await bothFail(store, method, [ref, options], 'VALIDATION')
      assert.ok(err.problems.some((p) => p.field === 'secret'), JSON.stringify(err.problems))
    }
  }
  assert.deepEqual(snapshot(store, h.id), before)
})

test('a reference forged from what get() shows fails LEASE_LOST and changes nothing', async () => {
  for (const store of [Store.memory(), open(tempDb())]) {
    const h = store.create({ taskId: 't', goal: 'g', fromAgent: 'alice' })
    const claim = store.claim(h.id, 'bob', { leaseSeconds: 60 })
    const elsewhere = store.create({ taskId: 'u', goal: 'g' })
    const otherClaim = store.claim(elsewhere.id, 'mallory')
    const before = snapshot(store, h.id)
    const seen = store.get(h.id)
    assert.equal(seen.claimToken, claim.token)
    const secrets = [
      `hcs_${'0'.repeat(64)}`,
      `hcs_${'f'.repeat(64)}`,
      otherClaim.secret, // a real secret, of another claim
      `hcs_${claim.secret.slice(4, -1)}${claim.secret.endsWith('0') ? '1' : '0'}`, // one digit off
    ]
    for (const secret of secrets) {
      const forged = { handoffId: seen.id, token: seen.claimToken, secret, leaseSeconds: 60 }
      for (const [method, options] of [['heartbeat'], ['release', { reason: 'mine now' }], ['complete', { outcome: 'forged' }], ['cancelClaim', { reason: 'gone' }]]) {
        const err = await bothFail(store, method, [forged, options], 'LEASE_LOST')
        assert.equal(err.id, h.id)
        assert.equal(err.token, seen.claimToken)
        assert.match(err.reason, /secret/)
        // The claim object with its secret swapped is no better.
        await bothFail(store, method, [{ ...claim, secret }, options], 'LEASE_LOST')
      }
    }
    assert.deepEqual(snapshot(store, h.id), before)
    // The holder still settles it.
    assert.equal(store.complete(claim, { outcome: 'done' }).outcome, 'done')
  }
})

test('cancel rights: the creator by name, the holder with its claim, anyone when there is no creator', async () => {
  const store = open(tempDb())
  // The creator cancels, pending or claimed.
  const pending = store.create({ taskId: 't1', goal: 'g', fromAgent: 'alice' })
  assert.equal(store.cancel(pending.id, 'alice', { reason: 'not needed' }).status, 'cancelled')
  const claimed = store.create({ taskId: 't2', goal: 'g', fromAgent: 'alice' })
  store.claim(claimed.id, 'bob')
  assert.equal((await store.cancelAsync(claimed.id, 'alice')).status, 'cancelled')

  // Anyone else, the holder included, is refused by name, pending or claimed.
  const h = store.create({ taskId: 't3', goal: 'g', fromAgent: 'alice', toAgent: 'bob' })
  let before = snapshot(store, h.id)
  for (const by of ['mallory', 'bob']) {
    const err = await bothFail(store, 'cancel', [h.id, by, { reason: 'mine' }], 'INVALID_TRANSITION')
    assert.equal(err.id, h.id)
    assert.equal(err.status, 'pending')
  }
  assert.deepEqual(snapshot(store, h.id), before)
  const claim = store.claim(h.id, 'bob')
  before = snapshot(store, h.id)
  for (const by of ['mallory', 'bob']) {
    const err = await bothFail(store, 'cancel', [h.id, by], 'INVALID_TRANSITION')
    assert.equal(err.status, 'claimed')
  }
  assert.deepEqual(snapshot(store, h.id), before)
  // The holder cancels with its claim.
  const cancelled = store.cancelClaim(claim, { reason: 'cannot do it' })
  assert.equal(cancelled.status, 'cancelled')
  const last = store.events({ handoffId: h.id }).at(-1)
  assert.equal(last.kind, 'cancelled')
  assert.equal(last.actor, 'bob')
  assert.equal(last.detail.reason, 'cannot do it')
  // A finished handoff accepts no cancel, by claim either.
  before = snapshot(store, h.id)
  await bothFail(store, 'cancelClaim', [claim], 'INVALID_TRANSITION')
  assert.deepEqual(snapshot(store, h.id), before)

  // A record without a creator may be cancelled by anyone.
  const open1 = store.create({ taskId: 't4', goal: 'g' })
  assert.equal(store.cancel(open1.id, 'anyone').status, 'cancelled')
  const open2 = store.create({ taskId: 't5', goal: 'g' })
  store.claim(open2.id, 'bob')
  assert.equal((await store.cancelAsync(open2.id, 'someone-else', { reason: 'stop' })).status, 'cancelled')
})
