// The package: ESM and CommonJS entry points, the committed .d.ts, and that *Async calls run
// off the JavaScript thread.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import * as esm from '../index.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

test('ESM and CommonJS expose the same exports', () => {
  const cjs = require('../index.js')
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort())
  for (const key of Object.keys(cjs)) assert.equal(esm[key], cjs[key], key)
})

test("import { open } from 'handoff-core' works from ESM and CommonJS", () => {
  const esmOut = execFileSync(process.execPath, ['--input-type=module', '-e',
    "import { open, Store } from 'handoff-core'; console.log(typeof open, typeof Store.memory)"], { cwd: root })
  assert.equal(esmOut.toString().trim(), 'function function')
  const cjsOut = execFileSync(process.execPath, ['-e',
    "const { open, Store } = require('handoff-core'); console.log(typeof open, typeof Store.memory)"], { cwd: root })
  assert.equal(cjsOut.toString().trim(), 'function function')
})

test('every store method has a Promise variant, and the .d.ts declares both', () => {
  const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
  const store = esm.Store.memory()
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(store)).filter((m) => m !== 'constructor')
  const syncMethods = methods.filter((m) => !m.endsWith('Async'))
  for (const m of ['create', 'get', 'list', 'claim', 'claimNext', 'heartbeat', 'release', 'complete', 'reject',
    'cancel', 'events', 'chain', 'checkpoint', 'stalled', 'createMany', 'reap']) {
    assert.ok(syncMethods.includes(m), `Store.${m}`)
  }
  // Promise-only: `withLease` awaits work that runs on the JavaScript thread, which no sync call
  // could wait for.
  const promiseOnly = ['withLease']
  for (const m of syncMethods) {
    if (promiseOnly.includes(m)) {
      assert.match(dts, new RegExp(`\\n  ${m}(<[^>]*>)?\\([^\\n]*\\): Promise<`), `${m} in index.d.ts, as a Promise`)
      const refused = store[m]()
      refused.catch(() => {})
      assert.ok(refused instanceof Promise, `${m} returns a Promise`)
      continue
    }
    assert.ok(methods.includes(`${m}Async`), `Store.${m}Async`)
    assert.match(dts, new RegExp(`\\n  ${m}\\(`), `${m} in index.d.ts`)
    assert.match(dts, new RegExp(`\\n  ${m}Async\\([^\\n]*\\): Promise<`), `${m}Async in index.d.ts`)
  }
})

test('the .d.ts types records without any', () => {
  const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
  // In the types, not in their docs (which say "any agent", "if any").
  const types = dts.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
  assert.doesNotMatch(types, /\bany\b/, 'no `any` type')
  assert.doesNotMatch(types, /\bunknown\b/, 'no `unknown` type')
  for (const field of ['createdAt: string', 'metadata: JsonObject', 'status: HandoffStatus', 'claimToken: number | null']) {
    assert.ok(dts.includes(field), field)
  }
})

test('*Async calls leave the event loop free while 1,000 claims run', async () => {
  const db = join(mkdtempSync(join(tmpdir(), 'handoff-loop-')), 'loop.db')
  const store = esm.open(db)
  const made = store.createMany(Array.from({ length: 1000 }, (_, i) => ({ taskId: `l${i}`, goal: 'g' })))
  let settled = 0
  const claims = made.map((h) => store.claimAsync(h.id, 'worker').then((c) => { settled++; return c }))
  // A macrotask scheduled after all 1,000 calls were made runs while most are still
  // outstanding: the calls returned at once and do their SQLite work on the thread pool. Were
  // the work done on this thread, all 1,000 would be settled before the timer could fire.
  const atTimer = await new Promise((resolve) => setImmediate(() => resolve(settled)))
  assert.ok(atTimer < 1000, `a timer fired only after all claims settled (${atTimer})`)
  const done = await Promise.all(claims)
  assert.equal(done.length, 1000)
  assert.ok(done.every((c) => c.token === 1))
})

