// A scripted two-agent handoff on ./handoff.db: a planner runs out of context and hands its work
// to whichever coder claims it first; the coder heartbeats, checkpoints and completes.
//
//   node examples/node/swarm.mjs [--db PATH]
import { open, toMarkdown } from 'handoff-core'

const dbFlag = process.argv.indexOf('--db')
const path = dbFlag >= 0 ? process.argv[dbFlag + 1] : './handoff.db'
const store = open(path, { synchronous: 'full' })
const taskId = `refactor-auth-${Date.now()}`

// Agent 1: the planner writes its last will before its context window fills up.
const planner = 'planner'
const handoff = await store.createAsync({
  taskId,
  goal: 'Move session handling out of the auth controller',
  fromAgent: planner,
  reason: 'context_limit_85',
  contextPct: 85,
  progress: 'Mapped every caller of SessionStore; extracted the interface.',
  completed: ['list callers of SessionStore', 'extract SessionRepository interface'],
  pending: ['implement SqlSessionRepository', 'switch AuthController to the repository', 'run the auth tests'],
  decisions: ['keep the cookie format unchanged: mobile clients parse it'],
  warnings: ['tests/auth/legacy_test.py is flaky under load'],
  files: ['src/auth/controller.py', 'src/auth/session_repository.py'],
  instructions: 'Do not touch the token refresh path; it is being rewritten elsewhere.',
  metadata: { ticket: 'AUTH-142', estimateHours: 3 },
})
console.log(`${planner} handed over ${handoff.id} (${handoff.reason})`)

// Agent 2: a coder asks for the next piece of work it may take.
const coder = 'coder'
const claim = await store.claimNextAsync(coder, { taskId, leaseSeconds: 120 })
if (claim === null) throw new Error('nothing to claim')
console.log(`${coder} claimed it with fencing token ${claim.token}; its prompt starts with:\n`)
console.log(toMarkdown(claim.handoff).split('\n').slice(0, 12).join('\n'), '\n...\n')

// A second coder arriving late gets nothing: exactly one successor takes the work.
const late = await store.claimNextAsync('coder-2', { taskId })
console.log(`coder-2 found ${late === null ? 'nothing left to claim' : 'work (unexpected!)'}`)

// The coder works, keeps its lease alive, saves progress, and finishes.
await store.heartbeatAsync(claim)
await store.checkpointAsync(taskId, coder, {
  goal: 'Move session handling out of the auth controller',
  progress: 'SqlSessionRepository implemented; controller switched.',
  completed: ['implement SqlSessionRepository', 'switch AuthController to the repository'],
  pending: ['run the auth tests'],
})
const done = await store.completeAsync(claim, { outcome: 'sessions live in SessionRepository; auth tests pass' })
console.log(`${coder} completed: ${done.status}, outcome: ${done.outcome}`)

const chain = await store.chainAsync(taskId)
console.log(`chain: ${chain.text}`)
const events = await store.eventsAsync({ id: handoff.id })
console.log(`events: ${events.map((e) => e.kind).join(' → ')}`)
