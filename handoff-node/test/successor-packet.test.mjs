// The successor's packet from every part of the store (`contextFor`), through the Node face, on
// an SQLite file: the predecessor's unverified findings and conversation (seed 001 §8), a plan
// step's dependencies, knowledge on `main` found by relevance, a packet of 2,000 characters, an
// escalation that names the worker's last error (seed 004), a `summarize` function (and one
// that fails, which cuts instead), the Promise twin, and bad input named by field.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Store, generateBundleKey, open, toMarkdown } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'handoff-successor-')), 'handoff.db')

/** Every item offered is accounted for: included whole, cut, summarised or dropped. */
function accounted(packet) {
  const { included, truncated, summarized, dropped } = packet.manifest
  const ids = new Set([...included, ...[...truncated, ...summarized, ...dropped].map((c) => c.id)])
  for (const s of packet.sections) assert.ok(ids.has(s.id), `${s.id} is not in the manifest`)
}

test('seed 001 §8: B, who takes A\'s escalation, reads A\'s unverified findings and conversation', async () => {
  const store = open(tempDb())
  store.addFacts('task/fix-oauth/agent-a', [{ text: 'token_service.py:142 drops the refresh token after a 401', confidence: 0.8 }])
  store.addConversation('task/fix-oauth/agent-a', [
    { role: 'user', content: 'Why does the refresh fail?' },
    { role: 'assistant', content: 'The state machine resets on a 401 before the retry.' },
  ], { title: 'investigation', taskId: 'fix-oauth', agent: 'agent-a' })
  const escalation = store.create({
    taskId: 'fix-oauth',
    goal: 'Fix the OAuth2 token refresh',
    fromAgent: 'agent-a',
    kind: 'escalation',
    instructions: 'Found the issue in token_service.py:142; needs OAuth2 expertise.',
    blockers: ['Unclear OAuth2 state transition after refresh failure'],
  })
  const claim = store.claim(escalation.id, 'agent-b')

  const packet = store.contextFor(claim.handoffId)
  const md = packet.markdown
  assert.ok(md.includes('token_service.py:142 drops the refresh token after a 401 (unverified)'), md)
  assert.ok(md.includes('## Unverified Findings of agent-a (on task/fix-oauth/agent-a)'), md)
  assert.ok(md.includes('The state machine resets on a 401 before the retry.'), md)
  assert.ok(md.includes('Unclear OAuth2 state transition'), md)
  assert.ok(md.includes('Continue on `task/fix-oauth/agent-b`'), md)
  assert.equal(packet.unit, 'tokens')
  assert.equal(packet.budget, 2000)
  accounted(packet)
  assert.deepEqual([packet.manifest.truncated, packet.manifest.dropped], [[], []])
  // The sections say what they hold, and under which heading they are listed.
  const finding = packet.sections.find((s) => s.text.includes('token_service.py:142 drops'))
  assert.equal(finding.kind, 'fact')
  assert.equal(finding.group, 'Unverified Findings of agent-a (on task/fix-oauth/agent-a)')
  const said = packet.sections.find((s) => s.kind === 'message' && s.text.includes('state machine resets'))
  assert.equal(said.role, 'assistant')
  assert.match(said.group, /investigation by agent-a/)
  assert.equal(packet.sections.find((s) => s.id.endsWith('#goal')).group, null)
  // The canonical JSON says the same, in the core's words.
  const wire = JSON.parse(packet.json)
  assert.equal(wire.unit, 'tokens')
  assert.deepEqual(wire.manifest.summarized, [])

  // B's successor sees B in the task's history, and not A's findings (they were A's).
  store.complete(claim, { outcome: 'fixed the state machine' })
  const tests = store.create({ taskId: 'fix-oauth', goal: 'Add regression tests', fromAgent: 'agent-b', toAgent: 'agent-c' })
  const next = await store.contextForAsync(tests.id)
  assert.ok(next.markdown.includes('## Agent History'), next.markdown)
  assert.ok(next.markdown.includes('agent-a → agent-b (escalation'), next.markdown)
  assert.ok(next.markdown.includes('fixed the state machine'), next.markdown)
  assert.ok(!next.markdown.includes('(unverified)'), next.markdown)
  assert.ok(next.sections.some((s) => s.kind === 'history'))
})

