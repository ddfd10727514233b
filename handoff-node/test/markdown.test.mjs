// Markdown leaves for an LLM or a terminal, so secrets are redacted by default; the record,
// its JSON and the store keep what the caller wrote (docs/design.md §2).
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { Store, toMarkdown, handoffToJson, handoffFromJson } from '../index.mjs'

// An OpenAI project key: `sk-proj-` and 48 letters and digits.
const SECRET = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l'
const LISTS = ['completed', 'pending', 'decisions', 'assumptions', 'warnings', 'errors', 'files', 'blockers', 'lockedFiles', 'priorityItems', 'successCriteria']

/** A completed record with the secret in every text field, and its outcome. */
function secretEverywhere() {
  const store = Store.memory()
  const options = {
    taskId: 'leak', goal: `deploy with ${SECRET}`, progress: `used ${SECRET} twice`,
    instructions: `export OPENAI_API_KEY=${SECRET}`, reason: `error: 401 for ${SECRET}`,
    metadata: { key: SECRET, nested: { list: ['x', `bearer ${SECRET}`] } },
  }
  for (const list of LISTS) options[list] = [`${list}: ${SECRET}`]
  const h = store.create(options)
  const claim = store.claim(h.id, 'worker')
  store.complete(claim, { outcome: `done with ${SECRET}` })
  return store.get(h.id)
}

test('toMarkdown redacts a secret in every field by default; redact: false keeps it', () => {
  const h = secretEverywhere()
  assert.equal(h.outcome, `done with ${SECRET}`)
  const count = (text) => text.split(SECRET).length - 1
  for (const md of [toMarkdown(h), toMarkdown(h, {}), toMarkdown(h, { redact: true })]) {
    assert.equal(count(md), 0, md)
    assert.match(md, /\[REDACTED:openai-api-key\]/)
    assert.match(md, /## Current Goal\n+deploy with \[REDACTED:openai-api-key\]/)
  }
  const raw = toMarkdown(h, { redact: false })
  // Every field the Markdown shows carries the secret as written: goal, progress, instructions,
  // the reason and each list.
  assert.ok(count(raw) >= 4 + LISTS.length, raw)
  for (const list of LISTS) assert.ok(raw.includes(`${list}: ${SECRET}`), list)
  assert.ok(raw.includes(`error: 401 for ${SECRET}`))
})

test('the record, toJSON and the JSON round trip keep secrets', () => {
  const h = secretEverywhere()
  assert.equal(h.goal, `deploy with ${SECRET}`)
  assert.deepEqual(h.metadata, { key: SECRET, nested: { list: ['x', `bearer ${SECRET}`] } })
  const json = handoffToJson(h)
  // goal, progress, instructions, reason, outcome, two metadata strings and every list.
  assert.equal(json.split(SECRET).length - 1, 7 + LISTS.length)
  assert.deepEqual(handoffFromJson(json).metadata, h.metadata)
  assert.equal(JSON.stringify(h).split(SECRET).length - 1, 7 + LISTS.length)
})

test('toMarkdown options are checked', () => {
  const h = secretEverywhere()
  assert.throws(() => toMarkdown(h, { redact: 'no' }), (e) => e.code === 'VALIDATION' && e.problems[0].field === 'redact')
  assert.throws(() => toMarkdown(h, { raw: true }), (e) => e.code === 'VALIDATION')
  assert.equal(toMarkdown(h, null), toMarkdown(h))
})
