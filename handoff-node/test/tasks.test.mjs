// Tasks (docs/design.md §7) through the Node face: a plan whose steps run as handoffs that workers take
// with `claimNext`, retried and escalated when they fail, paused, resumed, cancelled, changed by
// compare-and-swap, and remembered in a history. Every operation has its Promise twin.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ManualClock, Store, open } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-tasks-')), 'handoff.db')

/** The seed's bilingual post: research, then a Korean draft, then a review. */
const blogPost = (extra = {}) => ({
  name: 'Bilingual post',
  goal: 'A blog post in English and Korean',
  steps: [
    { id: 'research', name: 'Research the topic', agent: 'researcher' },
    { id: 'draft-ko', name: 'Draft in Korean', agent: 'writer', dependencies: ['research'], instructions: 'Keep it short' },
    { id: 'review', name: 'Review both', agent: 'reviewer', dependencies: ['draft-ko'] },
  ],
  successCriteria: ['published in both languages'],
  ...extra,
})

const statuses = (task) => Object.fromEntries(task.steps.map((s) => [s.id, s.status]))

test('a plan runs step by step: each step is offered to its agent once its dependencies are done', () => {
  const store = open(tempDb())
  const created = store.createTask(blogPost({ orchestrator: 'lead', context: { user_request: 'a post' } }))
  assert.equal(created.status, 'pending')
  assert.equal(created.version, 1)
  assert.equal(created.stepsTotal, 3)
  assert.equal(created.escalateTo, 'human')
  assert.deepEqual(created.context, { user_request: 'a post' })
  assert.deepEqual(created.steps.map((s) => [s.id, s.agent, s.dependencies, s.status, s.maxAttempts]), [
    ['research', 'researcher', [], 'pending', 3],
    ['draft-ko', 'writer', ['research'], 'pending', 3],
    ['review', 'reviewer', ['draft-ko'], 'pending', 3],
  ])
  assert.equal(created.steps[1].instructions, 'Keep it short')
  assert.equal(store.claimNext('researcher'), null, 'nothing is offered before the task starts')

  const started = store.startTask(created.id)
  assert.equal(started.status, 'in_progress')
  assert.deepEqual(started.currentSteps, ['research'])
  assert.equal(store.claimNext('writer'), null, 'draft-ko waits for research')

  const research = store.claimNext('researcher')
  assert.equal(research.handoff.taskId, created.id)
  assert.equal(research.handoff.kind, 'initialization')
  assert.equal(store.events({ handoffId: research.handoffId })[0].actor, 'lead', 'the orchestrator offers the steps')
  assert.deepEqual(research.handoff.metadata, { step_id: 'research' })
  assert.equal(store.getTask(created.id).steps[0].status, 'in_progress')

  const done = store.complete(research, { outcome: 'notes on the topic', tokensUsed: 1200 })
  assert.equal(done.status, 'completed')
  const completed = store.events({ handoffId: research.handoffId }).at(-1)
  assert.equal(completed.kind, 'completed')
  assert.deepEqual(completed.detail, { outcome: 'notes on the topic', tokensUsed: 1200 })

  const task = store.getTask(created.id)
  assert.deepEqual(statuses(task), { research: 'completed', 'draft-ko': 'ready', review: 'pending' })
  assert.equal(task.steps[0].output, 'notes on the topic')
  assert.equal(task.steps[0].tokensUsed, 1200)
  assert.equal(task.tokensUsed, 1200)
  assert.deepEqual(task.currentSteps, ['draft-ko'])
  assert.ok(task.version > started.version)

  const draft = store.claimNext('writer')
  assert.equal(draft.handoff.goal, 'Draft in Korean')
  assert.equal(draft.handoff.instructions, 'Keep it short')
  assert.equal(draft.handoffId, task.steps[1].handoffId)
})

test('the same plan through the Promise twins', async () => {
  const store = open(tempDb())
  const { id } = await store.createTaskAsync(blogPost())
  assert.equal((await store.startTaskAsync(id)).status, 'in_progress')
  const research = await store.claimNextAsync('researcher')
  await store.completeAsync(research, { outcome: 'notes', tokensUsed: 700 })
  const draft = await store.claimNextAsync('writer')
  assert.deepEqual(draft.handoff.metadata, { step_id: 'draft-ko' })
  await store.completeAsync(draft, { outcome: '초안', tokensUsed: 300 })
  const review = await store.claimNextAsync('reviewer')
  await store.completeAsync(review, { outcome: 'approved' })

  const task = await store.getTaskAsync(id)
  assert.equal(task.status, 'completed')
  assert.equal(task.stepsDone, 3)
  assert.equal(task.tokensUsed, 1000)
  assert.deepEqual(task.currentSteps, [])
  assert.deepEqual((await store.listTasksAsync({ status: 'completed' })).map((t) => t.id), [id])
  const kinds = (await store.taskEventsAsync(id)).map((e) => e.kind)
  assert.deepEqual(kinds.slice(0, 4), ['created', 'started', 'step_offered', 'step_started'])
  assert.equal(kinds.at(-1), 'completed')
  const [entry] = await store.taskHistoryAsync({ limit: 1 })
  assert.equal(entry.id, id)
  assert.equal(entry.metrics.tokensUsed, 1000)
  assert.equal((await store.taskStatisticsAsync()).totalTasks, 1)
})

