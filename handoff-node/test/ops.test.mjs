// The store's methods are the core's operations (docs/design.md §15): arguments read by the core under
// its names (camelCase here), every problem at once in the core's order, the shared bad-create
// fixture reported exactly as every other face reports it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

import { ManualClock, Store, _catalogJson } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
const fixture = JSON.parse(readFileSync(new URL('../../handoff-core/tests/fixtures/bad_create.json', import.meta.url), 'utf8'))

test('every operation of the core\'s catalog is a method, with its Promise twin', () => {
  const store = Store.memory()
  const { operations } = JSON.parse(_catalogJson())
  assert.ok(operations.length > 10)
  for (const { name } of operations) {
    assert.equal(typeof store[camel(name)], 'function', name)
    assert.equal(typeof store[`${camel(name)}Async`], 'function', `${name}Async`)
  }
})

test('the shared bad create: the same problems as every face, in the same order', async () => {
  const s = Store.memory()
  const options = Object.fromEntries(Object.entries(fixture.input).map(([key, value]) => [camel(key), value]))
  const err = await bothFail(() => s.create(options), () => s.createAsync(options))
  assert.equal(err.code, 'VALIDATION')
  const expected = fixture.problems.map(([field, rule]) => ({ field: camel(field), rule }))
  assert.deepEqual(err.problems.map(({ field, rule }) => ({ field, rule })), expected)
  assert.equal(s.list().length, 0)
})

test('options are camelCase: a snake_case key is refused with the name to use', async () => {
  const s = Store.memory()
  const err = await bothFail(() => s.create({ task_id: 't', goal: 'g' }), () => s.createAsync({ task_id: 't', goal: 'g' }))
  assert.deepEqual(err.problems.map((p) => p.field), ['task_id', 'taskId'])
  assert.match(err.problems[0].rule, /camelCase: taskId/)
  assert.equal(err.problems[1].rule, 'is required')
})

test('an argument taken by position is not an option too', async () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const err = await bothFail(() => s.claim(h.id, 'a', { id: 'other' }), () => s.claimAsync(h.id, 'a', { id: 'other' }))
  assert.deepEqual(err.problems.map((p) => p.field), ['id'])
  assert.equal(s.get(h.id).status, 'pending')
})

test('values that are not JSON are reported with the core\'s problems, all at once', async () => {
  const s = Store.memory()
  const options = { taskId: 't', goal: '', completed: ['ok', 5], metadata: { f() {} }, contextPct: NaN }
  const err = await bothFail(() => s.create(options), () => s.createAsync(options))
  assert.deepEqual(err.problems.map((p) => p.field), ['metadata.f', 'contextPct', 'completed[1]', 'goal'])
})

test('a claim is read by its reference only: the record it carries is not looked at', () => {
  const s = Store.memory()
  const h = s.create({ taskId: 't', goal: 'g' })
  const claim = s.claim(h.id, 'a', { leaseSeconds: 30 })
  const done = s.complete({ ...claim, handoff: { nonsense: Symbol('x') }, extra: () => 1 }, { outcome: 'ok' })
  assert.equal(done.status, 'completed')
})

test('list pages by the last id, an argument the core gained and this face shows unasked', () => {
  const s = Store.memory()
  const made = s.createMany([1, 2, 3].map((i) => ({ taskId: `t${i}`, goal: 'g' })))
  assert.deepEqual(s.list({ after: made[0].id, limit: 1 }).map((h) => h.id), [made[1].id])
})

test("expiresAt is judged by the store's clock, not the machine's", async () => {
  const clock = new ManualClock('2020-01-01T00:00:00Z')
  const s = Store.memory({ clock })
  const later = '2020-01-01T00:01:00.000000Z' // as the store writes times back
  assert.equal(s.create({ taskId: 't', goal: 'g', expiresAt: later }).expiresAt, later)
  assert.equal((await s.createManyAsync([{ taskId: 't', goal: 'g', expiresAt: later }]))[0].expiresAt, later)
  assert.equal(s.checkpoint('t', 'a', { goal: 'g', expiresAt: later }).expiresAt, later)
  const err = await bothFail(
    () => s.create({ taskId: 't', goal: 'g', expiresAt: '2019-12-31T23:59:59Z' }),
    () => s.createAsync({ taskId: 't', goal: 'g', expiresAt: '2019-12-31T23:59:59Z' }),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['expiresAt'])
})