test('a plan\'s third step reads the task\'s goal, the plan and what step 2 produced', () => {
  const store = open(tempDb())
  const task = store.createTask({
    name: 'fix-oauth-token-refresh',
    goal: 'Token refresh survives a 401 from the identity provider',
    successCriteria: ['no user is logged out by an expired token'],
    steps: [
      { id: 's1', name: 'Identify root cause', agent: 'investigator' },
      { id: 's2', name: 'Implement fix', agent: 'expert', dependencies: ['s1'] },
      { id: 's3', name: 'Add regression tests', agent: 'tester', dependencies: ['s2'] },
    ],
  })
  store.startTask(task.id)
  store.complete(store.claimNext('investigator'), { outcome: 'the state machine resets on a 401' })
  store.complete(store.claimNext('expert'), { outcome: 'retry with exponential backoff in token_service.py' })
  const s3 = store.claimNext('tester')
  assert.deepEqual(s3.handoff.metadata, { step_id: 's3' })

  const packet = store.contextFor(s3.handoffId)
  const md = packet.markdown
  assert.ok(md.includes('Token refresh survives a 401 from the identity provider'), `the task's goal: ${md}`)
  assert.ok(md.includes('s2 (Implement fix, by expert, completed): retry with exponential backoff in token_service.py'), `step 2's outcome: ${md}`)
  assert.ok(md.includes('- [x] s1 Identify root cause'), md)
  assert.ok(md.includes('s3 Add regression tests (tester, in_progress) ← this handoff'), md)
  assert.ok(md.includes('no user is logged out'), md)
  const kinds = new Set(packet.sections.map((s) => s.kind))
  assert.ok(kinds.has('task') && kinds.has('output'), [...kinds].join())
  accounted(packet)
})

test('knowledge imported into main reaches a new task by relevance, unrelated facts stay out', async () => {
  const elsewhere = Store.memory()
  const facts = Array.from({ length: 200 }, (_, i) => `invoice batch ${i} rounds line totals before summing the ledger`)
  facts.splice(117, 0, 'OAuth2 token refresh needs a retry with exponential backoff after a 401')
  elsewhere.addFacts('task/playbook', facts)
  assert.equal(elsewhere.verify('task/playbook', { verifier: () => 1 }).verified, 201)
  const bundle = elsewhere.createBundle('OAuth2 Token Refresh Fix Playbook', { taskId: 'playbook' })
  // Signed by a key the store trusts, its verdicts hold here.
  const keys = generateBundleKey()
  const signed = elsewhere.signBundle(bundle.id, { secretKey: keys.secret_key })

  const store = open(tempDb())
  store.trustBundleKeys({ trust: [keys.public_key] })
  const imported = store.importBundle(signed.toJson())
  assert.deepEqual([imported.target_branch, imported.trusted, imported.facts_added], ['main', true, 201])

  const h = store.create({ taskId: 'oauth-again', goal: 'Users are logged out when the OAuth token expires', pending: ['make the token refresh robust'] })
  for (const packet of [store.contextFor(h.id), await store.contextForAsync(h.id)]) {
    const md = packet.markdown
    assert.ok(md.includes('## Relevant Knowledge on main'), md)
    assert.ok(md.includes('OAuth2 token refresh needs a retry with exponential backoff after a 401 (verified by bundle:'), md)
    assert.ok(!md.includes('invoice batch'), `unrelated facts stay out: ${md}`)
  }
})

test('a packet of 2,000 characters: the Markdown fits, the mandatory sections are whole, cuts are listed', async () => {
  const store = open(tempDb())
  store.addFacts('task/ledger/agent-a', Array.from({ length: 60 }, (_, i) => `finding ${i}: the ledger export drifts by one cent on refunds of batch ${i}`))
  const h = store.create({
    taskId: 'ledger',
    goal: 'Find why the ledger export drifts',
    fromAgent: 'agent-a',
    instructions: 'Start with the refunds of batch 7.',
    blockers: ['no access to the production ledger'],
    completed: Array.from({ length: 40 }, (_, i) => `checked batch ${i} against the bank statement`),
  })
  const packet = store.contextFor(h.id, { budgetChars: 2000 })
  const md = packet.markdown
  assert.ok([...md].length <= 2000, `${[...md].length} characters:\n${md}`)
  assert.deepEqual([packet.unit, packet.budget, packet.tokens], ['chars', 2000, [...md].length])
  for (const whole of ['Find why the ledger export drifts', 'Start with the refunds of batch 7.', 'no access to the production ledger']) {
    assert.ok(md.includes(whole), `${whole}: ${md}`)
  }
  const { truncated, dropped } = packet.manifest
  assert.ok(dropped.length > 0, JSON.stringify(packet.manifest))
  assert.ok(dropped.every((d) => d.reason === 'budget'))
  for (const cut of truncated) {
    assert.ok(cut.keptTokens < cut.originalTokens)
    assert.ok(packet.sections.find((s) => s.id === cut.id).text.includes('…'))
  }
  // The latest findings are kept, the oldest go first.
  assert.ok(md.includes('finding 59:') && !md.includes('finding 0:'), md)
  accounted(packet)
  assert.deepEqual(await store.contextForAsync(h.id, { budgetChars: 2000 }), packet, 'the same packet as a Promise')
})