test('a failing step is retried up to maxAttempts, then escalated; skipping it lets its dependents go on', async () => {
  const store = Store.memory()
  const plan = blogPost()
  plan.steps[0].maxAttempts = 2
  const { id } = store.createTask(plan)
  store.startTask(id)

  const first = store.claimNext('researcher')
  const failed = store.failStep(first, { error: 'the API timed out' })
  assert.equal(failed.status, 'pending', 'offered again')
  let task = store.getTask(id)
  assert.equal(task.steps[0].status, 'ready')
  assert.equal(task.steps[0].attempts, 1)
  assert.equal(task.steps[0].maxAttempts, 2)
  assert.equal(task.retries, 1)

  const second = store.claimNext('researcher')
  assert.equal(second.handoffId, first.handoffId, 'the same offer, retried')
  await store.failStepAsync(second, { error: 'still timing out' })
  task = store.getTask(id)
  assert.equal(task.status, 'paused')
  assert.equal(task.steps[0].status, 'escalated')
  assert.equal(task.steps[0].error, 'still timing out')
  const escalatedEvent = store.taskEvents(id).find((e) => e.kind === 'step_escalated')
  assert.deepEqual(escalatedEvent.detail, { step: 'research' })
  const failures = store.taskEvents(id).filter((e) => e.kind === 'step_failed').map((e) => e.detail)
  assert.deepEqual(failures, [
    { step: 'research', error: 'the API timed out', last: false },
    { step: 'research', error: 'still timing out', last: true },
  ])

  const escalation = store.claimNext('human')
  assert.equal(escalation.handoff.kind, 'escalation')
  assert.deepEqual(escalation.handoff.unresolvedErrors, ['still timing out'])
  // Only a step's handoff fails as a step.
  const other = store.create({ taskId: 'elsewhere', goal: 'g' })
  const unrelated = store.claim(other.id, 'a')
  const err = await bothFail(() => store.failStep(unrelated, { error: 'x' }), () => store.failStepAsync(unrelated, { error: 'x' }))
  assert.equal(err.code, 'INVALID_TRANSITION')

  const resolved = store.resolveEscalation(escalation, { resolution: 'go on without it', retry: false })
  assert.equal(resolved.status, 'in_progress')
  assert.deepEqual(statuses(resolved), { research: 'skipped', 'draft-ko': 'ready', review: 'pending' })
  assert.equal(resolved.skipped, 1)
  assert.equal(store.get(escalation.handoffId).status, 'completed')
  assert.equal(store.claimNext('writer').handoff.metadata.step_id, 'draft-ko')
})

test('an escalation resolved with retry offers the step again, its attempts reset', async () => {
  const store = Store.memory()
  const plan = blogPost()
  plan.steps[0].maxAttempts = 1
  const { id } = store.createTask(plan)
  store.startTask(id)
  store.fail(store.claimNext('researcher'), { error: 'no network' })
  assert.equal(store.getTask(id).status, 'paused')
  const escalation = await store.claimNextAsync('human')
  const resolved = await store.resolveEscalationAsync(escalation, { resolution: 'the proxy is fixed', retry: true })
  assert.equal(resolved.status, 'in_progress')
  assert.equal(resolved.steps[0].status, 'ready')
  assert.equal(resolved.steps[0].attempts, 0)
  assert.ok(store.claimNext('researcher'))
})

