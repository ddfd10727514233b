// The event log leaves redacted by default, as the CLI shows it and as Python and uniffi read it:
// every text an event carries (a reason, an outcome, an error); `redact: false` is the owner's
// opt-out, and the store keeps what was written.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { Store } from '../index.mjs'

const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'
const AWS = 'AKIAIOSFODNN7EXAMPLE'

test('events are redacted unless the owner asks; sync and as a Promise', async () => {
  const store = Store.memory()
  const h = store.create({ taskId: 't', goal: 'g', toAgent: 'bob' })
  store.release(store.claim(h.id, 'bob'), { reason: `stuck: token ${GITHUB}` })
  store.fail(store.claim(h.id, 'bob'), { error: `401 for x_${AWS}` })
  store.complete(store.claim(h.id, 'bob'), { outcome: `done, key ${AWS}` })
  const shown = store.events({ handoffId: h.id })
  assert.deepEqual(shown.map((e) => e.kind), ['created', 'claimed', 'released', 'claimed', 'attempt_failed', 'claimed', 'completed'])
  const text = JSON.stringify(shown)
  assert.ok(!text.includes(GITHUB) && !text.includes(AWS), text)
  assert.equal(shown[2].detail.reason, 'stuck: token [REDACTED:github-token]')
  assert.equal(shown[4].detail.error, '401 for x_[REDACTED:aws-access-key-id]')
  assert.equal(shown[6].detail.outcome, 'done, key [REDACTED:aws-access-key-id]')
  assert.deepEqual(await store.eventsAsync({ handoffId: h.id }), shown)
  assert.deepEqual(store.events({ taskId: 't', after: shown[5].seq, redact: true }), shown.slice(6))
  assert.deepEqual(store.events({ handoffId: h.id, redact: null }), shown)

  const raw = store.events({ handoffId: h.id, redact: false })
  assert.equal(raw[2].detail.reason, `stuck: token ${GITHUB}`)
  assert.equal(raw[4].detail.error, `401 for x_${AWS}`)
  assert.equal(raw[6].detail.outcome, `done, key ${AWS}`)
  assert.deepEqual(await store.eventsAsync({ handoffId: h.id, redact: false }), raw)
  assert.deepEqual(raw.map((e) => e.seq), shown.map((e) => e.seq))
})

test('events refuse a redact that is not a boolean, by name, with the other problems', async () => {
  const store = Store.memory()
  for (const call of [() => store.events({ redact: 'no', limit: -1 }), () => store.eventsAsync({ redact: 'no', limit: -1 })]) {
    const err = await (async () => call())().then(() => assert.fail('must be refused'), (e) => e)
    assert.equal(err.code, 'VALIDATION')
    assert.deepEqual(err.problems.map((p) => p.field).sort(), ['limit', 'redact'])
    assert.match(err.problems.find((p) => p.field === 'redact').rule, /true or false/)
  }
})
