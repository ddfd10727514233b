// Errors: every code, sync and Promise alike, with the core's details; fencing; bad input of
// every type becomes VALIDATION naming the field, and nothing a caller passes crashes Node.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { AgentRegistry, ContextBuilder, ManualClock, Store, open, openAsync, redact, toMarkdown, handoffToJson, handoffFromJson } from '../index.mjs'

/** Runs `call` sync and async and checks both fail alike; returns the sync error. */
async function failsAlike(syncCall, asyncCall, code) {
  let syncError
  try {
    syncCall()
  } catch (err) {
    syncError = err
  }
  assert.ok(syncError instanceof Error, 'the sync call must throw an Error')
  assert.equal(syncError.code, code, syncError.message)
  let asyncError
  await asyncCall().then(
    () => assert.fail('the Promise must reject'),
    (err) => { asyncError = err },
  )
  assert.ok(asyncError instanceof Error, 'the Promise must reject with an Error')
  assert.equal(asyncError.code, code)
  assert.equal(asyncError.message, syncError.message)
  for (const key of ['id', 'holder', 'token', 'reason', 'status', 'event', 'problems']) {
    assert.deepEqual(asyncError[key], syncError[key], `detail ${key}`)
  }
  return syncError
}

test('NOT_FOUND names the id', async () => {
  const s = Store.memory()
  const err = await failsAlike(() => s.get('nope'), () => s.getAsync('nope'), 'NOT_FOUND')
  assert.equal(err.id, 'nope')
})

test('ALREADY_CLAIMED names the holder; INVALID_TRANSITION the status and event', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const claim = s.claim(h.id, 'alice')
  const err = await failsAlike(() => s.claim(h.id, 'bob'), () => s.claimAsync(h.id, 'bob'), 'ALREADY_CLAIMED')
  assert.equal(err.holder, 'alice')
  assert.equal(err.id, h.id)
  s.complete(claim)
  const bad = await failsAlike(() => s.claim(h.id, 'bob'), () => s.claimAsync(h.id, 'bob'), 'INVALID_TRANSITION')
  assert.equal(bad.status, 'completed')
  assert.equal(bad.event, 'claim')
  const addressed = s.create({ taskId: 't2', goal: 'g', toAgent: 'carol' })
  await failsAlike(() => s.claim(addressed.id, 'bob'), () => s.claimAsync(addressed.id, 'bob'), 'INVALID_TRANSITION')
  await failsAlike(() => s.reject(addressed.id, 'bob', { reason: 'x' }), () => s.rejectAsync(addressed.id, 'bob', { reason: 'x' }), 'INVALID_TRANSITION')
})

test('fencing: a stale token gets LEASE_LOST and changes nothing', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const first = s.claim(h.id, 'alice')
  s.release(first, { reason: 'stepping away' })
  const second = s.claim(h.id, 'bob')
  assert.equal(second.token, first.token + 1)
  for (const [sync, async] of [
    [() => s.heartbeat(first), () => s.heartbeatAsync(first)],
    [() => s.complete(first, { outcome: 'stale' }), () => s.completeAsync(first, { outcome: 'stale' })],
    [() => s.release(first, { reason: 'stale' }), () => s.releaseAsync(first, { reason: 'stale' })],
  ]) {
    const err = await failsAlike(sync, async, 'LEASE_LOST')
    assert.equal(err.token, first.token)
    assert.equal(err.id, h.id)
    assert.match(err.reason, /claimed again with token 2/)
  }
  // A forged token is no better than a stale one.
  await failsAlike(() => s.complete({ ...second, token: 99 }), () => s.completeAsync({ ...second, token: 99 }), 'LEASE_LOST')
  const now = s.get(h.id)
  assert.equal(now.status, 'claimed')
  assert.equal(now.claimedBy, 'bob')
  assert.equal(s.complete(second, { outcome: 'ok' }).status, 'completed')
  await failsAlike(() => s.heartbeat(second), () => s.heartbeatAsync(second), 'LEASE_LOST')
})

test('fencing: a holder whose lease ran out and was re-claimed gets LEASE_LOST', async () => {
  for (const store of [Store.memory(), open(':memory:')]) {
    const h = store.create({ taskId: 't', goal: 'g' })
    const slow = store.claim(h.id, 'slow', { leaseSeconds: 0.05 })
    // Waiting longer than the lease only makes the lapse more certain: no threshold here.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const fast = await store.claimNextAsync('fast')
    assert.equal(fast.handoff.id, h.id)
    assert.equal(fast.token, slow.token + 1)
    assert.equal(fast.handoff.attempts, 1)
    const err = await failsAlike(() => store.complete(slow), () => store.completeAsync(slow), 'LEASE_LOST')
    assert.equal(err.token, slow.token)
    assert.equal(store.complete(fast, { outcome: 'ok' }).status, 'completed')
    const kinds = store.events({ id: h.id }).map((e) => e.kind)
    assert.deepEqual(kinds, ['created', 'claimed', 'lease_expired', 'claimed', 'completed'])
  }
})