test('seed 004: an escalation names the worker\'s last error; the run keeps its dependencies and configuration', async () => {
  const store = open(tempDb())
  const take = (agent) => {
    const claim = store.claimNext(agent)
    assert.ok(claim, `a message for ${agent}`)
    return claim
  }
  store.initialize('task_12345', {
    manager: 'manager',
    worker: 'worker',
    instructions: 'Add token refresh to src/auth.js',
    successCriteria: ['refresh retried with backoff'],
    context: { project_root: '/app', constraints: ['no new services'] },
    maxRetries: 1,
  })
  store.report(take('worker'), 'PARTIAL', {
    accomplished: ['refresh call'],
    filesModified: [{ path: 'src/auth.js', description: 'refresh on 401' }],
    issues: ['no backoff'],
  })
  store.decide(take('manager'), 'REFINE', {
    instructions: 'Add exponential backoff',
    contextUpdates: { dependencies_added: ['exponential-backoff'] },
  })
  const error = {
    errorType: 'configuration',
    severity: 'high',
    description: 'the sandbox rejects the client id',
    errorMessages: ['invalid_client: unknown client id 4711'],
  }
  store.reportError(take('worker'), error)
  store.recover(take('manager'), { strategy: 'use the staging client id', steps: ['read STAGING_CLIENT_ID', 'retry'] })
  store.reportError(take('worker'), error)
  const escalation = store.recover(take('manager'), { strategy: 'use the staging client id', steps: ['retry'] })
  assert.deepEqual([escalation.kind, escalation.toAgent], ['escalation', 'human'])

  const md = toMarkdown(escalation)
  assert.ok(md.includes('## Complete History'), md)
  assert.ok(md.includes('Worker: PARTIAL'), md)
  assert.ok(md.includes('Last error: invalid_client: unknown client id 4711'), md)
  assert.match(escalation.protocol.escalation_details.description, /Last error: invalid_client: unknown client id 4711/)
  const state = escalation.protocol.current_state
  assert.deepEqual(state.dependencies, ['exponential-backoff'])
  assert.deepEqual(state.configuration, ['project root: /app', 'constraint: no new services'])
  const run = store.protocolRun('task_12345')
  assert.deepEqual(run.dependencies, ['exponential-backoff'])
  assert.deepEqual(run.configuration, ['project root: /app', 'constraint: no new services'])
  assert.deepEqual(await store.protocolRunAsync('task_12345'), run)

  // The human's packet carries the error too.
  const packet = await store.contextForAsync(escalation.id, { budgetChars: 4000 })
  assert.ok(packet.markdown.includes('invalid_client: unknown client id 4711'), packet.markdown)
})

/** A handoff whose predecessor left one finding far longer than a small packet holds. */
function longFinding() {
  const store = open(tempDb())
  store.addFacts('task/t/agent-a', [`the parser drops the last token of every line ${'because the lexer stops one byte early; '.repeat(60)}`])
  const h = store.create({ taskId: 't', goal: 'Fix the parser', fromAgent: 'agent-a', instructions: 'Start with the lexer', pending: ['fix it'] })
  return { store, h }
}

