// The handoff lifecycle from Node beside the same lifecycle from Rust, in one run on the same
// machine and the same SQLite settings; and whether *Async calls keep the event loop free.
//
//   make bench-node
//   # or by hand (after `cd handoff-node && npm install && npm run build`):
//   cargo build --release -p handoff-benches --bin lifecycle_rust
//   node benches/node_lifecycle.mjs [--rounds 15] [--memory 1000 --normal 300 --full 50] [--json out.json]
//
// lifecycle = create → claim → complete of the ~1.5 KB record that benches/src/bin/lifecycle_rust.rs
// uses (3 atomic commits, each writing the record and its event), on the memory store and on
// SQLite with synchronous FULL and NORMAL (WAL in both). Node runs it with the sync calls and
// with the *Async calls awaited one after another, and with 4 such chains in flight at once
// ("async ×4", throughput: conversions on the JavaScript thread overlap SQLite work on the
// pool). Rust runs in `lifecycle_rust <mode> serve`,
// which keeps its store open between blocks; blocks of Rust, Node sync and Node async alternate
// (`--rounds` blocks each, `--memory/--normal/--full` lifecycles per block) and each figure is
// the median over blocks, so that drift in load and fsync time hits all three alike.
import { execFileSync, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { open, Store } from '../handoff-node/index.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : fallback
}
const rounds = Number(arg('rounds', 15))
const jsonOut = arg('json', null)
// Lifecycles per block.
const BLOCK = { memory: Number(arg('memory', 1000)), normal: Number(arg('normal', 300)), full: Number(arg('full', 50)) }

const line = (topic, i) => `${topic} ${i}: checked the module boundaries and wrote down what the next agent needs`
// The same record as `record()` in benches/src/bin/lifecycle_rust.rs.
const RECORD = {
  goal: 'Migrate the billing service from the legacy ORM to sqlx',
  fromAgent: 'claude',
  reason: 'context_limit_85',
  contextPct: 85,
  progress: 'Half of the repositories are ported; invoices and refunds remain. Tests pass.',
  completed: [0, 1, 2, 3].map((i) => line('ported', i)),
  pending: [0, 1, 2, 3].map((i) => line('port', i)),
  decisions: [0, 1, 2].map((i) => line('decided', i)),
  assumptions: ['the schema is frozen until the release'],
  warnings: ['refunds use a different rounding mode'],
  files: ['src/billing/invoices.rs', 'src/billing/refunds.rs', 'src/db.rs'],
  instructions: 'Port invoices first; run the billing tests after each repository.',
}

const tmp = mkdtempSync(join(tmpdir(), 'handoff-bench-'))
let dbCount = 0
const openStore = (mode) => (mode === 'memory' ? Store.memory() : open(join(tmp, `node-${mode}-${dbCount++}.db`), { synchronous: mode }))

let task = 0
/** µs per lifecycle over `n` lifecycles with the sync calls. */
function nodeSyncBlock(store, n) {
  const started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const h = store.create({ taskId: `task-${task++}`, ...RECORD })
    const c = store.claim(h.id, 'gemini', { leaseSeconds: 300 })
    store.complete(c, { outcome: 'done' })
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / n
}

/** µs per lifecycle over `n` lifecycles with the *Async calls, awaited one after another. */
async function nodeAsyncBlock(store, n) {
  const started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const h = await store.createAsync({ taskId: `task-${task++}`, ...RECORD })
    const c = await store.claimAsync(h.id, 'gemini', { leaseSeconds: 300 })
    await store.completeAsync(c, { outcome: 'done' })
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / n
}

/** µs per lifecycle over `n` lifecycles with the *Async calls, `lanes` lifecycles in flight at
 * once: Node's conversions on the JavaScript thread overlap with SQLite work on the pool. */
async function nodeAsyncParallelBlock(store, n, lanes = 4) {
  const started = process.hrtime.bigint()
  let next = 0
  const lane = async () => {
    while (next < n) {
      next++
      const h = await store.createAsync({ taskId: `task-${task++}`, ...RECORD })
      const c = await store.claimAsync(h.id, 'gemini', { leaseSeconds: 300 })
      await store.completeAsync(c, { outcome: 'done' })
    }
  }
  await Promise.all(Array.from({ length: lanes }, lane))
  return Number(process.hrtime.bigint() - started) / 1e3 / n
}

const rustBin = join(root, 'target', 'release', 'lifecycle_rust')
/** The Rust side: `lifecycle_rust <mode> serve` keeps its store open and runs a block of `n`
 * lifecycles for each `n` it reads, printing µs per lifecycle. */
