// Seed 001 §8 through the Node face: a task made of objectives under a readable id, agents that
// join it with a role and objectives, a step handed on to an expert (`escalateStep`), and the
// task completed by its caller with a summary and its verified knowledge merged to `main`
// (steps 1–4 and 7); then what settles a failed step's escalation, `failTask`, and a pause
// that withdraws the task's offers. Every operation has its Promise twin.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, open } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-members-')), 'handoff.db')

const ID = 'fix-oauth-token-refresh'
const OBJECTIVES = ['Identify root cause of token refresh failure', 'Implement fix', 'Add regression tests']

/** A plan of two steps, the first tried once. */
const twoSteps = () => ({
  name: 'Bilingual post',
  steps: [
    { id: 'research', name: 'Research the topic', agent: 'researcher', maxAttempts: 1 },
    { id: 'draft', name: 'Draft it', agent: 'writer', dependencies: ['research'] },
  ],
})

const statuses = (task) => Object.fromEntries(task.steps.map((s) => [s.id, s.status]))

test('seed 001 §8: objectives, members, a step handed on to an expert, completion with a merge to main', async () => {
  const store = open(tempDb())
  // 1. The task, under the caller's id, made of objectives; its goal is its name.
  const created = store.createTask({ id: ID, name: ID, objectives: OBJECTIVES })
  assert.equal(created.id, ID)
  assert.equal(created.goal, ID)
  assert.deepEqual(created.members, [])
  assert.equal(created.resultSummary, null)
  assert.equal(created.failure, null)
  assert.deepEqual(created.steps.map((s) => [s.id, s.name, s.agent, s.escalationId]), [
    ['1', OBJECTIVES[0], null, null],
    ['2', OBJECTIVES[1], null, null],
    ['3', OBJECTIVES[2], null, null],
  ])
  // Taken already: refused, naming the id.
  const taken = await bothFail(() => store.createTask({ id: ID, name: ID }), () => store.createTaskAsync({ id: ID, name: ID }))
  assert.deepEqual(taken.problems.map((p) => p.field), ['id'])
  assert.equal(store.startTask(ID).status, 'in_progress')

  // 2. An agent joins with a role and objective 1 (by its number).
  const offer = store.getTask(ID).steps[0].handoffId
  const joined = store.joinTask(ID, 'agent-investigator', { role: 'investigator', objectives: [1] })
  assert.equal(joined.members.length, 1)
  const [member] = joined.members
  assert.deepEqual([member.agent, member.role, member.objectives, member.branch],
    ['agent-investigator', 'investigator', ['1'], `task/${ID}/agent-investigator`])
  assert.ok(!Number.isNaN(Date.parse(member.joinedAt)))
  assert.equal(joined.steps[0].agent, 'agent-investigator')
  const own = joined.steps[0].handoffId
  assert.notEqual(own, offer, 'objective 1 is offered to its agent alone, by a new offer')
  assert.equal(store.get(offer).status, 'cancelled')
  const join = store.taskEvents(ID).find((e) => e.kind === 'agent_join')
  assert.deepEqual(join.detail, { agent: 'agent-investigator', role: 'investigator', objectives: ['1'] })

  // 3. Not a member: nothing is offered to it, and a step of the task cannot be claimed.
  assert.equal(store.claimNext('passer-by'), null)
  const open2 = store.getTask(ID).steps[1].handoffId
  const refused = await bothFail(() => store.claim(open2, 'passer-by'), () => store.claimAsync(open2, 'passer-by'))
  assert.equal(refused.code, 'INVALID_TRANSITION')
  // Assigned to someone else, or unknown: refused.
  await assert.rejects(store.joinTaskAsync(ID, 'agent-late', { objectives: ['1'] }), /agent-investigator/)
  const unknown = await bothFail(() => store.joinTask(ID, 'agent-late', { objectives: [9] }),
    () => store.joinTaskAsync(ID, 'agent-late', { objectives: [9] }))
  assert.deepEqual(unknown.problems.map((p) => p.field), ['objectives[0]'])

  // The member claims its objective.
  const claim = store.claim(own, 'agent-investigator')
  assert.deepEqual(claim.handoff.metadata, { step_id: '1' })
  assert.equal(claim.handoff.toAgent, 'agent-investigator')
  store.addFacts(member.branch, ['Refresh needs retry with exponential backoff', 'Maybe the clock is skewed'])

  // 4. It hands the step on to an expert: an escalation linked to the step.
  const escalation = await store.escalateStepAsync(claim, 'oauth-expert', {
    instructions: 'Found it in token_service.py:142; needs OAuth2 expertise',
    blockers: ['Unclear OAuth2 state transition after refresh failure'],
    priorityItems: [1, 2],
  })
  assert.equal(escalation.kind, 'escalation')
  assert.equal(escalation.fromAgent, 'agent-investigator')
  assert.equal(escalation.toAgent, 'oauth-expert')
  assert.equal(escalation.parentId, own)
  assert.deepEqual(escalation.blockers, ['Unclear OAuth2 state transition after refresh failure'])
  assert.equal(store.get(own).status, 'completed', "the holder's handoff completes")
  const escalated = store.taskEvents(ID).find((e) => e.kind === 'step_escalated')
  assert.deepEqual(escalated.detail, { step: '1', to: 'oauth-expert' })
  // A handoff that carries no step cannot be handed on as one.
  const plain = store.create({ taskId: 'elsewhere', goal: 'g' })
  const held = store.claim(plain.id, 'someone')
  const notStep = await bothFail(() => store.escalateStep(held, 'x'), () => store.escalateStepAsync(held, 'x'))
  assert.equal(notStep.code, 'INVALID_TRANSITION')

  // The expert takes it; completing it completes the step.
  const expert = store.claimNext('oauth-expert')
  assert.equal(expert.handoffId, escalation.id)
  assert.equal(store.getTask(ID).steps[0].status, 'in_progress')
  store.complete(expert, { outcome: 'fixed the refresh' })
  let task = store.getTask(ID)
  assert.equal(task.steps[0].status, 'completed')
  assert.equal(task.steps[0].output, 'fixed the refresh')
  assert.equal(task.status, 'in_progress')

  // 7. Only what was verified reaches main when the task completes.
  const report = store.verify(member.branch, { verifier: (item) => (item.text.includes('backoff') ? 0.9 : 0.5) })
  assert.equal(report.verified, 1)
  const done = store.completeTask(ID, { resultSummary: 'Fixed OAuth2 token refresh with retry', mergeToMain: true })
  assert.equal(done.status, 'completed')
  assert.equal(done.resultSummary, 'Fixed OAuth2 token refresh with retry')
  assert.deepEqual(statuses(done), { 1: 'completed', 2: 'skipped', 3: 'skipped' })
  assert.deepEqual(store.facts('main').map((f) => f.text), ['Refresh needs retry with exponential backoff'])
  const merge = store.taskEvents(ID).find((e) => e.kind === 'merge')
  assert.deepEqual(merge.detail, { into: 'main', facts: 1, conversations: 0 })
  const [history] = store.taskHistory({ limit: 1 })
  assert.equal(history.summary, 'Fixed OAuth2 token refresh with retry')
  // The summary of a completed task may change again.
  const again = await store.completeTaskAsync(ID, { resultSummary: 'Fixed, with retries' })
  assert.equal(again.resultSummary, 'Fixed, with retries')
  const [summary] = store.listTasks({ status: 'completed' })
  assert.deepEqual([summary.id, summary.resultSummary, summary.members.length], [ID, 'Fixed, with retries', 1])

  // The replay names the member's role and its join.
  const replay = store.replay(ID)
  const entry = replay.timeline.find((e) => e.type === 'task.agent_join')
  assert.equal(entry.agent, 'agent-investigator')
  const investigator = replay.agents.find((a) => a.agent === 'agent-investigator')
  assert.equal(investigator.role, 'investigator')
  assert.equal(replay.agents.find((a) => a.agent === 'oauth-expert').role, null)
})