test("every public method of the core's Store is offered (keeps up as the core grows)", () => {
  const source = readFileSync(join(root, '..', 'handoff-core', 'src', 'store', 'mod.rs'), 'utf8')
  const impl = source.slice(source.indexOf('impl Store {'))
  const core = [...impl.matchAll(/\n {4}pub fn ([a-z_]+)/g)].map((m) => m[1])
  const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
  const openOptions = dts.slice(dts.indexOf('export interface OpenOptions'))
  const option = (name) => new RegExp(`\\n  ${name}\\?: `).test(openOptions.slice(0, openOptions.indexOf('\n}')))
  // Core methods offered under another name or shape: each is checked to be there.
  const offered = {
    // Constructors and configuration are `open`/`Store.memory` and their options.
    new: () => typeof esm.Store.memory === 'function',
    memory: () => typeof esm.Store.memory === 'function',
    open: () => typeof esm.open === 'function',
    open_with: () => option('synchronous') && option('lockPatienceSeconds'),
    open_read_only: () => option('readOnly'),
    with_clock: () => option('clock'),
    with_policy: () => option('policy'),
    with_limits: () => option('limits'),
    // `connect(url)` and `connectAsync(url)` take a URL of any backend, with `open`'s clock,
    // policy and limits.
    connect: () => typeof esm.connect === 'function' && typeof esm.connectAsync === 'function',
    // `connect(url, options)` takes the core's connect options, in camelCase.
    connect_with: () => {
      const options = dts.slice(dts.indexOf('export interface ConnectOptions'))
      const body = options.slice(0, options.indexOf('\n}'))
      return ['synchronous', 'lockPatienceSeconds', 'readOnly', 'poolSize', 'connectTimeoutSeconds']
        .every((name) => new RegExp(`\\n  ${name}\\?: `).test(body))
    },
    // `claimNext` waits when given `waitSeconds` (`claimNextAsync` off the JavaScript thread).
    claim_next_wait: () => dts.slice(dts.indexOf('export interface ClaimNextOptions')).includes('\n  waitSeconds?: '),
    // What `open` does when its options give no policy or limits.
    with_saved_policy: () => typeof esm.Store.memory().savedPolicy === 'function',
    // `events` takes the page filter (`after`, `limit`, `taskId`).
    events_page: () => ['after', 'limit', 'taskId'].every((k) => dts.slice(dts.indexOf('export interface EventsOptions')).includes(`\n  ${k}?: `)),
    // The policy and limits in force are the options given, or `savedPolicy()`; `now` reads the clock.
    policy: () => true,
    limits: () => true,
    now: () => true,
    // `complete` takes the tokens the work took (`tokensUsed`).
    complete_counting: () => dts.slice(dts.indexOf('export interface CompleteOptions')).includes('\n  tokensUsed?: '),
    // `apply` takes a raw state-machine command, which every named call already covers.
    apply: () => true,
    // `heartbeat` takes the progress (`heartbeat(claim, { progress })`; `lease.progress` too).
    heartbeat_with: () => dts.slice(dts.indexOf('export interface HeartbeatOptions')).includes('\n  progress?: ')
      && typeof esm.Lease.prototype.progress === 'function',
  }
  const store = esm.Store.memory()
  const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
  const missing = core.filter((name) => (name in offered ? !offered[name]() : typeof store[camel(name)] !== 'function'))
  assert.deepEqual(missing, [], `handoff-core's Store has methods the Node binding lacks: ${missing.join(', ')}`)
  assert.ok(core.includes('claim_next'), 'the scan found the core methods')
  assert.ok(core.includes('cancel_claim') && typeof store.cancelClaim === 'function', 'cancel_claim is cancelClaim')
})

test('the packed tarball carries both licence texts, as the repository has them', () => {
  // npm drops symbolic links from a tarball: the files here are copies, kept equal to the root's.
  const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: root, encoding: 'utf8' }))
  const files = new Map(packed[0].files.map((f) => [f.path, f.size]))
  for (const name of ['LICENSE-MIT', 'LICENSE-APACHE']) {
    const ours = readFileSync(join(root, name), 'utf8')
    assert.equal(ours, readFileSync(join(root, '..', name), 'utf8'), `${name} differs from the repository's`)
    assert.equal(files.get(name), Buffer.byteLength(ours), `${name} in the tarball`)
  }
})
