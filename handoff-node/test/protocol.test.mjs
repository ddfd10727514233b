// The manager/worker protocol (docs/design.md §8) through the Node face: a run from its initialization
// to COMPLETE, each message a handoff its addressee takes with `claimNext` and answers with its
// claim, the bodies in the seed's snake_case form; its history, statistics and Markdown; and
// malformed calls refused by name, the store unchanged. Every call also as its Promise twin.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ManualClock, Store, handoffFromJson, handoffToJson, open, toMarkdown } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-protocol-')), 'handoff.db')

/** `store`'s method `name`, called on the JavaScript thread or as its Promise twin. */
const caller = (store, promised) => (name, ...args) =>
  promised ? store[`${name}Async`](...args) : Promise.resolve(store[name](...args))

const start = {
  manager: 'manager',
  worker: 'worker',
  instructions: 'Add token refresh to src/auth.js',
  successCriteria: ['refresh retried with backoff'],
  context: { project_root: '/app', relevant_files: ['src/auth.js'], constraints: ['no new services'] },
  qualityGates: ['tests pass'],
  maxIterations: 5,
  maxRetries: 2,
}

const partial = {
  accomplished: ['refresh call on 401'],
  filesModified: [{ path: 'src/auth.js', description: 'refresh on 401' }],
  tests: { added: 5, passing: 5, coverage: '85%' },
  issues: ['no backoff yet'],
  validation: ['npm test'],
}

const dependencyError = {
  errorType: 'dependency',
  severity: 'medium',
  description: 'backoff library missing',
  context: 'adding backoff',
  attemptedSolutions: ['npm install backoff'],
  errorMessages: ['ENOTFOUND registry.example'],
  affectedFiles: ['package.json'],
}