test('a member takes the objectives nobody was assigned; a holder refuses the completion', async () => {
  const store = Store.memory()
  await store.createTaskAsync({ id: ID, name: ID, goal: 'Fix the refresh', objectives: OBJECTIVES })
  await store.startTaskAsync(ID)
  const joined = await store.joinTaskAsync(ID, 'agent-tester')
  assert.deepEqual(joined.members.map((m) => [m.agent, m.role, m.objectives]), [['agent-tester', null, []]])
  assert.deepEqual(store.taskEvents(ID).find((e) => e.kind === 'agent_join').detail, { agent: 'agent-tester' })
  const taken = store.claimNext('agent-tester')
  assert.ok(['1', '2', '3'].includes(taken.handoff.metadata.step_id))
  const err = await bothFail(() => store.completeTask(ID), () => store.completeTaskAsync(ID))
  assert.match(err.message, /held/)
  assert.equal(store.getTask(ID).status, 'in_progress')
})

test("a failed step's escalation completed plainly skips the step and the task goes on", () => {
  const store = Store.memory()
  const { id } = store.createTask(twoSteps())
  store.startTask(id)
  store.fail(store.claimNext('researcher'), { error: 'the API timed out' })
  let task = store.getTask(id)
  assert.equal(task.status, 'paused')
  assert.equal(task.steps[0].status, 'escalated')
  assert.ok(task.steps[0].escalationId, 'the escalation that waits for a decision')
  assert.throws(() => store.resumeTask(id), /resolve_escalation|resolveEscalation/)
  const human = store.claimNext('human')
  assert.equal(human.handoffId, task.steps[0].escalationId)
  store.complete(human, { outcome: 'done by hand' })
  task = store.getTask(id)
  assert.equal(task.status, 'in_progress')
  assert.deepEqual(statuses(task), { research: 'skipped', draft: 'ready' })
  assert.equal(task.steps[0].escalationId, null)
  assert.ok(store.claimNext('writer'))
})