test('CONFLICT for the same id with other content', async () => {
  const s = Store.memory()
  s.create({ taskId: 't', goal: 'g', id: 'fixed' })
  const err = await failsAlike(
    () => s.create({ taskId: 't', goal: 'other', id: 'fixed' }),
    () => s.createAsync({ taskId: 't', goal: 'other', id: 'fixed' }),
    'CONFLICT',
  )
  assert.equal(err.id, 'fixed')
})

test('CHAIN_VIOLATION and STORAGE', async () => {
  const s = Store.memory()
  s.create({ taskId: 't', goal: 'g', fromAgent: 'a', toAgent: 'b' })
  const err = await failsAlike(
    () => s.create({ taskId: 't', goal: 'g', fromAgent: 'b', toAgent: 'a' }),
    () => s.createAsync({ taskId: 't', goal: 'g', fromAgent: 'b', toAgent: 'a' }),
    'CHAIN_VIOLATION',
  )
  assert.deepEqual(err.path, ['a', 'b', 'a'])
  const missing = '/nonexistent-dir-for-handoff-tests/x/handoff.db'
  await failsAlike(() => open(missing), () => openAsync(missing), 'STORAGE')
})

test('VALIDATION reports every problem, named as the caller named it', async () => {
  const s = Store.memory()
  const bad = { taskId: 'has space', goal: '', completed: ['ok', 'x'.repeat(70_000)], contextPct: 101, fromAgent: '' }
  const err = await failsAlike(() => s.create(bad), () => s.createAsync(bad), 'VALIDATION')
  const fields = err.problems.map((p) => p.field).sort()
  assert.deepEqual(fields, ['completed[1]', 'contextPct', 'fromAgent', 'goal', 'taskId'])
  for (const p of err.problems) assert.equal(typeof p.rule, 'string')
  assert.match(err.message, /^invalid input: /)
  // kind, reason and expiresAt problems come together too, in the core's order (every face's):
  // values of the wrong type or form first, then the rules about values that read.
  const err2 = await failsAlike(
    () => s.create({ taskId: 't', goal: 'g', kind: 'huge', reason: 'bored', expiresAt: 'tomorrow' }),
    () => s.createAsync({ taskId: 't', goal: 'g', kind: 'huge', reason: 'bored', expiresAt: 'tomorrow' }),
    'VALIDATION',
  )
  assert.deepEqual(err2.problems.map((p) => p.field), ['kind', 'expiresAt', 'reason'])
})

/** Expects VALIDATION naming `field` from the sync and the async variant. */
async function invalid(syncCall, asyncCall, field) {
  const err = await failsAlike(syncCall, asyncCall, 'VALIDATION')
  assert.ok(
    err.problems.some((p) => p.field === field),
    `expected a problem for ${field}, got ${JSON.stringify(err.problems)}`,
  )
}

