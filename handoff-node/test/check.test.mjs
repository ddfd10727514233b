// `check`: damage done to a store from outside (a record file emptied by hand) is named, moved
// aside with `repair: true`, and the queue works again; sync and as a Promise; bad input is
// VALIDATION naming `repair`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, connect, open } from '../index.mjs'

/** Every path under `dir`, relative to it. */
const walk = (dir) => readdirSync(dir, { recursive: true })

test('check names an emptied record; repair moves it aside and the queue works again', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'handoff-check-')), 'store')
  const store = connect(`files:${dir}`)
  assert.deepEqual(store.check(), { damage: [] })
  const emptied = store.create({ taskId: 't', goal: 'emptied by hand' })
  const kept = store.create({ taskId: 't', goal: 'untouched' })
  writeFileSync(join(dir, 'handoffs', `${emptied.id}.json`), '')
  // The queue does not read as empty: the damage is named.
  assert.throws(() => store.claimNext('b'), (err) => err.code === 'STORAGE' && err.message.includes(`${emptied.id}.json`))

  for (const report of [store.check(), await store.checkAsync(), store.check({ repair: false })]) {
    const damage = report.damage.find((d) => d.what === `handoffs/${emptied.id}.json`)
    assert.ok(damage, JSON.stringify(report))
    assert.equal(typeof damage.problem, 'string')
    assert.equal(damage.repaired, null)
    assert.deepEqual(Object.keys(damage), ['what', 'problem', 'repaired'])
  }

  const repaired = await store.checkAsync({ repair: true })
  const moved = repaired.damage.find((d) => d.what === `handoffs/${emptied.id}.json`)
  assert.match(moved.repaired, /quarantine\//)
  assert.ok(walk(join(dir, 'quarantine')).some((p) => p.endsWith(join('handoffs', `${emptied.id}.json`))))
  assert.deepEqual(store.check(), { damage: [] })
  assert.equal(store.claimNext('b').handoffId, kept.id)
})

test('check of a sound store, and bad input refused by name', async () => {
  const sqlite = open(join(mkdtempSync(join(tmpdir(), 'handoff-check-')), 'h.db'))
  for (const store of [Store.memory(), sqlite]) {
    store.create({ taskId: 't', goal: 'sound' })
    assert.deepEqual(store.check({ repair: true }), { damage: [] })
    for (const call of [() => store.check({ repair: 'yes' }), () => store.checkAsync({ repair: 'yes' })]) {
      const err = await (async () => call())().then(() => assert.fail('must be refused'), (e) => e)
      assert.equal(err.code, 'VALIDATION')
      assert.deepEqual(err.problems.map((p) => p.field), ['repair'])
    }
    assert.throws(() => store.check({ colour: 1 }), (err) => err.code === 'VALIDATION' && err.problems[0].field === 'colour')
  }
})