test('failTask ends a task with its reason; an empty reason is refused', async () => {
  const store = Store.memory()
  const { id } = store.createTask(twoSteps())
  store.startTask(id)
  const err = await bothFail(() => store.failTask(id, ' '), () => store.failTaskAsync(id, ' '))
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['reason'])
  const failed = await store.failTaskAsync(id, 'requirements changed')
  assert.equal(failed.status, 'failed')
  assert.equal(failed.failure, 'requirements changed')
  assert.deepEqual(statuses(failed), { research: 'cancelled', draft: 'cancelled' })
  assert.equal(store.claimNext('researcher'), null, 'the offer was withdrawn')
  const last = store.taskEvents(id).at(-1)
  assert.deepEqual([last.kind, last.detail], ['failed', { reason: 'requirements changed' }])
  assert.equal(store.taskHistory({ limit: 1 })[0].result, 'failure')
  assert.equal(store.getTask(id).failure, 'requirements changed')
})

test('pausing withdraws the offers nobody holds; resuming makes them again', async () => {
  const store = Store.memory()
  const { id } = store.createTask(twoSteps())
  const started = store.startTask(id)
  const offer = started.steps[0].handoffId
  const paused = await store.pauseTaskAsync(id)
  assert.equal(paused.status, 'paused')
  assert.equal(paused.steps[0].status, 'pending')
  assert.equal(store.get(offer).status, 'cancelled')
  assert.equal(store.claimNext('researcher'), null)
  const resumed = store.resumeTask(id)
  assert.deepEqual(resumed.currentSteps, ['research'])
  assert.ok(store.claimNext('researcher'))
})

test('rerunTask runs a plan again with other agents, seeded with what the first run verified; importBundle takes a bundleId', async () => {
  const store = Store.memory()
  store.createTask({ ...twoSteps(), id: 'post-1' })
  store.addFacts('task/post-1', ['Readers want Korean first'])
  store.verify('task/post-1', { verifier: () => 0.9 })

  const err = await bothFail(
    () => store.rerunTask({ taskId: 'post-1', agents: { nobody: 'x' } }),
    () => store.rerunTaskAsync({ taskId: 'post-1', agents: { nobody: 'x' } }),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['agents.nobody'])

  const again = store.rerunTask({ taskId: 'post-1', id: 'post-2', agents: { writer: 'writer-v2' }, context: { model: 'other' } })
  assert.equal(again.id, 'post-2')
  assert.deepEqual(again.steps.map((s) => s.agent), ['researcher', 'writer-v2'])
  assert.equal(again.metadata.rerun_of, 'post-1')
  assert.deepEqual(store.facts('task/post-2').map((f) => f.text), ['Readers want Korean first'])
  const third = await store.rerunTaskAsync({ taskId: 'post-1' })
  assert.equal(third.steps.length, 2)

  // The seed's memory_bundle_import: a bundle of this store by its id.
  const [bundle] = store.listBundles()
  const report = store.importBundle(null, { bundleId: bundle.id, targetBranch: 'task/post-9' })
  assert.equal(report.facts_added, 1)
})