for (const promised of [false, true]) {
  const how = promised ? 'as Promises' : 'on the JavaScript thread'

  test(`a run from initialize to COMPLETE, through a refinement, an error, a recovery and a human (${how})`, async () => {
    const clock = new ManualClock('2026-03-01T09:00:00Z')
    const store = promised ? open(tempDb(), { clock }) : Store.memory({ clock })
    const call = caller(store, promised)
    const take = async (agent) => {
      clock.advance(60)
      const claim = await call('claimNext', agent)
      assert.ok(claim, `a message for ${agent}`)
      return claim
    }

    const init = await call('initialize', 'task_12345', start)
    assert.equal(init.kind, 'initialization')
    assert.equal(init.taskId, 'task_12345')
    assert.equal(init.toAgent, 'worker')
    assert.equal(init.goal, start.instructions)
    assert.equal(init.protocol.handoff_type, 'initialization')
    assert.equal(init.protocol.iteration, 1)
    assert.equal(init.protocol.timestamp, '2026-03-01T09:00:00.000000Z')
    assert.deepEqual(init.protocol.context, { ...start.context, patterns: [] }, 'the seed\'s keys, as given')
    assert.deepEqual(init.protocol.success_criteria, start.successCriteria)
    assert.deepEqual(init.protocol.quality_gates, start.qualityGates)

    // The worker takes its instructions like any handoff, and reports.
    const w1 = await take('worker')
    assert.equal(w1.handoffId, init.id)
    assert.deepEqual(w1.handoff.protocol, init.protocol)
    const progress = await call('report', w1, 'PARTIAL', partial)
    assert.equal(progress.kind, 'progress')
    assert.equal(progress.toAgent, 'manager')
    assert.equal((await call('get', init.id)).status, 'completed', 'the answer settles the claim')
    assert.deepEqual(progress.protocol.worker_report, {
      status: 'PARTIAL',
      accomplished: ['refresh call on 401'],
      files_modified: [{ path: 'src/auth.js', description: 'refresh on 401' }],
      tests: { added: 5, passing: 5, coverage: '85%' },
      issues: ['no backoff yet'],
      validation: ['npm test'],
    })
    const md = toMarkdown(progress)
    assert.match(md, /## Worker Report: PARTIAL/)
    assert.ok(md.includes('- `src/auth.js`: refresh on 401'), md)
    assert.deepEqual(handoffFromJson(handoffToJson(progress)), progress, 'the body survives the wire form')

    // The manager refines: the worker gets iteration 2.
    const m1 = await take('manager')
    const refine = await call('decide', m1, 'REFINE', {
      instructions: 'Add exponential backoff',
      contextUpdates: { new_patterns: ['retry with backoff'] },
    })
    assert.equal(refine.toAgent, 'worker')
    assert.equal(refine.protocol.iteration, 2)
    assert.equal(refine.protocol.manager_decision, 'REFINE')
    assert.equal(refine.protocol.continuation_instructions, 'Add exponential backoff')
    assert.deepEqual(refine.protocol.context_updates.new_patterns, ['retry with backoff'])

    // The worker meets an error; the manager sends recovery steps.
    const w2 = await take('worker')
    const failed = await call('reportError', w2, dependencyError)
    assert.equal(failed.kind, 'error_recovery')
    assert.equal(failed.toAgent, 'manager')
    assert.deepEqual(failed.protocol.error_report, {
      error_type: 'dependency',
      severity: 'medium',
      description: 'backoff library missing',
      context: 'adding backoff',
      attempted_solutions: ['npm install backoff'],
      error_messages: ['ENOTFOUND registry.example'],
      affected_files: ['package.json'],
    })
    const m2 = await take('manager')
    const recovery = await call('recover', m2, {
      strategy: 'vendor the backoff helper',
      steps: ['write src/backoff.js', 'use it in src/auth.js'],
      successIndicators: ['npm test passes'],
    })
    assert.equal(recovery.kind, 'error_recovery')
    assert.equal(recovery.toAgent, 'worker')
    assert.equal(recovery.protocol.retry_count, 1)
    assert.deepEqual(recovery.protocol.recovery_instructions.steps, ['write src/backoff.js', 'use it in src/auth.js'])

    // It fails again: the manager escalates to the run's human.
    const w3 = await take('worker')
    await call('reportError', w3, { ...dependencyError, description: 'the registry is unreachable' })
    const m3 = await take('manager')
    const escalation = await call('escalate', m3, {
      category: 'configuration',
      severity: 'high',
      urgency: 'medium',
      blockerType: 'access',
      description: 'The registry is unreachable from the sandbox',
      impact: 'Backoff cannot be installed',
      recommendation: 'Allow the registry, or approve vendoring',
    })
    assert.equal(escalation.kind, 'escalation')
    assert.equal(escalation.toAgent, 'human')
    assert.equal(escalation.protocol.escalation_details.blocker_type, 'access')
    assert.deepEqual(escalation.protocol.complete_history.map((h) => [h.iteration, h.outcome]),
      [[1, 'refine'], [2, 'error'], [2, 'error']])
    assert.equal(escalation.protocol.complete_history[0].worker_report.status, 'PARTIAL')
    assert.deepEqual(escalation.protocol.current_state.files_modified, ['src/auth.js'])
    assert.match(toMarkdown(escalation), /Escalation/)

    // The human resolves; the manager goes on, the worker completes, the manager completes.
    const human = await take('human')
    const resolved = await call('resolve', human, 'Vendoring is approved')
    assert.equal(resolved.kind, 'progress')
    assert.equal(resolved.toAgent, 'manager')
    assert.equal(resolved.protocol.resume_instructions, 'Vendoring is approved')
    const m4 = await take('manager')
    const goOn = await call('decide', m4, 'CONTINUE', { instructions: 'Vendor backoff and finish' })
    assert.equal(goOn.toAgent, 'worker')
    const w4 = await take('worker')
    const done = await call('report', w4, 'COMPLETED', {
      filesModified: [{ path: 'src/backoff.js', description: 'vendored backoff' }],
      tests: { added: 2, passing: 7 },
    })
    assert.equal(done.protocol.worker_report.status, 'COMPLETED')
    const m5 = await take('manager')
    assert.equal(await call('decide', m5, 'COMPLETE'), null, 'COMPLETE sends nothing')
    assert.equal(await call('claimNext', 'worker'), null)
    assert.equal((await call('get', m5.handoffId)).status, 'completed')

    const run = await call('protocolRun', 'task_12345')
    assert.equal(run.phase, 'completed')
    assert.equal(run.messageId, null)
    assert.equal(run.escalateTo, 'human')
    assert.deepEqual([run.manager, run.worker], ['manager', 'worker'])
    assert.equal(run.goal, start.instructions)
    assert.deepEqual(run.successCriteria, start.successCriteria)
    assert.equal(run.retryCount, 1)
    assert.equal(run.escalations, 1)
    assert.deepEqual(run.filesModified, ['src/auth.js', 'src/backoff.js'])
    assert.equal(run.history.at(-1).outcome, 'complete')
    assert.ok(run.history.every((h) => typeof h.manager_instructions === 'string'), 'history in the seed\'s form')
    assert.equal(run.startedAt, '2026-03-01T09:00:00.000000Z')
    assert.ok(run.iterationSeconds.length > 0 && run.iterationSeconds.every((s) => s > 0))

    const history = await call('protocolHistory', 'task_12345')
    assert.deepEqual(history.map((h) => h.kind), [
      'initialization', 'progress', 'progress', 'error_recovery', 'error_recovery', 'error_recovery',
      'escalation', 'progress', 'progress', 'progress',
    ])
    assert.deepEqual(history.map((h) => h.protocol.handoff_type), history.map((h) => h.kind))
    assert.deepEqual(history.map((h) => h.toAgent), [
      'worker', 'manager', 'worker', 'manager', 'worker', 'manager', 'human', 'manager', 'worker', 'manager',
    ])
    assert.equal(history[1].id, progress.id)
    assert.deepEqual(history[1].protocol, progress.protocol)
    assert.equal(history[1].status, 'completed', 'answered by the manager')
    assert.equal(history.at(-1).status, 'completed', 'the last report, answered by COMPLETE')

    const stats = await call('protocolStats')
    assert.equal(stats.runs, 1)
    assert.equal(stats.completed, 1)
    assert.equal(stats.firstTryCompletions, 0)
    assert.equal(stats.firstTryCompletionRate, 0)
    assert.equal(stats.escalated, 1)
    assert.equal(stats.escalationRate, 1)
    assert.equal(stats.retries, 1)
    assert.equal(stats.meanIterations, run.iteration)
    assert.equal(typeof stats.medianIterationSeconds, 'number')
    assert.deepEqual(stats.perRun, [{
      taskId: 'task_12345', phase: 'completed', iterations: run.iteration, retries: 1, escalations: 1,
      startedAt: run.startedAt, updatedAt: run.updatedAt,
    }])
  })

  test(`past maxRetries a recovery escalates by itself; a call out of turn is INVALID_TRANSITION (${how})`, async () => {
    const store = Store.memory()
    const call = caller(store, promised)
    await call('initialize', 'task_retries', { ...start, maxRetries: 0 })
    const w1 = await call('claimNext', 'worker')
    const out = await bothFail(() => store.decide(w1, 'COMPLETE'), () => store.decideAsync(w1, 'COMPLETE'))
    assert.equal(out.code, 'INVALID_TRANSITION')
    assert.equal((await call('get', w1.handoffId)).status, 'claimed', 'the refused call changed nothing')
    await call('reportError', w1, dependencyError)
    const m1 = await call('claimNext', 'manager')
    const forced = await call('recover', m1, { strategy: 'retry', steps: ['run it again'] })
    assert.equal(forced.kind, 'escalation')
    assert.equal(forced.toAgent, 'human')
    assert.equal((await call('protocolRun', 'task_retries')).phase, 'escalated')
    const stats = await call('protocolStats')
    assert.deepEqual([stats.runs, stats.completed, stats.escalated, stats.medianIterationSeconds], [1, 0, 1, stats.medianIterationSeconds])
    assert.equal(stats.perRun[0].phase, 'escalated')

    const missing = await bothFail(() => store.protocolRun('no_such_task'), () => store.protocolRunAsync('no_such_task'))
    assert.equal(missing.code, 'NOT_FOUND')
    assert.equal(missing.what, 'protocol run')
    assert.equal(missing.id, 'no_such_task')
  })
}

/** What a refused call must leave as it was. */
function snapshot(store, taskId) {
  return { records: store.list(), run: store.protocolRun(taskId), events: store.events() }
}

test('malformed bodies: a VALIDATION error naming each field, the store unchanged', async () => {
  const store = Store.memory()
  store.initialize('t1', start)
  const claim = store.claimNext('worker')
  const before = snapshot(store, 't1')
  const fields = async (status, options) => {
    const err = await bothFail(() => store.report(claim, status, options), () => store.reportAsync(claim, status, options))
    assert.equal(err.code, 'VALIDATION', err.message)
    return err.problems.map((p) => p.field)
  }

  // A wrong enum value, named with the values it may take.
  const wrong = await bothFail(() => store.report(claim, 'DONE', partial), () => store.reportAsync(claim, 'DONE', partial))
  assert.deepEqual(wrong.problems.map((p) => p.field), ['status'])
  assert.equal(wrong.problems[0].rule, 'must be one of COMPLETED, PARTIAL, FAILED')
  // A changed file without its description.
  assert.deepEqual(await fields('PARTIAL', { ...partial, filesModified: [{ path: 'src/auth.js' }] }),
    ['filesModified[0].description'])
  assert.deepEqual(await fields('PARTIAL', { ...partial, filesModified: [{ path: 'src/auth.js', description: ' ' }] }),
    ['filesModified[0].description'])
  // An item bigger than the limit on one field (64 KiB by default).
  const huge = 'x'.repeat(64 * 1024 + 1)
  assert.deepEqual(await fields('PARTIAL', { ...partial, issues: ['fine', huge] }), ['issues[1]'])
  // A 10,000-deep array, as an option and in place of an argument: refused, not a crash.
  let deep = 'leaf'
  for (let i = 0; i < 10_000; i++) deep = [deep]
  const tooDeep = async (sync, async, at) => {
    const err = await bothFail(sync, async)
    assert.equal(err.code, 'VALIDATION', err.message)
    assert.equal(err.problems.length, 1, err.message)
    assert.ok(err.problems[0].field.startsWith(at), err.problems[0].field)
    assert.match(err.problems[0].rule, /nested deeper than \d+ levels/)
  }
  const deepOptions = { ...partial, accomplished: deep }
  await tooDeep(() => store.report(claim, 'PARTIAL', deepOptions), () => store.reportAsync(claim, 'PARTIAL', deepOptions),
    'accomplished[0][0]')
  // A list given by position is named relative to itself, as `createMany`'s `[2].goal` is.
  await tooDeep(() => store.report(claim, deep, partial), () => store.reportAsync(claim, deep, partial), '[0][0]')
  const deepUpdates = { contextUpdates: { new_patterns: deep } }
  await tooDeep(() => store.decide(claim, 'CONTINUE', deepUpdates), () => store.decideAsync(claim, 'CONTINUE', deepUpdates),
    'contextUpdates.new_patterns[0]')
  // Counts are whole numbers, named inside their object.
  assert.deepEqual(await fields('PARTIAL', { ...partial, tests: { added: -1, passing: 1.5 } }), ['tests.added', 'tests.passing'])
  // An argument no operation knows, and a snake_case option.
  assert.deepEqual(await fields('PARTIAL', { ...partial, mood: 'good' }), ['mood'])
  const snake = await fields('PARTIAL', { files_modified: [], issues: ['x'] })
  assert.deepEqual(snake, ['files_modified'])
  // Every problem at once, in the core's order, with the worker → manager checks.
  assert.deepEqual(await fields('DONE', { filesModified: [{ path: 'a' }], mood: 'good' }),
    ['mood', 'status', 'filesModified[0].description'])
  assert.deepEqual(await fields('FAILED', {}), ['issues'])

  assert.deepEqual(snapshot(store, 't1'), before)
  assert.equal(store.report(claim, 'PARTIAL', partial).kind, 'progress', 'the claim still answers')
})

test('malformed initializations and decisions name their fields; the seed\'s keys inside a body', async () => {
  const store = Store.memory()
  const init = (options) => bothFail(() => store.initialize('t2', options), () => store.initializeAsync('t2', options))
  const empty = await init({ ...start, instructions: ' ', successCriteria: [] })
  assert.deepEqual(empty.problems.map((p) => p.field), ['instructions', 'successCriteria'])
  const missing = await init({ worker: 'w' })
  assert.deepEqual(missing.problems.map((p) => p.field).sort(), ['instructions', 'manager', 'successCriteria'])
  // A body's objects keep the seed's snake_case keys: a camelCase one is not one of them.
  const camel = await init({ ...start, context: { projectRoot: '/app' } })
  assert.deepEqual(camel.problems, [{ field: 'context.projectRoot', rule: 'is not a known field' }])
  const bad = await bothFail(() => store.initialize('bad id!', start), () => store.initializeAsync('bad id!', start))
  assert.deepEqual(bad.problems.map((p) => p.field), ['taskId'])
  assert.equal(store.list().length, 0)
  assert.equal(store.protocolStats().runs, 0)

  store.initialize('t2', start)
  const again = await init(start)
  assert.deepEqual(again.problems.map((p) => p.field), ['taskId'], 'a task runs the protocol once')
  store.report(store.claimNext('worker'), 'PARTIAL', partial)
  const manager = store.claimNext('manager')
  const before = snapshot(store, 't2')
  const decide = (decision, options) =>
    bothFail(() => store.decide(manager, decision, options), () => store.decideAsync(manager, decision, options))
  assert.deepEqual((await decide('FINISH')).problems.map((p) => p.field), ['decision'])
  assert.deepEqual((await decide('REFINE', { instructions: ' ' })).problems.map((p) => p.field), ['instructions'])
  const low = await decide('ESCALATE', {
    escalationDetails: {
      category: 'technical', severity: 'low', urgency: 'high', blocker_type: 'skill',
      description: 'd', impact: 'i', recommendation: 'r',
    },
  })
  // The core names the details' own field (`severity`), not yet within `escalationDetails`.
  assert.equal(low.problems.length, 1)
  assert.match(low.problems[0].field, /severity$/)
  assert.match(low.problems[0].rule, /medium, high or critical/)
  const noDetails = await decide('ESCALATE')
  assert.equal(noDetails.code, 'VALIDATION')
  assert.deepEqual(snapshot(store, 't2'), before)
})
