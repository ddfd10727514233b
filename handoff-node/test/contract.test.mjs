// The whole contract of docs/design.md §10 (TypeScript), sync and async, on memory and SQLite.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { open, openAsync, ManualClock, Store, toMarkdown } from '../index.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-node-')), 'handoff.db')

const backends = {
  memory: () => Store.memory(),
  'sqlite full': () => open(tempDb()),
  'sqlite normal': () => open(tempDb(), { synchronous: 'normal' }),
}

for (const [name, make] of Object.entries(backends)) {
  describe(`contract on ${name}`, () => {
    test('create → claim → heartbeat → complete, with events and chain', () => {
      const store = make()
      const h = store.create({ taskId: 'task-1', goal: 'Summarise the logs', fromAgent: 'claude', pending: ['read', 'write'] })
      assert.equal(h.status, 'pending')
      assert.equal(h.taskId, 'task-1')
      assert.equal(h.fromAgent, 'claude')
      assert.deepEqual(h.pendingSteps, ['read', 'write'])
      assert.equal(h.claimToken, null)
      assert.match(h.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
      assert.deepEqual(store.get(h.id), h)

      const claim = store.claim(h.id, 'gemini', { leaseSeconds: 60 })
      assert.equal(claim.token, 1)
      assert.equal(claim.leaseSeconds, 60)
      assert.equal(claim.handoff.status, 'claimed')
      assert.equal(claim.handoff.claimedBy, 'gemini')
      assert.ok(Date.parse(claim.handoff.leaseUntil) > Date.parse(claim.handoff.createdAt))

      const beat = store.heartbeat(claim)
      assert.equal(beat.status, 'claimed')
      const done = store.complete(claim, { outcome: 'summary in notes.md' })
      assert.equal(done.status, 'completed')
      assert.equal(done.outcome, 'summary in notes.md')
      assert.notEqual(done.completedAt, null)

      const events = store.events({ id: h.id })
      assert.deepEqual(events.map((e) => e.kind), ['created', 'claimed', 'heartbeat', 'completed'])
      assert.deepEqual(events[0].detail, { taskId: 'task-1', toAgent: null })
      assert.equal(events[1].detail.token, 1)
      assert.equal(events[1].actor, 'gemini')
      assert.equal(events[3].detail.outcome, 'summary in notes.md')
      assert.ok(events.every((e, i) => i === 0 || e.seq > events[i - 1].seq))
      assert.equal(store.events().length, 4)

      const chain = store.chain('task-1')
      assert.equal(chain.text, 'claude → gemini')
      assert.deepEqual(chain.path, ['claude', 'gemini'])
      assert.equal(chain.hops[0].handoffId, h.id)
      assert.equal(chain.hops[0].status, 'completed')
    })

    test('the same lifecycle through the Promise variants', async () => {
      const store = make()
      const h = await store.createAsync({ taskId: 'task-a', goal: 'Port the parser', toAgent: 'gemini' })
      assert.deepEqual(await store.getAsync(h.id), h)
      assert.equal((await store.listAsync({ toAgent: 'gemini' })).length, 1)
      const claim = await store.claimAsync(h.id, 'gemini')
      assert.equal(claim.leaseSeconds, 300)
      await store.heartbeatAsync(claim)
      const done = await store.completeAsync(claim)
      assert.equal(done.status, 'completed')
      assert.equal(done.outcome, '')
      assert.equal((await store.eventsAsync({ id: h.id })).length, 4)
      assert.equal((await store.chainAsync('task-a')).text, '* → gemini')
      assert.equal(await store.claimNextAsync('gemini'), null)
    })

    test('claimNext takes the oldest claimable, respects addressing and taskId', async () => {
      const store = make()
      const a = store.create({ taskId: 't-a', goal: 'first' })
      const b = store.create({ taskId: 't-b', goal: 'for bob only', toAgent: 'bob' })
      const c = store.create({ taskId: 't-c', goal: 'third' })
      assert.equal(store.claimNext('alice', { taskId: 't-c' }).handoff.id, c.id)
      assert.equal(store.claimNext('alice').handoff.id, a.id)
      assert.equal(store.claimNext('alice'), null)
      const bob = await store.claimNextAsync('bob', { leaseSeconds: 30 })
      assert.equal(bob.handoff.id, b.id)
      assert.equal(bob.leaseSeconds, 30)
    })

    test('release makes it pending again with one more attempt; reject and cancel', async () => {
      const store = make()
      const h = store.create({ taskId: 't', goal: 'g', toAgent: 'bob' })
      const claim = store.claim(h.id, 'bob')
      const released = store.release(claim, { reason: 'need a human' })
      assert.equal(released.status, 'pending')
      assert.equal(released.attempts, 1)
      const again = store.claim(h.id, 'bob')
      assert.equal(again.token, 2)
      await store.releaseAsync(again, { reason: 'later' })
      const rejected = store.reject(h.id, 'bob', { reason: 'not my area' })
      assert.equal(rejected.status, 'rejected')
      assert.equal(rejected.outcome, 'not my area')

      const x = store.create({ taskId: 't2', goal: 'g' })
      const cancelled = store.cancel(x.id, 'claude', { reason: 'obsolete' })
      assert.equal(cancelled.status, 'cancelled')
      const y = store.create({ taskId: 't3', goal: 'g', toAgent: 'eve' })
      assert.equal((await store.cancelAsync(y.id, 'claude')).status, 'cancelled')
      const z = store.create({ taskId: 't4', goal: 'g', toAgent: 'eve' })
      assert.equal((await store.rejectAsync(z.id, 'eve', { reason: 'no' })).status, 'rejected')
      const events = store.events({ id: x.id })
      assert.equal(events.at(-1).detail.reason, 'obsolete')
    })

    test('list filters by status, taskId, toAgent, kind and limit', async () => {
      const store = make()
      for (let i = 0; i < 5; i++) store.create({ taskId: `t${i % 2}`, goal: `g${i}`, toAgent: i === 4 ? 'bob' : undefined, kind: i === 3 ? 'escalation' : undefined })
      store.claim(store.list()[0].id, 'x')
      assert.equal(store.list().length, 5)
      assert.equal(store.list({ status: 'claimed' }).length, 1)
      assert.equal(store.list({ status: 'pending' }).length, 4)
      assert.equal(store.list({ taskId: 't0' }).length, 3)
      assert.equal(store.list({ toAgent: 'bob' }).length, 1)
      assert.equal(store.list({ kind: 'escalation' }).length, 1)
      assert.deepEqual(store.list({ limit: 2 }).map((h) => h.goal), ['g0', 'g1'])
      assert.equal((await store.listAsync({ status: 'claimed' })).length, 1)
    })

    test('every create option reaches the record', () => {
      const store = make()
      const parent = store.create({ taskId: 'full', goal: 'parent', fromAgent: 'a', toAgent: 'b' })
      const h = store.create({
        taskId: 'full', goal: 'Everything', fromAgent: 'b', toAgent: 'c', kind: 'partial',
        reason: 'timeout_300s', contextPct: 85, progress: 'half', completed: ['c1'], pending: ['p1'],
        decisions: ['d1'], assumptions: ['a1'], warnings: ['w1'], errors: ['e1'], files: ['f.rs'],
        instructions: 'go', metadata: { k: [1, 'two', { three: true }], n: null }, id: 'my-id-1',
        parentId: parent.id, sessionId: 's-1', blockers: ['b1'], lockedFiles: ['l.rs'],
        priorityItems: ['p'], successCriteria: ['s'], expiresAt: '2099-01-01T00:00:00Z', maxAttempts: 5,
      })
      assert.deepEqual(
        [h.id, h.kind, h.reason, h.contextUsagePercent, h.progressSummary, h.completedSteps, h.pendingSteps,
          h.keyDecisions, h.assumptions, h.warnings, h.unresolvedErrors, h.modifiedFiles, h.instructions,
          h.metadata, h.parentId, h.sessionId, h.blockers, h.lockedFiles, h.priorityItems, h.successCriteria,
          h.expiresAt, h.maxAttempts],
        ['my-id-1', 'partial', 'timeout_300s', 85, 'half', ['c1'], ['p1'], ['d1'], ['a1'], ['w1'], ['e1'],
          ['f.rs'], 'go', { k: [1, 'two', { three: true }], n: null }, parent.id, 's-1', ['b1'], ['l.rs'],
          ['p'], ['s'], '2099-01-01T00:00:00.000000Z', 5],
      )
      // A Date is accepted for expiresAt and stored as the same instant.
      const d = store.create({ taskId: 'dated', goal: 'g', expiresAt: new Date('2099-01-01T00:00:00.250Z') })
      assert.equal(Date.parse(d.expiresAt), Date.parse('2099-01-01T00:00:00.250Z'))
      // Same id and content: the same record back (idempotent create).
      const again = store.create({
        taskId: 'full', goal: 'Everything', fromAgent: 'b', toAgent: 'c', kind: 'partial',
        reason: 'timeout_300s', contextPct: 85, progress: 'half', completed: ['c1'], pending: ['p1'],
        decisions: ['d1'], assumptions: ['a1'], warnings: ['w1'], errors: ['e1'], files: ['f.rs'],
        instructions: 'go', metadata: { k: [1, 'two', { three: true }], n: null }, id: 'my-id-1',
        parentId: parent.id, sessionId: 's-1', blockers: ['b1'], lockedFiles: ['l.rs'],
        priorityItems: ['p'], successCriteria: ['s'], expiresAt: '2099-01-01T00:00:00Z', maxAttempts: 5,
      })
      assert.deepEqual(again, h)
    })

    test('createMany is all or nothing', async () => {
      const store = make()
      const made = store.createMany([{ taskId: 'm1', goal: 'a' }, { taskId: 'm2', goal: 'b' }])
      assert.deepEqual(made.map((h) => h.goal), ['a', 'b'])
      assert.equal((await store.createManyAsync([{ taskId: 'm3', goal: 'c' }])).length, 1)
      assert.throws(() => store.createMany([{ taskId: 'm4', goal: 'd' }, { taskId: 'm5', goal: '' }]), { code: 'VALIDATION' })
      assert.equal(store.list().length, 3)
    })

    test('checkpoint and stalled', async () => {
      const store = make()
      const h = store.create({ taskId: 'cp', goal: 'g', fromAgent: 'a' })
      store.claim(h.id, 'b')
      const cp = store.checkpoint('cp', 'b', { goal: 'g', progress: 'halfway', completed: ['x'] })
      assert.equal(cp.kind, 'checkpoint')
      assert.equal(cp.fromAgent, 'b')
      assert.equal(cp.toAgent, 'b')
      assert.equal(cp.parentId, h.id)
      assert.equal(cp.progressSummary, 'halfway')
      const cp2 = await store.checkpointAsync('cp', 'b', { goal: 'g', progress: 'more' })
      assert.equal(cp2.kind, 'checkpoint')
      assert.equal(store.chain('cp').hops.length, 1, 'checkpoints are not hops')
      assert.deepEqual(store.stalled(3600), [])
      assert.deepEqual(await store.stalledAsync(0), ['cp'])
      assert.throws(() => store.checkpoint('cp', 'b', { goal: 'g', kind: 'full' }), { code: 'VALIDATION' })
    })

    test('reap settles nothing when nothing is due', async () => {
      const store = make()
      store.create({ taskId: 'r', goal: 'g' })
      assert.equal(store.reap(), 0)
      assert.equal(await store.reapAsync(), 0)
    })

    test('toMarkdown renders the DNA', () => {
      const store = make()
      const h = store.create({ taskId: 'md', goal: 'Fix the login bug', pending: ['write a failing test'], warnings: ['flaky CI'] })
      const md = toMarkdown(h)
      assert.match(md, /## Current Goal\n\nFix the login bug/)
      assert.match(md, /- \[ \] write a failing test/)
      assert.match(md, /## Warnings/)
      assert.doesNotMatch(md, /## Assumptions/)
    })
  })
}

test('open and openAsync share one file; ":memory:" works', async () => {
  const path = tempDb()
  const a = open(path)
  const b = await openAsync(path, { synchronous: 'normal' })
  const h = a.create({ taskId: 'shared', goal: 'g' })
  assert.deepEqual(b.get(h.id), h)
  const mem = open(':memory:')
  assert.equal(mem.list().length, 0)
})

test('policy and limits options reach the core', () => {
  const store = Store.memory({ policy: { maxHandoffs: 1 } })
  store.create({ taskId: 'p', goal: 'g', fromAgent: 'a', toAgent: 'b' })
  assert.throws(() => store.create({ taskId: 'p', goal: 'g', fromAgent: 'b', toAgent: 'c' }), (err) => {
    assert.equal(err.code, 'CHAIN_VIOLATION')
    assert.equal(err.taskId, 'p')
    assert.deepEqual(err.path, ['a', 'b', 'c'])
    assert.deepEqual(err.rule, { rule: 'max_handoffs', limit: 1 })
    return true
  })
  const loops = Store.memory({ policy: { maxRevisits: 1, collaborators: { a: ['b'], b: ['a'] } } })
  loops.create({ taskId: 'l', goal: 'g', fromAgent: 'a', toAgent: 'b' })
  loops.create({ taskId: 'l', goal: 'g', fromAgent: 'b', toAgent: 'a' })
  assert.throws(() => loops.create({ taskId: 'm', goal: 'g', fromAgent: 'a', toAgent: 'c' }), {
    code: 'CHAIN_VIOLATION',
    rule: { rule: 'not_collaborator', from: 'a', to: 'c' },
  })
  const small = Store.memory({ limits: { maxFieldBytes: 10 } })
  assert.throws(() => small.create({ taskId: 's', goal: 'more than ten bytes' }), { code: 'VALIDATION' })
})

test('revisits are refused by the default policy', () => {
  const store = Store.memory()
  store.create({ taskId: 'r', goal: 'g', fromAgent: 'a', toAgent: 'b' })
  assert.throws(() => store.create({ taskId: 'r', goal: 'g', fromAgent: 'b', toAgent: 'a' }), {
    code: 'CHAIN_VIOLATION',
    rule: { rule: 'revisit', agent: 'a', limit: 0 },
  })
})

test('a ManualClock drives leases, expiry and stalled without waiting', async () => {
  const clock = new ManualClock('2026-03-01T12:00:00Z')
  assert.equal(clock.now(), '2026-03-01T12:00:00.000000Z')
  for (const store of [Store.memory({ clock }), open(':memory:', { clock }), await openAsync(':memory:', { clock })]) {
    clock.set('2026-03-01T12:00:00Z')
    const h = store.create({ taskId: 'clocked', goal: 'g' })
    assert.equal(h.createdAt, '2026-03-01T12:00:00.000000Z')
    const first = store.claim(h.id, 'slow', { leaseSeconds: 60 })
    assert.equal(first.handoff.leaseUntil, '2026-03-01T12:01:00.000000Z')
    assert.deepEqual(store.stalled(30), [])
    clock.advance(61)
    assert.deepEqual(store.stalled(30), ['clocked'])
    const second = store.claimNext('fast')
    assert.equal(second.token, 2)
    assert.throws(() => store.complete(first), { code: 'LEASE_LOST' })
    store.complete(second)
    // expiresAt passes on the clock too.
    const soon = store.create({ taskId: 'soon', goal: 'g', expiresAt: new Date(Date.parse(clock.now()) + 1000) })
    clock.advance(2)
    assert.equal(store.reap(), 1)
    assert.equal(store.get(soon.id).status, 'expired')
  }
  const epoch = new ManualClock()
  assert.equal(epoch.now(), '2026-01-01T00:00:00.000000Z')
  epoch.set(new Date('2027-01-01T00:00:00.500Z'))
  assert.equal(epoch.now(), '2027-01-01T00:00:00.500000Z')
  assert.throws(() => new ManualClock('yesterday'), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'start')
  assert.throws(() => new ManualClock(5), { code: 'VALIDATION' })
  assert.throws(() => epoch.advance(-1), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'seconds')
  assert.throws(() => epoch.advance('1'), { code: 'VALIDATION' })
  assert.throws(() => epoch.set(null), { code: 'VALIDATION' })
  assert.throws(() => Store.memory({ clock: {} }), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'clock')
  assert.throws(() => open(':memory:', { clock: 'now' }), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'clock')
})

test('stats: per from→to pair counts and median times', async () => {
  const clock = new ManualClock('2026-05-01T00:00:00Z')
  const store = Store.memory({ clock })
  const a = store.create({ taskId: 's1', goal: 'g', fromAgent: 'planner', toAgent: 'coder' })
  const b = store.create({ taskId: 's2', goal: 'g', fromAgent: 'planner', toAgent: 'coder' })
  store.create({ taskId: 's3', goal: 'g', fromAgent: 'planner', toAgent: 'reviewer' })
  clock.advance(10)
  const c = store.claim(a.id, 'coder')
  clock.advance(20)
  store.complete(c)
  store.reject(b.id, 'coder', { reason: 'no' })
  const stats = store.stats()
  assert.deepEqual(stats, await store.statsAsync())
  const coder = stats.find((s) => s.fromAgent === 'planner' && s.toAgent === 'coder')
  assert.deepEqual(coder, {
    fromAgent: 'planner', toAgent: 'coder', total: 2, completed: 1, failed: 0, rejected: 1,
    medianClaimSeconds: 10, medianCompleteSeconds: 30,
  })
  const reviewer = stats.find((s) => s.toAgent === 'reviewer')
  assert.equal(reviewer.total, 1)
  assert.equal(reviewer.medianClaimSeconds, null)
  // The queue at a glance: per status and addressee.
  assert.deepEqual(store.queueCounts(), [
    { status: 'completed', toAgent: 'coder', count: 1 },
    { status: 'pending', toAgent: 'reviewer', count: 1 },
    { status: 'rejected', toAgent: 'coder', count: 1 },
  ])
  assert.deepEqual(await store.queueCountsAsync(), store.queueCounts())
})