test('wrong types and values become VALIDATION naming the field', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const claim = s.claim(h.id, 'alice')
  const huge = 'x'.repeat(5_000_000)

  await invalid(() => s.create(), () => s.createAsync(), 'taskId')
  await invalid(() => s.create(undefined), () => s.createAsync(undefined), 'taskId')
  await invalid(() => s.create('t'), () => s.createAsync('t'), 'options')
  await invalid(() => s.create([1]), () => s.createAsync([1]), 'options')
  await invalid(() => s.create({ taskId: 1, goal: 'g' }), () => s.createAsync({ taskId: 1, goal: 'g' }), 'taskId')
  // Without a goal, a handoff takes its task's; a task with none to take refuses it.
  await invalid(() => s.create({ taskId: 'fresh', goal: undefined }), () => s.createAsync({ taskId: 'fresh', goal: undefined }), 'goal')
  await invalid(() => s.create({ taskId: 'fresh', goal: null }), () => s.createAsync({ taskId: 'fresh', goal: null }), 'goal')
  await invalid(() => s.create({ taskId: 't', goal: huge }), () => s.createAsync({ taskId: 't', goal: huge }), 'goal')
  await invalid(() => s.create({ taskId: huge, goal: 'g' }), () => s.createAsync({ taskId: huge, goal: 'g' }), 'taskId')
  await invalid(() => s.create({ taskId: 't', goal: 'g', completed: 'a' }), () => s.createAsync({ taskId: 't', goal: 'g', completed: 'a' }), 'completed')
  await invalid(() => s.create({ taskId: 't', goal: 'g', completed: ['a', 2] }), () => s.createAsync({ taskId: 't', goal: 'g', completed: ['a', 2] }), 'completed[1]')
  await invalid(() => s.create({ taskId: 't', goal: 'g', contextPct: 'lots' }), () => s.createAsync({ taskId: 't', goal: 'g', contextPct: 'lots' }), 'contextPct')
  await invalid(() => s.create({ taskId: 't', goal: 'g', contextPct: 1e9 }), () => s.createAsync({ taskId: 't', goal: 'g', contextPct: 1e9 }), 'contextPct')
  await invalid(() => s.create({ taskId: 't', goal: 'g', contextPct: NaN }), () => s.createAsync({ taskId: 't', goal: 'g', contextPct: NaN }), 'contextPct')
  await invalid(() => s.create({ taskId: 't', goal: 'g', metadata: [] }), () => s.createAsync({ taskId: 't', goal: 'g', metadata: [] }), 'metadata')
  await invalid(() => s.create({ taskId: 't', goal: 'g', metadata: { f() {} } }), () => s.createAsync({ taskId: 't', goal: 'g', metadata: { f() {} } }), 'metadata.f')
  await invalid(() => s.create({ taskId: 't', goal: 'g', metadata: { n: 10n } }), () => s.createAsync({ taskId: 't', goal: 'g', metadata: { n: 10n } }), 'metadata.n')
  await invalid(() => s.create({ taskId: 't', goal: 'g', metadata: { s: Symbol('x') } }), () => s.createAsync({ taskId: 't', goal: 'g', metadata: { s: Symbol('x') } }), 'metadata.s')
  await invalid(() => s.create({ taskId: 't', goal: 'g', expiresAt: new Date(NaN) }), () => s.createAsync({ taskId: 't', goal: 'g', expiresAt: new Date(NaN) }), 'expiresAt')
  await invalid(() => s.create({ taskId: 't', goal: 'g', nope: 1 }), () => s.createAsync({ taskId: 't', goal: 'g', nope: 1 }), 'nope')

  await invalid(() => s.get(42), () => s.getAsync(42), 'id')
  await invalid(() => s.get(undefined), () => s.getAsync(undefined), 'id')
  await invalid(() => s.get('../etc/passwd'), () => s.getAsync('../etc/passwd'), 'id')
  await invalid(() => s.claim(h.id, 7), () => s.claimAsync(h.id, 7), 'agent')
  await invalid(() => s.claim(h.id, 'bob', { leaseSeconds: -1 }), () => s.claimAsync(h.id, 'bob', { leaseSeconds: -1 }), 'leaseSeconds')
  await invalid(() => s.claim(h.id, 'bob', { leaseSeconds: 0 }), () => s.claimAsync(h.id, 'bob', { leaseSeconds: 0 }), 'leaseSeconds')
  await invalid(() => s.claim(h.id, 'bob', { leaseSeconds: '60' }), () => s.claimAsync(h.id, 'bob', { leaseSeconds: '60' }), 'leaseSeconds')
  await invalid(() => s.claim(h.id, 'bob', { leaseSeconds: Infinity }), () => s.claimAsync(h.id, 'bob', { leaseSeconds: Infinity }), 'leaseSeconds')
  await invalid(() => s.claimNext(null), () => s.claimNextAsync(null), 'agent')
  await invalid(() => s.claimNext('bob', { taskId: 5 }), () => s.claimNextAsync('bob', { taskId: 5 }), 'taskId')
  await invalid(() => s.heartbeat(undefined), () => s.heartbeatAsync(undefined), 'claim')
  await invalid(() => s.heartbeat({}), () => s.heartbeatAsync({}), 'handoffId')
  await invalid(() => s.heartbeat({ handoffId: h.id }), () => s.heartbeatAsync({ handoffId: h.id }), 'token')
  await invalid(() => s.heartbeat({ ...claim, token: '1' }), () => s.heartbeatAsync({ ...claim, token: '1' }), 'token')
  await invalid(() => s.heartbeat({ ...claim, token: 1.5 }), () => s.heartbeatAsync({ ...claim, token: 1.5 }), 'token')
  await invalid(() => s.heartbeat({ ...claim, token: 2 ** 60 }), () => s.heartbeatAsync({ ...claim, token: 2 ** 60 }), 'token')
  await invalid(() => s.release(claim), () => s.releaseAsync(claim), 'reason')
  await invalid(() => s.release(claim, { reason: 3 }), () => s.releaseAsync(claim, { reason: 3 }), 'reason')
  await invalid(() => s.release(claim, { reason: huge }), () => s.releaseAsync(claim, { reason: huge }), 'reason')
  await invalid(() => s.complete(claim, { outcome: {} }), () => s.completeAsync(claim, { outcome: {} }), 'outcome')
  await invalid(() => s.reject(h.id, 'alice', {}), () => s.rejectAsync(h.id, 'alice', {}), 'reason')
  await invalid(() => s.cancel(h.id, 12), () => s.cancelAsync(h.id, 12), 'by')
  await invalid(() => s.list({ status: 'done' }), () => s.listAsync({ status: 'done' }), 'status')
  await invalid(() => s.list({ limit: -1 }), () => s.listAsync({ limit: -1 }), 'limit')
  await invalid(() => s.list('pending'), () => s.listAsync('pending'), 'options')
  await invalid(() => s.events({ id: 3 }), () => s.eventsAsync({ id: 3 }), 'id')
  await invalid(() => s.chain(undefined), () => s.chainAsync(undefined), 'taskId')
  await invalid(() => s.stalled('1'), () => s.stalledAsync('1'), 'olderThanSeconds')
  await invalid(() => s.stalled(-5), () => s.stalledAsync(-5), 'olderThanSeconds')
  await invalid(() => s.createMany('x'), () => s.createManyAsync('x'), 'items')
  await invalid(() => s.createMany([{ taskId: 't', goal: 1 }]), () => s.createManyAsync([{ taskId: 't', goal: 1 }]), '[0].goal')
  await invalid(() => s.checkpoint('t', 'a', { goal: 'g', toAgent: 'b' }), () => s.checkpointAsync('t', 'a', { goal: 'g', toAgent: 'b' }), 'toAgent')
  await invalid(() => open(1), () => openAsync(1), 'path')
  await invalid(() => open(':memory:', { synchronous: 'sometimes' }), () => openAsync(':memory:', { synchronous: 'sometimes' }), 'synchronous')
  // The rejected calls changed nothing.
  assert.equal(s.list().length, 1)
  assert.equal(s.get(h.id).status, 'claimed')
})

