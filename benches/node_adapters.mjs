// What handoff-core/openai-agents costs per handoff from Node, beside the same work done without
// it, in one run on the same SQLite store: the twin of benches/python_adapters.py (issue #19:
// adapter ≤ 1.2× a plain durable lifecycle).
//
//   make bench-adapters
//   # or by hand (after `cd handoff-node && npm install && npm run build`):
//   node benches/node_adapters.mjs [--rounds 15] [--json out.json]
//
// One handoff triage → billing, both agents on scripted models (no network, the SDK's tracing
// off):
//
// - in-process: the SDK's own `handoff(billing)`, billing running right away in the same run;
//   nothing is durable. For scale only.
// - by hand: the plainest durable handoff a user writes without the adapter: a `handoff()` to a
//   stand-in target whose `onHandoff` (with the transfer's arguments as a zod `inputType`)
//   creates the record from JavaScript, then the record is claimed, billing runs on its goal,
//   and the claim is completed (3 commits). No transcript, no redaction, no heartbeats, no
//   idempotency.
// - adapter: `durableHandoff` (the run stops at the handoff, which is recorded with its redacted
//   transcript, once per call), then `claimNext` and `runClaimed` (billing runs on the packet,
//   under a lease that heartbeats, and completes).
//
// The target is adapter / by hand.
//
// The contenders take turns block by block (a block is 20 handoffs), the first one rotating, so
// the disk's fsync noise falls on all alike; a figure is the median block. Every handoff builds
// its agents anew (the scripted models are used up), as the Python twin does.
//
// @openai/agents and zod are handoff-node's devDependencies: they are imported from there, as
// the ES modules handoff-node/openai-agents.mjs itself imports (the CommonJS build would be a
// second copy of the SDK, with classes and a tracing switch of its own).
import { createRequire } from 'node:module'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { open } from '../handoff-node/index.mjs'
import { durableHandoff, runClaimed } from '../handoff-node/openai-agents.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const fromHandoffNode = createRequire(join(root, 'handoff-node', 'package.json'))

/**
 * The ES module entry of package `name` as handoff-node resolves it. (`import.meta.resolve` with
 * a parent needs --experimental-import-meta-resolve on Node 20, so: find the package as
 * `require` does, then read its `exports`.)
 */
async function importFromHandoffNode(name) {
  const main = fromHandoffNode.resolve(name)
  const marker = `${sep}node_modules${sep}${name.split('/').join(sep)}${sep}`
  const dir = main.slice(0, main.lastIndexOf(marker) + marker.length)
  const { exports: map, module, main: cjs } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  let entry = map?.['.'] ?? map
  while (entry !== null && typeof entry === 'object') entry = entry.import ?? entry.default
  return import(pathToFileURL(join(dir, entry ?? module ?? cjs)).href)
}

const { Agent, Handoff, Usage, handoff, run, setTracingDisabled } = await importFromHandoffNode('@openai/agents')
const { z } = await importFromHandoffNode('zod')

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : fallback
}
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log('usage: node benches/node_adapters.mjs [--rounds N (15)] [--json FILE]')
  process.exit(0)
}
const rounds = Number(arg('rounds', 15))
const jsonOut = arg('json', null)
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer')

const BLOCK = 20
const TRANSFER = { reason: 'a billing question', summary: 'Customer was charged twice for order 1042', pending: ['refund the duplicate charge'], instructions: null }
const QUESTION = 'I was charged twice for order 1042, please fix it.'
const REFUND = 'Refunded the second charge on order 1042.'

/** A model that answers each request with the next step of its script (a list of output items). */
class Scripted {
  constructor(...steps) { this.steps = steps }
  async getResponse() {
    const output = this.steps.shift()
    if (output === undefined) throw new Error('the script ran out')
    return { usage: new Usage({ requests: 1 }), output }
  }
  async * getStreamedResponse() { throw new Error('not streamed here') }
}
const say = (text) => [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }]
const transferCall = () => [{ type: 'function_call', callId: 'call_1', name: 'transfer_to_billing', status: 'completed', arguments: JSON.stringify(TRANSFER) }]
const billingAgent = () => new Agent({ name: 'billing', model: new Scripted(say(REFUND)) })

