// The Deep Agents state protocol's bilingual blog post, run as a task: a plan of four steps
// (research, a Korean and an English draft, a review), each step a handoff, taken by three
// workers — researcher, writer, reviewer — in worker threads that share one SQLite file and wait
// for work instead of polling. The workers count their steps in a shared memory document with
// `memoryUpdateAsync`.
//
//   node examples/node/tasks.mjs [--db PATH]
import { Worker, isMainThread, workerData } from 'node:worker_threads'

import { open } from 'handoff-core'

if (isMainThread) {
  const dbFlag = process.argv.indexOf('--db')
  const db = dbFlag >= 0 ? process.argv[dbFlag + 1] : './tasks.db'
  const store = open(db)
  const task = store.createTask({
    name: 'Write a post',
    goal: 'A bilingual blog post',
    orchestrator: 'lead',
    steps: [
      { id: 'research', name: 'Research', agent: 'researcher' },
      { id: 'draft-ko', name: 'Draft in Korean', agent: 'writer', dependencies: ['research'] },
      { id: 'draft-en', name: 'Draft in English', agent: 'writer', dependencies: ['research'] },
      { id: 'review', name: 'Review both drafts', agent: 'reviewer', dependencies: ['draft-ko', 'draft-en'] },
    ],
  })
  store.startTask(task.id)
  console.log(`task ${task.id} started: ${store.getTask(task.id).currentSteps.join(', ')} offered`)

  // One worker thread per agent, each taking as many steps as the plan gives it.
  const workers = [['researcher', 1], ['writer', 2], ['reviewer', 1]].map(([agent, steps]) =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { db, agent, steps, taskId: task.id } })
      worker.on('error', reject)
      worker.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${agent} exited with ${code}`))))
    }))
  await Promise.all(workers)

  const done = store.getTask(task.id)
  console.log(`task ${done.status}: ${done.stepsDone}/${done.stepsTotal} steps, ${done.tokensUsed} tokens`)
  for (const step of done.steps) console.log(`  ${step.id} (${step.agent}): ${step.output}`)
  console.log(`steps counted in shared memory: ${JSON.stringify(store.memoryGet(`task:${task.id}`).value)}`)
  const [entry] = store.taskHistory({ limit: 1 })
  console.log(`history: ${entry.result} in ${entry.durationSeconds.toFixed(2)} s`)
  if (done.status !== 'completed') process.exit(1)
} else {
  const { db, agent, steps, taskId } = workerData
  const store = open(db)
  for (let i = 0; i < steps; i++) {
    // Waits on a thread of its own until the step is offered (its dependencies done).
    const claim = await store.claimNextAsync(agent, { taskId, waitSeconds: 30 })
    if (claim === null) throw new Error(`${agent} found no step to take`)
    const step = claim.handoff.metadata.step_id
    await store.memoryUpdateAsync(`task:${taskId}`, (value) => ({ ...value, [agent]: (value[agent] ?? 0) + 1 }))
    await store.completeAsync(claim, { outcome: `${step} done by ${agent}`, tokensUsed: 100 * (i + 1) })
  }
}