test('pause holds back what completions unblock, resume offers it, cancel withdraws offers', async () => {
  const store = Store.memory()
  const { id } = store.createTask(blogPost())
  store.startTask(id)
  const research = store.claimNext('researcher')

  assert.equal(store.pauseTask(id).status, 'paused')
  store.complete(research, { outcome: 'notes' })
  assert.equal(store.claimNext('writer'), null, 'a paused task offers nothing')
  assert.equal(store.getTask(id).steps[1].status, 'pending')

  const resumed = await store.resumeTaskAsync(id)
  assert.equal(resumed.status, 'in_progress')
  assert.deepEqual(resumed.currentSteps, ['draft-ko'])

  const cancelled = store.cancelTask(id, { reason: 'the topic changed' })
  assert.equal(cancelled.status, 'cancelled')
  assert.deepEqual(statuses(cancelled), { research: 'completed', 'draft-ko': 'cancelled', review: 'cancelled' })
  assert.equal(store.claimNext('writer'), null, 'the offer was withdrawn')
  const events = store.taskEvents(id)
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1))
  assert.ok(events.every((e) => e.taskId === id))
  const kinds = events.map((e) => e.kind)
  for (const kind of ['paused', 'resumed', 'cancelled']) assert.ok(kinds.includes(kind), kind)
  assert.deepEqual(events.at(-1).detail, { reason: 'the topic changed' })

  // Finished: pausing again is refused, the task unchanged.
  const err = await bothFail(() => store.pauseTask(id), () => store.pauseTaskAsync(id))
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['status'])
  assert.equal(store.getTask(id).status, 'cancelled')
  const paused = Store.memory()
  const other = paused.createTask(blogPost())
  assert.equal((await paused.pauseTaskAsync(paused.startTask(other.id).id)).status, 'paused')
  assert.equal((await paused.cancelTaskAsync(other.id)).status, 'cancelled')
})

test('updateTask is compare-and-swap: a stale version is a CONFLICT naming both, nothing changed', async () => {
  const store = Store.memory()
  const task = store.createTask(blogPost())
  store.startTask(task.id)
  const before = store.getTask(task.id)
  assert.equal(before.version, task.version + 1)

  const err = await bothFail(
    () => store.updateTask(task.id, task.version, { goal: 'A trilingual post' }),
    () => store.updateTaskAsync(task.id, task.version, { goal: 'A trilingual post' }),
  )
  assert.equal(err.code, 'CONFLICT')
  assert.equal(err.id, task.id)
  assert.equal(err.expected, task.version)
  assert.equal(err.actual, before.version)
  assert.deepEqual(store.getTask(task.id), before)

  const updated = store.updateTask(task.id, before.version, {
    goal: 'A trilingual post',
    artifacts: [{ path: 'post.md' }],
    addSteps: [{ id: 'draft-ja', name: 'Draft in Japanese', agent: 'writer', dependencies: ['research'], maxAttempts: 5 }],
  })
  assert.equal(updated.version, before.version + 1)
  assert.equal(updated.goal, 'A trilingual post')
  assert.deepEqual(updated.artifacts, [{ path: 'post.md' }])
  assert.deepEqual(updated.steps.at(-1).maxAttempts, 5)
  assert.equal(updated.stepsTotal, 4)
  assert.deepEqual(store.taskEvents(task.id).at(-1).detail, { version: updated.version })

  // Added steps are checked with the plan, named by where the caller wrote them.
  const bad = await bothFail(
    () => store.updateTask(task.id, updated.version, { addSteps: [{ id: 'research', name: 'Again', agent: 'researcher', max_attempts: 2 }] }),
    () => store.updateTaskAsync(task.id, updated.version, { addSteps: [{ id: 'research', name: 'Again', agent: 'researcher', max_attempts: 2 }] }),
  )
  assert.equal(bad.code, 'VALIDATION')
  assert.deepEqual(bad.problems.map((p) => p.field), ['addSteps[0].max_attempts'])
  assert.match(bad.problems[0].rule, /camelCase: maxAttempts/)
  assert.deepEqual(store.getTask(task.id), updated)
})

test('a bad plan reports every problem at once, by field, and writes nothing', async () => {
  const store = Store.memory()
  const plan = {
    name: 'Broken',
    goal: 'g',
    steps: [
      { id: 'a', name: 'A', agent: 'x', dependencies: ['c'] },
      { id: 'a', name: 'A again', agent: 'x' },
      { id: 'b', name: 'B', agent: 'x', dependencies: ['ghost'], maxAttempts: 0 },
      { id: 'c', name: 'C', agent: 'x', dependencies: ['d'] },
      { id: 'd', name: 'D', agent: 'x', dependencies: ['c'] },
    ],
  }
  const err = await bothFail(() => store.createTask(plan), () => store.createTaskAsync(plan))
  assert.equal(err.code, 'VALIDATION')
  const byField = Object.fromEntries(err.problems.map((p) => [p.field, p.rule]))
  assert.match(byField['steps[1].id'], /must be unique in the plan: steps\[0\] has id a/)
  assert.match(byField['steps[2].dependencies[0]'], /no step has id ghost/)
  assert.match(byField['steps[2].maxAttempts'], /must be 1 to/)
  assert.equal(byField['steps[3].dependencies'], 'must not form a cycle: c → d → c')
  assert.equal(err.problems.length, 4, err.message)
  assert.deepEqual(store.listTasks(), [])

  // Keys of a step are camelCase like every option: the snake_case one is named.
  const snake = { name: 'n', goal: 'g', steps: [{ id: 'a', name: 'A', agent: 'x', max_attempts: 2 }] }
  const refused = await bothFail(() => store.createTask(snake), () => store.createTaskAsync(snake))
  assert.deepEqual(refused.problems.map((p) => p.field), ['steps[0].max_attempts'])
  // Missing required arguments, and a wrong status filter.
  const missing = await bothFail(() => store.createTask({ goal: 'g' }), () => store.createTaskAsync({ goal: 'g' }))
  assert.deepEqual(missing.problems.map((p) => p.field), ['name'])
  const status = await bothFail(() => store.listTasks({ status: 'done' }), () => store.listTasksAsync({ status: 'done' }))
  assert.deepEqual(status.problems.map((p) => p.field), ['status'])
})