/** The transfer tool's arguments, as the by-hand handoff takes them (nullable, for strict mode). */
const Transfer = z.object({
  reason: z.string(),
  summary: z.string(),
  pending: z.array(z.string()).nullable(),
  instructions: z.string().nullable(),
})

function sdkAgents(durable, task) {
  const billing = billingAgent()
  const made = durable ? durableHandoff(durable, billing, { fromAgent: 'triage', taskId: task }) : handoff(billing)
  return new Agent({ name: 'triage', model: new Scripted(transferCall()), handoffs: [made] })
}

async function inProcess(store, task) {
  const result = await run(sdkAgents(null, task), QUESTION)
  if (result.finalOutput !== REFUND) throw new Error(`in-process: billing did not answer: ${result.finalOutput}`)
}

async function byHand(store, task) {
  const recorded = []
  const onHandoff = (_ctx, transfer) => {
    const h = store.create({ taskId: task, goal: transfer.summary, fromAgent: 'triage', toAgent: 'billing', pending: transfer.pending })
    recorded.push(h.id)
  }
  const standIn = new Agent({ name: 'billing', model: new Scripted(say('handed over')) })
  const made = handoff(standIn, { onHandoff, inputType: Transfer })
  await run(new Agent({ name: 'triage', model: new Scripted(transferCall()), handoffs: [made] }), QUESTION)
  const claim = store.claim(recorded[0], 'billing')
  const result = await run(billingAgent(), claim.handoff.goal)
  store.complete(claim, { outcome: String(result.finalOutput) })
}

async function adapter(store, task) {
  await run(sdkAgents(store, task), QUESTION)
  const claim = store.claimNext('billing')
  if (claim === null) throw new Error('adapter: nothing was recorded')
  await runClaimed(store, billingAgent(), claim)
}

async function block(contender, store, name, round) {
  const started = process.hrtime.bigint()
  for (let i = 0; i < BLOCK; i++) await contender(store, `${name}-${round}-${i}`)
  return Number(process.hrtime.bigint() - started) / 1e6 / BLOCK
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** ms per handoff of each contender: the median of `rounds` interleaved blocks, after a warm-up. */
async function compare(store, contenders) {
  const names = Object.keys(contenders)
  const times = Object.fromEntries(names.map((name) => [name, []]))
  const slug = (name) => name.replace(/ /g, '-')
  for (const name of names) await block(contenders[name], store, `warm-${slug(name)}`, 0)
  for (let r = 0; r < rounds; r++) {
    const order = [...names.slice(r % names.length), ...names.slice(0, r % names.length)]
    for (const name of order) times[name].push(await block(contenders[name], store, slug(name), r))
  }
  return Object.fromEntries(names.map((name) => [name, median(times[name])]))
}

setTracingDisabled(true) // the SDK's own traces would go to OpenAI's servers
const tmp = mkdtempSync(join(tmpdir(), 'handoff-bench-adapters-'))
const results = {}
try {
  const store = open(join(tmp, 'bench.db'))
  // One copy of the SDK: the adapter's handoffs are this module's Handoff.
  if (!(durableHandoff(store, billingAgent(), { fromAgent: 'triage', taskId: 'probe' }) instanceof Handoff)) {
    throw new Error('the adapter imports another copy of @openai/agents than this benchmark')
  }
  for (const [framework, contenders] of Object.entries({
    'openai-agents': { 'in-process': inProcess, 'by hand': byHand, adapter },
  })) {
    const medians = await compare(store, contenders)
    const ratio = medians.adapter / medians['by hand']
    results[framework] = { ...medians, 'adapter/by hand': ratio }
    const figures = Object.entries(medians).map(([name, ms]) => `${name} ${ms.toFixed(2).padStart(6)} ms`).join('   ')
    console.log(`${framework.padEnd(14)} ${figures}   adapter/by hand ${ratio.toFixed(2)}x`)
  }
  if (store.list({ status: 'pending' }).length !== 0) throw new Error('a handoff was left pending')
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`)