test('a cyclic value is refused, not recursed into', async () => {
  const s = Store.memory()
  const cyclic = { a: 1 }
  cyclic.self = cyclic
  const err = await failsAlike(
    () => s.create({ taskId: 't', goal: 'g', metadata: cyclic }),
    () => s.createAsync({ taskId: 't', goal: 'g', metadata: cyclic }),
    'VALIDATION',
  )
  assert.match(err.problems[0].field, /^metadata\.self/)
  assert.match(err.problems[0].rule, /cyclic/)
})

test('a throwing getter surfaces as the thrown error, not a crash', () => {
  const s = Store.memory()
  const options = { taskId: 't', get goal() { throw new RangeError('boom') } }
  assert.throws(() => s.create(options), /boom/)
  assert.equal(s.list().length, 0)
})

test('record functions validate their input', () => {
  assert.throws(() => toMarkdown({ goal: 'g' }), { code: 'VALIDATION' })
  assert.throws(() => toMarkdown('x'), { code: 'VALIDATION' })
  assert.throws(() => handoffToJson(null), { code: 'VALIDATION' })
  assert.throws(() => handoffFromJson('{'), { code: 'VALIDATION' })
  assert.throws(() => handoffFromJson(17), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'json')
  // Problems about JSON text name its snake_case fields.
  const h = Store.memory().create({ taskId: 't', goal: 'g' })
  const wire = JSON.parse(handoffToJson(h))
  wire.goal = ''
  wire.context_usage_percent = 300
  assert.throws(() => handoffFromJson(JSON.stringify(wire)), (err) => {
    assert.equal(err.code, 'VALIDATION')
    assert.ok(err.problems.some((p) => p.field === 'context_usage_percent'), JSON.stringify(err.problems))
    return true
  })
  // Problems about a record object name its camelCase fields.
  assert.throws(() => toMarkdown({ ...h, goal: '' }), (err) => err.problems.some((p) => p.field === 'goal'))
  assert.throws(() => toMarkdown({ ...h, pendingSteps: ['', 'x'.repeat(70_000)] }), (err) =>
    err.problems.some((p) => p.field === 'pendingSteps[1]'))
})