test('summarize compresses what does not fit whole; one that fails leaves it cut', async () => {
  const { store, h } = longFinding()
  const asked = []
  const packet = store.contextFor(h.id, {
    budgetChars: 1200,
    summarize: (request) => {
      asked.push(request)
      return 'the lexer stops one byte early'
    },
  })
  assert.equal(asked.length, 1)
  const [request] = asked
  assert.deepEqual(Object.keys(request).sort(), ['budget', 'id', 'text', 'title', 'unit'])
  assert.equal(request.unit, 'chars')
  assert.ok(request.budget > 0 && request.budget < 1200)
  assert.equal(request.title, 'Unverified Findings of agent-a (on task/t/agent-a)')
  assert.match(request.text, /^the parser drops the last token/)
  const [summarized] = packet.manifest.summarized
  assert.equal(summarized.id, request.id)
  assert.ok(summarized.keptTokens < summarized.originalTokens)
  assert.deepEqual(packet.manifest.truncated, [])
  assert.ok(packet.markdown.includes('the lexer stops one byte early'), packet.markdown)
  assert.ok([...packet.markdown].length <= 1200)
  accounted(packet)

  // Throwing, answering no string, or an empty one: no crash, the item is cut as without one.
  const plain = store.contextFor(h.id, { budgetChars: 1200 })
  assert.equal(plain.manifest.truncated[0].id, request.id)
  for (const summarize of [() => { throw new Error('no model today') }, () => 42, () => null, () => ({ text: 'x' }), () => '']) {
    const cut = store.contextFor(h.id, { budgetChars: 1200, summarize })
    assert.deepEqual(cut.manifest.summarized, [], String(summarize))
    assert.deepEqual(cut.manifest, plain.manifest, String(summarize))
    assert.equal(cut.markdown, plain.markdown)
  }

  // The Promise twin awaits an async summarizer, and cuts when it rejects.
  const awaited = await store.contextForAsync(h.id, {
    budgetChars: 1200,
    summarize: async ({ unit }) => `summarised in ${unit}: the lexer stops early`,
  })
  assert.equal(awaited.manifest.summarized.length, 1)
  assert.ok(awaited.markdown.includes('summarised in chars: the lexer stops early'), awaited.markdown)
  const rejected = await store.contextForAsync(h.id, { budgetChars: 1200, summarize: async () => { throw new Error('rate limited') } })
  assert.deepEqual(rejected.manifest, plain.manifest)
  const thrown = await store.contextForAsync(h.id, { budgetChars: 1200, summarize: () => { throw new Error('no model') } })
  assert.deepEqual(thrown.manifest, plain.manifest)

  // The sync call cannot wait for a Promise: a TypeError, as `verify` gives.
  assert.throws(() => store.contextFor(h.id, { summarize: async () => 'x', budgetChars: 1200 }), TypeError)
  assert.throws(() => store.contextFor(h.id, { summarize: () => Promise.reject(new Error('late')), budgetChars: 1200 }),
    /the summarize function answers with a Promise, which contextFor cannot wait for: use contextForAsync/)
  // Without an item to compress, it is not asked at all.
  let calls = 0
  store.contextFor(h.id, { budgetTokens: 4000, summarize: () => { calls++; return 'x' } })
  assert.equal(calls, 0)
})

test('the Promise form gives the same packet, with its toMessages method', async () => {
  const { store, h } = longFinding()
  const transcript = [{ role: 'user', content: 'please continue the parser fix' }, { role: 'assistant', content: 'on it' }]
  const sync = store.contextFor(h.id, { budgetTokens: 800, transcript })
  const promised = store.contextForAsync(h.id, { budgetTokens: 800, transcript })
  assert.ok(promised instanceof Promise)
  const packet = await promised
  assert.deepEqual(packet, sync)
  assert.equal(typeof packet.toMessages, 'function')
  assert.ok(packet.toMessages('openai_responses').length > 0)
  assert.ok(packet.markdown.includes('please continue the parser fix'), packet.markdown)
  assert.ok(packet.sections.some((s) => s.kind === 'message' && s.group === 'this run'), JSON.stringify(packet.sections.map((s) => [s.kind, s.group])))
  assert.ok(packet.tokens <= 800)
})

test('bad input is a VALIDATION error naming the field, from both forms', async () => {
  const { store, h } = longFinding()
  const fields = async (options) => {
    const err = await bothFail(() => store.contextFor(h.id, options), () => store.contextForAsync(h.id, options))
    assert.equal(err.code, 'VALIDATION', err.message)
    return err.problems.map((p) => p.field)
  }
  assert.deepEqual(await fields({ budgetChars: 0 }), ['budgetChars'])
  assert.deepEqual(await fields({ budgetTokens: 0 }), ['budgetTokens'])
  assert.deepEqual(await fields({ budgetChars: -3 }), ['budgetChars'])
  assert.deepEqual(await fields({ budgetChars: 1.5 }), ['budgetChars'])
  const both = await bothFail(() => store.contextFor(h.id, { budgetTokens: 100, budgetChars: 100 }), () => store.contextForAsync(h.id, { budgetTokens: 100, budgetChars: 100 }))
  assert.equal(both.code, 'VALIDATION')
  assert.deepEqual(both.problems.map((p) => p.field), ['budgetChars'])
  assert.match(both.problems[0].rule, /not both/)
  assert.deepEqual(await fields({ summarize: 'shorter please' }), ['summarize'])
  assert.deepEqual(await fields({ summarize: 5, budgetChars: 0 }), ['budgetChars', 'summarize'])
  assert.deepEqual(await fields({ transcript: [{ role: 'user' }] }), ['transcript[0].content'])
  assert.deepEqual(await fields({ transcript: 'hello' }), ['transcript'])
  assert.deepEqual(await fields({ budget_chars: 10 }), ['budget_chars'])
  const missing = await bothFail(() => store.contextFor('no-such-handoff'), () => store.contextForAsync('no-such-handoff'))
  assert.equal(missing.code, 'NOT_FOUND')
  const noId = await bothFail(() => store.contextFor(), () => store.contextForAsync())
  assert.deepEqual(noId.problems.map((p) => p.field), ['handoffId'])
})
