// Chain limits along a hop's path (docs/design.md §4): fan-out is free, a long path is refused, and an
// open handoff is checked against the policy when it is claimed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, open } from '../index.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-chain-')), 'handoff.db')

test('1,000 parallel handoffs in one task pass the default policy', async () => {
  const memory = Store.memory()
  for (let i = 0; i < 1000; i++) {
    memory.create({ taskId: 'queue', goal: `work item ${i}`, fromAgent: 'planner', toAgent: i % 2 ? 'worker' : undefined })
  }
  assert.equal(memory.list({ taskId: 'queue', limit: 5000 }).length, 1000)
  const sqlite = open(tempDb())
  const items = Array.from({ length: 1000 }, (_, i) => ({ taskId: 'queue', goal: `work item ${i}`, fromAgent: 'planner', toAgent: 'worker' }))
  assert.equal((await sqlite.createManyAsync(items)).length, 1000)
  // And each can still be claimed and passed on one hop further.
  const claim = sqlite.claimNext('worker', { taskId: 'queue' })
  sqlite.create({ taskId: 'queue', goal: 'review', fromAgent: 'worker', toAgent: 'reviewer', parentId: claim.handoff.id })
})

test('a 6-hop path is refused with CHAIN_VIOLATION', async () => {
  for (const s of [Store.memory(), open(tempDb())]) {
    const agents = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']
    let parent
    for (let hop = 0; hop < 5; hop++) {
      parent = s.create({ taskId: 'long', goal: `hop ${hop + 1}`, fromAgent: agents[hop], toAgent: agents[hop + 1], parentId: parent?.id }).id
    }
    const sixth = { taskId: 'long', goal: 'hop 6', fromAgent: 'a6', toAgent: 'a7', parentId: parent }
    for (const call of [() => s.create(sixth), () => s.createAsync(sixth)]) {
      await assert.rejects(async () => call(), (e) => {
        assert.equal(e.code, 'CHAIN_VIOLATION')
        assert.equal(e.taskId, 'long')
        assert.deepEqual(e.rule, { rule: 'max_handoffs', limit: 5 })
        assert.deepEqual(e.path, agents)
        return true
      })
    }
    // Without the parent link the same agents start fresh paths.
    s.create({ taskId: 'long', goal: 'side job', fromAgent: 'z', toAgent: 'a7' })
    // A policy may allow more.
    const roomy = Store.memory({ policy: { maxHandoffs: 6 } })
    let p
    for (let hop = 0; hop < 6; hop++) p = roomy.create({ taskId: 'long', goal: 'g', fromAgent: agents[hop], toAgent: agents[hop + 1], parentId: p?.id }).id
  }
})

test('an open handoff is refused to a non-collaborator at claim time, and skipped by claimNext', async () => {
  const policy = { collaborators: { triage: ['billing'], billing: [] } }
  for (const s of [Store.memory({ policy }), open(tempDb(), { policy })]) {
    const h = s.create({ taskId: 'ticket', goal: 'refund', fromAgent: 'triage' })
    for (const call of [() => s.claim(h.id, 'sales'), () => s.claimAsync(h.id, 'sales')]) {
      await assert.rejects(async () => call(), (e) => {
        assert.equal(e.code, 'CHAIN_VIOLATION')
        assert.deepEqual(e.rule, { rule: 'not_collaborator', from: 'triage', to: 'sales' })
        return true
      })
    }
    assert.equal(s.get(h.id).status, 'pending')
    assert.equal(s.claimNext('sales'), null)
    assert.equal(await s.claimNextAsync('sales', { taskId: 'ticket' }), null)
    const claim = s.claimNext('billing')
    assert.equal(claim.handoff.id, h.id)
    assert.equal(s.chain('ticket').text, 'triage → billing')
    // An open handoff with no sender is anyone's.
    const anyone = s.create({ taskId: 'ticket', goal: 'anything' })
    assert.equal(s.claimNext('sales').handoff.id, anyone.id)
  }
})