test('no value of any type crashes Node', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const cyclic = {}
  cyclic.c = cyclic
  const values = [undefined, null, true, 0, -1, 1.5, NaN, Infinity, 2 ** 64, 10n, '', 'x', '\u0000', 'é💥', 'x'.repeat(1_000_000),
    Symbol('s'), () => 1, [], [1, [2]], {}, { handoff: 1 }, { handoff: { id: 5 }, token: -1 }, new Date(), cyclic,
    new Map(), Buffer.from('x'), new Uint8Array(3), Object.create(null), new Proxy({}, {}), h]
  const methods = ['create', 'createMany', 'get', 'list', 'claim', 'claimNext', 'heartbeat', 'release', 'complete',
    'reject', 'cancel', 'cancelClaim', 'events', 'chain', 'checkpoint', 'stalled', 'savedPolicy']
  let calls = 0
  for (const method of methods) {
    for (const v of values) {
      for (const args of [[v], [v, v], [v, v, v], [h.id, v, v], ['t', 'a', v]]) {
        for (const name of [method, `${method}Async`]) {
          calls++
          try {
            await s[name](...args)
          } catch (err) {
            const shown = args.map((a) => typeof a).join(', ')
            if (!(err instanceof Error)) assert.fail(`${name}(${shown}) threw a non-Error`)
            if (typeof err.code !== 'string') assert.fail(`${name}(${shown}) threw without a code: ${err.message}`)
          }
        }
      }
    }
  }
  for (const fn of [toMarkdown, handoffToJson, handoffFromJson, redact]) {
    for (const v of values) {
      try { fn(v) } catch (err) { assert.equal(err.code, 'VALIDATION') }
    }
  }
  const registry = new AgentRegistry()
  registry.add('a', 'x', ['b'])
  const builder = new ContextBuilder()
  const clock = new ManualClock()
  const others = [
    [registry, ['add', 'tools', 'detect']],
    [builder, ['addHandoff', 'addMessages', 'addFacts', 'addItem']],
    [clock, ['advance', 'set']],
  ]
  for (const [object, names] of others) {
    for (const name of names) {
      for (const v of values) {
        for (const args of [[v], [v, v], ['a', v], ['a', v, v]]) {
          calls++
          try {
            object[name](...args)
          } catch (err) {
            if (!(err instanceof Error) || typeof err.code !== 'string') assert.fail(`${name} threw without a code`)
          }
        }
      }
    }
  }
  for (const v of values) {
    for (const make of [() => new ContextBuilder(v), () => new ManualClock(v), () => Store.memory(v), () => open(':memory:', v)]) {
      try { make() } catch (err) { assert.equal(err.code, 'VALIDATION') }
    }
  }
  builder.build()
  assert.ok(calls > 4000)
})

test('a Map or a Set is refused by name, as JSON.stringify would write it as {}', async () => {
  const s = Store.memory()
  const create = (metadata) => [() => s.create({ taskId: 't', goal: 'g', metadata }), () => s.createAsync({ taskId: 't', goal: 'g', metadata })]
  for (const [value, name] of [[new Map([['a', 1]]), 'Map'], [new Set([1, 2]), 'Set'], [new Map(), 'Map'], [new WeakMap(), 'WeakMap'], [new WeakSet(), 'WeakSet']]) {
    const err = await failsAlike(...create({ m: value }), 'VALIDATION')
    assert.deepEqual(err.problems, [{ field: 'metadata.m', rule: `must be JSON, got a ${name}` }])
    const nested = await failsAlike(...create({ list: [1, { deep: value }] }), 'VALIDATION')
    assert.deepEqual(nested.problems.map((p) => p.field), ['metadata.list[1].deep'])
  }
  // The whole metadata, and a class of one's own (a Map still).
  class Registry extends Map {}
  await invalid(...create(new Map([['a', 1]])), 'metadata')
  await invalid(...create({ r: new Registry([['a', 1]]) }), 'metadata.r')
  // A Map with a toJSON is read as what that returns, as JSON.stringify reads it; `{}` is fine.
  const withJson = Object.assign(new Map([['a', 1]]), { toJSON() { return Object.fromEntries(this) } })
  assert.deepEqual(s.create({ taskId: 't', goal: 'g', metadata: { m: withJson, e: {} } }).metadata, { m: { a: 1 }, e: {} })
  assert.equal(s.list().length, 1, 'nothing refused was written')
})