test('an unknown task is NOT_FOUND with its id', async () => {
  const store = Store.memory()
  for (const method of ['getTask', 'startTask', 'pauseTask', 'resumeTask', 'cancelTask']) {
    const err = await bothFail(() => store[method]('nope'), () => store[`${method}Async`]('nope'))
    assert.equal(err.code, 'NOT_FOUND', method)
    assert.equal(err.id, 'nope')
    assert.equal(err.what, 'task')
    assert.equal(err.message, 'task nope not found')
  }
  const handoff = await bothFail(() => store.get('nope'), () => store.getAsync('nope'))
  assert.equal(handoff.what, 'handoff')
})

test('history and statistics of finished tasks carry the tokens their workers reported', () => {
  const clock = new ManualClock('2025-01-01T00:00:00Z')
  const store = Store.memory({ clock })
  const { id } = store.createTask(blogPost({ metadata: { lessons: ['start earlier'] } }))
  store.startTask(id)
  clock.advance(60)
  for (const [agent, tokens] of [['researcher', 500], ['writer', 1500], ['reviewer', undefined]]) {
    const claim = store.claimNext(agent)
    clock.advance(30)
    store.complete(claim, { outcome: `${agent} done`, tokensUsed: tokens })
  }
  const cancelled = store.createTask(blogPost({ name: 'Dropped' }))
  store.cancelTask(cancelled.id)
  const running = store.createTask(blogPost({ name: 'Running' }))
  store.startTask(running.id)

  const history = store.taskHistory()
  assert.deepEqual(history.map((e) => [e.name, e.result]), [['Dropped', 'failure'], ['Bilingual post', 'success']])
  const entry = history[1]
  assert.equal(entry.summary, 'A blog post in English and Korean')
  assert.equal(entry.startedAt, '2025-01-01T00:00:00.000000Z')
  assert.equal(entry.completedAt, '2025-01-01T00:02:30.000000Z')
  assert.equal(entry.durationSeconds, 150)
  assert.deepEqual(entry.metrics, { stepsTotal: 3, stepsCompleted: 3, retries: 0, tokensUsed: 2000 })
  assert.deepEqual(entry.lessons, ['start earlier'])
  assert.equal(history[0].startedAt, null)
  assert.equal(history[0].durationSeconds, null)
  assert.equal(store.taskHistory({ limit: 1 }).length, 1)

  const stats = store.taskStatistics()
  assert.deepEqual(stats, { totalTasks: 2, successRate: 0.5, avgDurationSeconds: 150, byResult: { failure: 1, success: 1 } })
  const summaries = store.listTasks()
  assert.deepEqual(summaries.map((t) => t.name), ['Bilingual post', 'Dropped', 'Running'])
  assert.equal(summaries[0].tokensUsed, 2000)
  assert.equal(summaries[0].steps, undefined, 'a summary has no steps')
  assert.equal(summaries[0].roots, undefined, 'nor the store\'s bookkeeping')
  assert.deepEqual(store.listTasks({ after: summaries[0].id, limit: 1 }).map((t) => t.name), ['Dropped'])
  assert.deepEqual(store.listTasks({ status: 'in_progress' }).map((t) => t.name), ['Running'])
})

test('prune keeps only the history of older finished tasks', async () => {
  const store = Store.memory()
  const ids = []
  for (const name of ['one', 'two', 'three']) {
    const { id } = store.createTask(blogPost({ name }))
    store.cancelTask(id)
    ids.push(id)
  }
  const running = store.createTask(blogPost({ name: 'running' }))
  assert.equal(store.prune({ keepLast: 1 }), 2)
  assert.equal(await store.pruneAsync({ keepLast: 1, keepDetailsDays: 30 }), 0)
  assert.equal(store.prune(), 0, 'the defaults keep 100 tasks for 30 days')
  const pruned = store.getTask(ids[0])
  assert.equal(pruned.pruned, true)
  assert.deepEqual(pruned.steps, [])
  assert.equal(store.getTask(ids[2]).pruned, false)
  assert.equal(store.getTask(running.id).steps.length, 3, 'unfinished tasks are never touched')
  assert.equal(store.taskHistory().length, 3)
})