function rustServer(mode) {
  const child = spawn(rustBin, [mode, 'serve'], { env: { ...process.env, BENCH_TMPDIR: tmp }, stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  return {
    async block(n) {
      child.stdin.write(`${n}\n`)
      const { value } = await lines.next()
      return Number(value)
    },
    close() { child.stdin.end() },
  }
}

/** How the event loop fares while 1,000 claims run on SQLite FULL: the ticks of a 1 ms interval
 * timer and the longest gap between two of them, with claimAsync (all issued at once) and with
 * the sync claim. */
async function eventLoop() {
  const result = {}
  for (const variant of ['async', 'sync']) {
    const store = open(join(tmp, `loop-${variant}.db`), { synchronous: 'full' })
    const made = store.createMany(Array.from({ length: 1000 }, (_, i) => ({ taskId: `l${i}`, goal: 'g' })))
    let ticks = 0
    let last = process.hrtime.bigint()
    let longest = 0n
    const tick = () => {
      const now = process.hrtime.bigint()
      if (now - last > longest) longest = now - last
      last = now
    }
    const timer = setInterval(() => { ticks++; tick() }, 1)
    const started = process.hrtime.bigint()
    last = started
    if (variant === 'async') await Promise.all(made.map((h) => store.claimAsync(h.id, 'worker')))
    else for (const h of made) store.claim(h.id, 'worker')
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    await new Promise((resolve) => setTimeout(resolve, 2))
    tick()
    clearInterval(timer)
    result[variant] = { ms: +ms.toFixed(1), timerTicks: ticks, longestGapMs: +(Number(longest) / 1e6).toFixed(1) }
  }
  return result
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

// Always (re)build the Rust side, so that it runs the same core as the addon (a no-op when
// it is up to date). The addon itself comes from `npm run build` in handoff-node.
execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'handoff-benches', '--bin', 'lifecycle_rust'], { cwd: root, stdio: 'inherit' })

// Short blocks of Rust, Node sync and Node async alternate on stores that stay open, so that
// drift in the machine's load and the disk's fsync time hits all three alike.
const samples = {}
for (const mode of ['memory', 'normal', 'full']) {
  const n = BLOCK[mode]
  const rust = rustServer(mode)
  const syncStore = openStore(mode)
  const asyncStore = openStore(mode)
  const parallelStore = openStore(mode)
  const s = (samples[mode] = { rust: [], nodeSync: [], nodeAsync: [], nodeAsync4: [] })
  await rust.block(n)
  nodeSyncBlock(syncStore, n)
  await nodeAsyncBlock(asyncStore, n)
  await nodeAsyncParallelBlock(parallelStore, n)
  for (let r = 0; r < rounds; r++) {
    s.rust.push(await rust.block(n))
    s.nodeSync.push(nodeSyncBlock(syncStore, n))
    s.nodeAsync.push(await nodeAsyncBlock(asyncStore, n))
    s.nodeAsync4.push(await nodeAsyncParallelBlock(parallelStore, n))
  }
  rust.close()
  process.stderr.write(`${mode}: done\n`)
}

const rows = Object.entries(samples).map(([mode, s]) => {
  const rustUs = median(s.rust)
  const syncUs = median(s.nodeSync)
  const asyncUs = median(s.nodeAsync)
  const async4Us = median(s.nodeAsync4)
  return {
    store: mode === 'memory' ? 'memory' : `sqlite ${mode.toUpperCase()}`,
    lifecycles: BLOCK[mode] * rounds,
    rustUs: +rustUs.toFixed(1),
    nodeSyncUs: +syncUs.toFixed(1),
    nodeAsyncUs: +asyncUs.toFixed(1),
    nodeAsync4Us: +async4Us.toFixed(1),
    // Throughput ratio Node / Rust: 1.0 means Node is as fast as Rust.
    syncRatio: +(rustUs / syncUs).toFixed(2),
    asyncRatio: +(rustUs / asyncUs).toFixed(2),
    async4Ratio: +(rustUs / async4Us).toFixed(2),
  }
})

console.log(`\nlifecycle (create → claim → complete), µs per lifecycle, median of ${rounds} interleaved blocks`)
console.log('| store | Rust | Node sync | Node async | Node async ×4 | Node sync / Rust | Node async / Rust | Node async ×4 / Rust |')
console.log('|---|---:|---:|---:|---:|---:|---:|---:|')
for (const r of rows) {
  console.log(`| ${r.store} | ${r.rustUs} | ${r.nodeSyncUs} | ${r.nodeAsyncUs} | ${r.nodeAsync4Us} | ${r.syncRatio}× | ${r.asyncRatio}× | ${r.async4Ratio}× |`)
}
const loop = await eventLoop()
console.log('\nevent loop while 1,000 claims run on SQLite FULL (1 ms interval timer)')
console.log('| calls | wall ms | timer ticks | longest gap between ticks, ms |')
console.log('|---|---:|---:|---:|')
for (const [variant, v] of Object.entries(loop)) {
  console.log(`| claim${variant === 'async' ? 'Async' : ''} | ${v.ms} | ${v.timerTicks} | ${v.longestGapMs} |`)
}
console.log(`\nnode ${process.version}, load average at the end ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`)
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ rounds, rows, eventLoop: loop }, null, 2))
