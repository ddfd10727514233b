// Worker threads and child processes race to claim 2,000 handoffs from one SQLite file: each
// handoff is claimed exactly once, and every claimer's claims are real.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Worker } from 'node:worker_threads'

import { open } from '../index.mjs'

const TOTAL = 2000
const claimer = new URL('./fixtures/claimer.mjs', import.meta.url)

test(`worker threads and child processes claim ${TOTAL} handoffs, each exactly once`, async () => {
  const db = join(mkdtempSync(join(tmpdir(), 'handoff-race-')), 'race.db')
  const store = open(db, { synchronous: 'normal' })
  const items = Array.from({ length: TOTAL }, (_, i) => ({ taskId: `race-${i}`, goal: `item ${i}` }))
  const created = store.createMany(items)
  assert.equal(created.length, TOTAL)

  const workers = ['sync', 'async', 'sync', 'async'].map((mode, i) =>
    new Promise((resolve, reject) => {
      const w = new Worker(claimer, { workerData: { db, agent: `thread-${i}`, mode } })
      let result = null
      w.on('message', (won) => { result = won })
      w.on('error', reject)
      w.on('exit', (code) => (code === 0 && result ? resolve([`thread-${i}`, result]) : reject(new Error(`worker exit ${code}`))))
    }))
  const run = promisify(execFile)
  const processes = ['sync', 'async'].map(async (mode, i) => {
    const { stdout } = await run(process.execPath, [claimer.pathname, db, `process-${i}`, mode], { maxBuffer: 1 << 24 })
    return [`process-${i}`, JSON.parse(stdout)]
  })
  const results = await Promise.all([...workers, ...processes])

  const owner = new Map()
  for (const [agent, won] of results) {
    for (const id of won) {
      assert.ok(!owner.has(id), `${id} claimed by ${owner.get(id)} and ${agent}`)
      owner.set(id, agent)
    }
  }
  assert.equal(owner.size, TOTAL, 'every handoff was claimed')
  // The store agrees with what each claimer saw.
  const claimed = store.list({ status: 'claimed' })
  assert.equal(claimed.length, TOTAL)
  for (const h of claimed) assert.equal(h.claimedBy, owner.get(h.id))
  assert.equal(store.claimNext('latecomer'), null)
  // Exactly one `claimed` event per handoff in the log.
  const claims = store.events().filter((e) => e.kind === 'claimed')
  assert.equal(claims.length, TOTAL)
  assert.equal(new Set(claims.map((e) => e.handoffId)).size, TOTAL)
  // Note how the work spread (not asserted: scheduling decides it).
  const spread = Object.fromEntries(results.map(([agent, won]) => [agent, won.length]))
  console.log(`claims per claimer: ${JSON.stringify(spread)}`)
})
