// Knowledge bundles, task replay and run comparison (docs/design.md §9) through the Node face: a task's
// verified knowledge packaged as a redacted bundle with a kb_ share token, found by token unless
// private, imported into another store from its text, its data or the Bundle itself (once),
// hostile bundles refused whole with the store left as it was; a task's run as one timeline, two
// runs side by side. Results keep the core's snake_case keys; `toJson()` gives the portable JSON.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'

import { Store, generateBundleKey, open } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const TASK = 'fix-oauth'
const BRANCH = `task/${TASK}/agent-b`
const KEY = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t'

const CONVERSATION = [
  { role: 'user', content: 'The OAuth refresh fails after an hour: fix it' },
  { role: 'assistant', content: "I'll retry the refresh with exponential backoff." },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'edit_file', arguments: '{"path":"auth/refresh.py"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'edited' },
  { role: 'assistant', content: 'Done: the refresh retries with backoff and the tests pass.' },
]

const FACTS = [
  'refresh tokens expire after one hour',
  { text: 'the refresh needs retries with backoff', confidence: 0.9, source: 'auth/refresh.py' },
  `the staging client uses the key ${KEY}`,
]

/** Scores as a reviewer would: the one-hour fact is wrong, the others hold. */
function reviewer(item) {
  if (item.kind === 'conversation') return 0.5
  return item.text.includes('one hour') ? [0.2, 'it is 30 minutes'] : [0.9, 'checked']
}

/**
 * A task's run with its curated memory: agent-a hands the task to agent-b, who talks it through,
 * notes facts (one holding a secret), has them verified, cherry-picks the fix onto the task's
 * branch and completes the handoff.
 */
function curated(store, task = TASK, agent = 'agent-b') {
  const handoff = store.create({ taskId: task, goal: 'Fix the OAuth refresh', fromAgent: 'agent-a', toAgent: agent, decisions: ['retry with backoff'] })
  const claim = store.claim(handoff.id, agent)
  const branch = `task/${task}/${agent}`
  const conversation = store.addConversation(branch, CONVERSATION, { title: 'fixing the refresh' })
  store.addFacts(branch, FACTS)
  store.verify(branch, { verifier: reviewer })
  const picked = store.cherryPick(conversation.id, `task/${task}`, { fromSeq: 2, toSeq: 4, title: 'the fix' })
  store.complete(claim, { outcome: 'the refresh retries with backoff' })
  return { handoff, conversation, picked }
}

/** Everything an import could change, to compare before and after a refused call. */
function snapshot(store) {
  const conversations = store.listConversations()
  return {
    branches: store.branches(),
    conversations,
    messages: conversations.map((c) => store.messages(c.id)),
    facts: store.branches().map((b) => store.facts(b.name)),
    events: store.curationEvents(),
    bundles: store.listBundles().map((b) => b.id),
  }
}

test('createBundle packages a task\'s verified knowledge, redacted, with a kb_ share token', async () => {
  const store = Store.memory()
  const { picked } = curated(store)
  const bundle = store.createBundle('OAuth2 refresh playbook', { taskId: TASK, visibility: 'team', tags: ['oauth'], description: 'how the refresh was fixed' })
  assert.match(bundle.share_token, /^kb_[0-9a-f]{64}$/)
  assert.deepEqual(
    [bundle.name, bundle.visibility, bundle.bundle_type, bundle.source_task_id, bundle.source_branch, bundle.tags, bundle.description],
    ['OAuth2 refresh playbook', 'team', 'task_export', TASK, `task/${TASK}`, ['oauth'], 'how the refresh was fixed'],
  )
  // The two verified facts (not the invalidated one) and the cherry-picked conversation (not
  // agent-b's own, which no verifier passed).
  assert.deepEqual([bundle.fact_count, bundle.conversation_count, bundle.message_count], [2, 1, 3])
  assert.equal(bundle.verification_status, 'draft')
  assert.equal(bundle.verified_by, 'reviewer')
  assert.equal(bundle.verification_score, 0.9)
  assert.match(bundle.created_at, /^\d{4}-\d\d-\d\dT/)
  // The core's snake_case keys: no camelCase twin.
  assert.equal('shareToken' in bundle, false)

  // The portable form, as data and as the core's JSON text: the secret redacted by default.
  const text = bundle.toJson()
  assert.equal(typeof text, 'string')
  assert.ok(!text.includes(KEY), 'the secret in a fact does not leave the store')
  assert.match(text, /\[REDACTED:openai-api-key\]/)
  assert.deepEqual(JSON.parse(text), bundle.data)
  assert.equal(bundle.data.schema_version, 1)
  assert.match(bundle.data.content_hash, /^sha256:[0-9a-f]{64}$/)
  assert.equal(bundle.data.content_hash, bundle.content_hash)
  assert.deepEqual(bundle.data.facts.map((f) => [f.text.includes('[REDACTED:'), f.score, f.verified_by]),
    [[false, 0.9, 'reviewer'], [true, 0.9, 'reviewer']])
  assert.deepEqual(bundle.data.conversations.map((c) => [c.id, c.title, c.messages.length]), [[picked.id, 'the fix', 3]])
  assert.deepEqual(bundle.data.conversations[0].messages[1].tool_calls, [{ id: 'call_1', name: 'edit_file', arguments: { path: 'auth/refresh.py' } }])

  // toJson is a method, not data: the bundle compares, spreads and serialises as data.
  assert.equal(Object.keys(bundle).includes('toJson'), false)
  assert.deepEqual(JSON.parse(JSON.stringify(bundle)).data, bundle.data)
  assert.deepEqual(store.getBundle(bundle.id), bundle)
  assert.equal(store.getBundle(bundle.id).toJson(), text)
  const [listed] = store.listBundles()
  assert.equal(listed.toJson(), text)
  assert.deepEqual(await store.getBundleAsync(bundle.id), bundle)

  // Without redaction the secret stays (its owner asked for it); a branch's bundle; the Promise twin.
  const plain = await store.createBundleAsync('raw', { taskId: TASK, redact: false, verifiedOnly: false })
  assert.ok(plain.toJson().includes(KEY))
  assert.equal(typeof plain.toJson, 'function')
  // Not verified only: also agent-b's own conversation, not the invalidated fact.
  assert.deepEqual([plain.fact_count, plain.conversation_count], [2, 2])
  const branchBundle = store.createBundle('agent-b', { branch: BRANCH, bundleType: 'curated' })
  assert.deepEqual([branchBundle.bundle_type, branchBundle.source_branch, branchBundle.source_task_id], ['curated', BRANCH, null])
  assert.deepEqual(store.listBundles().map((b) => b.id), [bundle.id, plain.id, branchBundle.id])
  assert.deepEqual((await store.listBundlesAsync({ visibility: 'team' })).map((b) => b.id), [bundle.id])
  assert.ok((await store.listBundlesAsync()).every((b) => typeof b.toJson === 'function'))

  // The log says a bundle was made.
  const made = store.curationEvents({ taskId: TASK }).filter((e) => e.kind === 'bundle_created')
  assert.equal(made[0].detail.bundle_id, bundle.id)
})

test('createBundle refuses bad arguments, every problem at once', async () => {
  const store = Store.memory()
  let err = await bothFail(() => store.createBundle('x', {}), () => store.createBundleAsync('x', {}))
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['taskId'])
  err = await bothFail(
    () => store.createBundle('', { branch: 'feature/x', visibility: 'everyone', bundleType: 'zip' }),
    () => store.createBundleAsync('', { branch: 'feature/x', visibility: 'everyone', bundleType: 'zip' }),
  )
  assert.deepEqual(err.problems.map((p) => p.field).sort(), ['branch', 'bundleType', 'visibility'])
  err = await bothFail(() => store.createBundle('', { taskId: TASK }), () => store.createBundleAsync('', { taskId: TASK }))
  assert.deepEqual(err.problems.map((p) => p.field), ['name'])
  err = await bothFail(() => store.createBundle('x', { task_id: TASK }), () => store.createBundleAsync('x', { task_id: TASK }))
  assert.match(err.problems[0].rule, /camelCase: taskId/)
  assert.deepEqual(store.listBundles(), [])
})

test('bundleByToken opens a team or public bundle; a private one is NOT_FOUND like a wrong token', async () => {
  const store = Store.memory()
  curated(store)
  const team = store.createBundle('team', { taskId: TASK, visibility: 'team' })
  const secret = store.createBundle('private', { taskId: TASK })
  assert.equal(secret.visibility, 'private')
  assert.equal(secret.share_token, null, 'a private bundle has no token')

  const found = store.bundleByToken(team.share_token)
  assert.deepEqual(found, team)
  assert.equal(found.toJson(), team.toJson())
  assert.deepEqual(await store.bundleByTokenAsync(team.share_token), team)

  const wrong = await bothFail(() => store.bundleByToken(`kb_${'0'.repeat(64)}`), () => store.bundleByTokenAsync(`kb_${'0'.repeat(64)}`))
  const garbage = await bothFail(() => store.bundleByToken('x'.repeat(4096)), () => store.bundleByTokenAsync('x'.repeat(4096)))
  for (const err of [wrong, garbage]) {
    assert.deepEqual([err.code, err.what, err.id, err.message], [wrong.code, wrong.what, wrong.id, wrong.message])
  }
  assert.deepEqual([wrong.code, wrong.what], ['NOT_FOUND', 'bundle'])
  assert.ok(!wrong.message.includes('kb_'), 'the error does not echo the token')

  // Visibility changes who finds it.
  const opened = store.setVisibility(secret.id, 'public')
  assert.equal(opened.visibility, 'public')
  assert.equal(typeof opened.toJson, 'function')
  assert.match(opened.share_token, /^kb_/)
  assert.equal(store.bundleByToken(opened.share_token).id, secret.id)
  // Made private, a token dies for good: the same answer as a wrong one, and sharing again
  // issues another.
  const closed = await store.setVisibilityAsync(team.id, 'private')
  assert.equal(closed.visibility, 'private')
  assert.equal(closed.share_token, null)
  assert.equal((await bothFail(() => store.bundleByToken(team.share_token), () => store.bundleByTokenAsync(team.share_token))).message, wrong.message)
  const reopened = store.setVisibility(team.id, 'team')
  assert.notEqual(reopened.share_token, team.share_token)
  assert.equal(store.bundleByToken(reopened.share_token).id, team.id)

  const err = await bothFail(() => store.setVisibility(team.id, 'world'), () => store.setVisibilityAsync(team.id, 'world'))
  assert.deepEqual(err.problems.map((p) => p.field), ['visibility'])
  const missing = await bothFail(() => store.setVisibility('nope', 'team'), () => store.setVisibilityAsync('nope', 'team'))
  assert.deepEqual([missing.code, missing.what, missing.id], ['NOT_FOUND', 'bundle', 'nope'])
})

test('importBundle takes the text, the data or the Bundle, into another store, once', async () => {
  const source = Store.memory()
  curated(source)
  const bundle = source.createBundle('OAuth2 refresh playbook', { taskId: TASK, visibility: 'team' })
  const text = bundle.toJson()

  // Into a memory store, from the text; then again from the data and from the Bundle itself.
  const target = Store.memory()
  const checked = target.importBundle(text, { dryRun: true })
  assert.deepEqual(target.facts('main'), [], 'a dry run writes nothing')
  const first = target.importBundle(text)
  assert.deepEqual(checked, first)
  assert.deepEqual(first, {
    bundle: 'OAuth2 refresh playbook',
    target_branch: 'main',
    facts_added: 2,
    facts_skipped: 0,
    conversations_added: 1,
    conversations_skipped: 0,
    messages_added: 3,
    signed_by: null,
    trusted: false,
  })
  const again = { ...first, facts_added: 0, facts_skipped: 2, conversations_added: 0, conversations_skipped: 1, messages_added: 0 }
  assert.deepEqual(target.importBundle(JSON.parse(text)), again)
  assert.deepEqual(target.importBundle(bundle.data), again)
  assert.deepEqual(target.importBundle(bundle), again)
  assert.deepEqual(await target.importBundleAsync(bundle), again)
  // A Bundle that went through JSON (over the wire, into a file) is still a Bundle.
  assert.deepEqual(target.importBundle(JSON.parse(JSON.stringify(bundle))), again)
  // Unsigned, the bundle's verdicts arrive as its claim: the facts active, their scores kept,
  // vouched for by the bundle (not this store); the secret still redacted.
  const facts = target.facts('main')
  assert.deepEqual(facts.map((f) => [f.status, f.score, f.verified_by]),
    [['active', 0.9, `bundle:${bundle.content_hash.slice(0, 23)}`], ['active', 0.9, `bundle:${bundle.content_hash.slice(0, 23)}`]])
  assert.deepEqual(target.listConversations({ branch: 'main' }).map((c) => c.verification_status), ['unverified'])
  assert.ok(facts.every((f) => !f.text.includes(KEY)))
  assert.ok(facts.some((f) => f.text.includes('[REDACTED:openai-api-key]')))
  const [conversation] = target.listConversations({ branch: 'main' })
  assert.deepEqual(target.messages(conversation.id).map((m) => m.content), CONVERSATION.slice(1, 4).map((m) => m.content ?? ''))
  assert.equal(target.curationEvents().filter((e) => e.kind === 'bundle_imported').length, 6)

  // Into a second file, from the Bundle, as a Promise, on a branch of its own.
  const dir = mkdtempSync(join(tmpdir(), 'handoff-bundles-'))
  try {
    const file = open(join(dir, 'other.db'))
    const report = await file.importBundleAsync(bundle, { targetBranch: 'task/oauth-playbook' })
    assert.deepEqual([report.target_branch, report.facts_added, report.conversations_added], ['task/oauth-playbook', 2, 1])
    assert.equal((await file.importBundleAsync(text, { targetBranch: 'task/oauth-playbook' })).facts_skipped, 2)
    assert.deepEqual(file.facts('task/oauth-playbook').map((f) => f.text), facts.map((f) => f.text))
    // Read back by another handle on the same file.
    assert.equal(open(join(dir, 'other.db')).facts('task/oauth-playbook').length, 2)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a signed bundle is verified only where its key is trusted; the secret key is never shown', async () => {
  const keys = generateBundleKey()
  assert.match(keys.public_key, /^ed25519:[0-9a-f]{64}$/)
  assert.match(keys.secret_key, /^ed25519-secret:[0-9a-f]{64}$/)
  // The secret is not enumerable: printing, serialising or spreading the pair leaves it out.
  for (const shown of [inspect(keys), inspect(keys, { depth: 9 }), String(keys), JSON.stringify(keys), JSON.stringify({ ...keys })]) {
    assert.ok(!shown.includes(keys.secret_key.slice('ed25519-secret:'.length)), shown)
  }
  assert.deepEqual(Object.keys(keys), ['public_key'])

  const source = Store.memory()
  curated(source)
  const made = source.createBundle('playbook', { taskId: TASK })
  assert.equal('signature' in made.data, false)
  const signed = source.signBundle(made.id, { secretKey: keys.secret_key })
  assert.equal(signed.content_hash, made.content_hash)
  assert.equal(signed.data.signature.public_key, keys.public_key)
  assert.match(signed.data.signature.signature, /^[0-9a-f]{128}$/)
  assert.deepEqual(JSON.parse(signed.toJson()), signed.data)
  assert.ok(!signed.toJson().includes(keys.secret_key))
  assert.deepEqual(await source.signBundleAsync(made.id, { secretKey: keys.secret_key }), { ...signed, updated_at: source.getBundle(made.id).updated_at })

  // Into a store that does not trust the key: signed, not trusted, its verdicts its claim.
  const target = Store.memory()
  const untrusted = target.importBundle(signed)
  assert.deepEqual([untrusted.signed_by, untrusted.trusted, untrusted.facts_added], [keys.public_key, false, 2])
  assert.deepEqual(target.facts('main').map((f) => f.status), ['active', 'active'])

  // Trusted: into another branch, verified, saying whose word it is.
  const trusted = target.trustBundleKeys({ trust: [keys.public_key] })
  assert.deepEqual(trusted.map((k) => k.public_key), [keys.public_key])
  assert.match(trusted[0].trusted_at, /^\d{4}-\d\d-\d\dT/)
  assert.deepEqual(await target.trustBundleKeysAsync(), trusted)
  assert.deepEqual(target.trustBundleKeys({ trust: [keys.public_key] }), trusted, 'trusting again changes nothing')
  const report = await target.importBundleAsync(signed.toJson(), { targetBranch: 'task/rerun' })
  assert.deepEqual([report.signed_by, report.trusted, report.facts_added], [keys.public_key, true, 2])
  const facts = target.facts('task/rerun')
  assert.deepEqual(facts.map((f) => f.status), ['verified', 'verified'])
  assert.ok(facts.every((f) => f.verified_by.endsWith(`signed by ${keys.public_key}`)), facts.map((f) => f.verified_by).join())
  // The conversation's score (0.5) does not pass the gate even from a trusted signer.
  assert.deepEqual(target.listConversations({ branch: 'task/rerun' }).map((c) => [c.verification_status, c.verified_by]),
    [['unverified', `bundle:${made.content_hash.slice(0, 23)} signed by ${keys.public_key}`]])
  assert.deepEqual(await target.trustBundleKeysAsync({ distrust: [keys.public_key] }), [])

  // The signature claimed for another key does not hold: refused by name, nothing written.
  const claimed = JSON.parse(signed.toJson())
  claimed.signature.public_key = generateBundleKey().public_key
  let err = await bothFail(() => target.importBundle(claimed, { targetBranch: 'task/claimed' }),
    () => target.importBundleAsync(JSON.stringify(claimed), { targetBranch: 'task/claimed' }))
  assert.deepEqual([err.code, err.problems.map((p) => p.field)], ['VALIDATION', ['signature']])
  assert.deepEqual(target.facts('task/claimed'), [])

  // Keys are read by their form: every bad one named, nothing trusted.
  err = await bothFail(() => target.trustBundleKeys({ trust: [keys.secret_key, keys.public_key], distrust: ['ssh-ed25519 AAAA'] }),
    () => target.trustBundleKeysAsync({ trust: [keys.secret_key, keys.public_key], distrust: ['ssh-ed25519 AAAA'] }))
  assert.deepEqual(err.problems.map((p) => p.field), ['trust[0]', 'distrust[0]'])
  assert.ok(!err.message.includes(keys.secret_key.slice('ed25519-secret:'.length)), err.message)
  assert.deepEqual(target.trustBundleKeys(), [])
  err = await bothFail(() => source.signBundle(made.id, { secretKey: keys.public_key }),
    () => source.signBundleAsync(made.id, { secretKey: keys.public_key }))
  assert.deepEqual(err.problems.map((p) => p.field), ['secretKey'])
  err = await bothFail(() => source.signBundle(made.id, {}), () => source.signBundleAsync(made.id, {}))
  assert.deepEqual(err.problems.map((p) => p.field), ['secretKey'])
  err = await bothFail(() => source.signBundle('no-such-bundle', { secretKey: keys.secret_key }),
    () => source.signBundleAsync('no-such-bundle', { secretKey: keys.secret_key }))
  assert.deepEqual([err.code, err.what], ['NOT_FOUND', 'bundle'])
})

test('a hostile bundle is refused whole, its problem named, and the store is left as it was', async () => {
  const source = Store.memory()
  curated(source)
  const bundle = source.createBundle('playbook', { taskId: TASK })
  const text = bundle.toJson()
  const target = Store.memory()
  curated(target, 'other-task', 'agent-z')
  const before = snapshot(target)
  const refused = async (input, options) => {
    const err = await bothFail(() => target.importBundle(input, options), () => target.importBundleAsync(input, options))
    assert.equal(err.code, 'VALIDATION', err.message)
    return err.problems.map((p) => p.field)
  }

  // Truncated.
  assert.ok((await refused(text.slice(0, Math.floor(text.length / 2)))).length > 0)
  assert.ok((await refused('')).length > 0)
  // Changed after it was made: the hash no longer matches, as text or as data.
  const tampered = JSON.parse(text)
  tampered.facts[0].text = 'refresh tokens never expire'
  assert.deepEqual(await refused(JSON.stringify(tampered)), ['content_hash'])
  assert.deepEqual(await refused(tampered), ['content_hash'])
  assert.deepEqual(await refused({ ...bundle, data: tampered }), ['content_hash'])
  const forged = { ...JSON.parse(text), content_hash: `sha256:${'0'.repeat(64)}` }
  assert.deepEqual(await refused(forged), ['content_hash'])
  const err = await bothFail(() => target.importBundle(forged), () => target.importBundleAsync(forged))
  assert.match(err.problems[0].rule, /does not match the content/)
  // Another version of the portable form.
  assert.deepEqual(await refused({ ...JSON.parse(text), schema_version: 2 }), ['schema_version'])
  assert.deepEqual(await refused(JSON.stringify({ schema_version: 99, whatever: true })), ['schema_version'])
  // Nested 10,000 deep: as text and as data, refused before anything is parsed or recursed.
  const deepText = `${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}`
  assert.ok((await refused(deepText)).length > 0)
  assert.ok((await refused(`${'['.repeat(10000)}${']'.repeat(10000)}`)).length > 0)
  const deepInside = `{"schema_version":1,"name":"x","task":${'['.repeat(10000)}${']'.repeat(10000)}}`
  const nested = await bothFail(() => target.importBundle(deepInside), () => target.importBundleAsync(deepInside))
  assert.deepEqual(nested.problems.map((p) => p.field), ['bundle'])
  assert.match(nested.problems[0].rule, /nest at most 64 levels/)
  let deep = {}
  for (let i = 0; i < 10000; i++) deep = { a: deep }
  assert.ok((await refused(deep)).length > 0)
  // Ids the store would refuse, a fact without text: each named in the bundle's own terms.
  const badIds = JSON.parse(text)
  badIds.facts[0].id = '../../etc/passwd'
  badIds.facts[1].text = ''
  const fields = await refused(badIds)
  assert.ok(fields.includes('facts[0].id'), fields.join())
  assert.ok(fields.includes('facts[1].text'), fields.join())
  // Not a bundle at all, or a target that is no branch.
  assert.deepEqual(await refused(3), ['bundle'])
  assert.deepEqual(await refused([text]), ['bundle'])
  assert.deepEqual(await refused(text, { targetBranch: 'feature/x' }), ['targetBranch'])
  assert.deepEqual(await refused(text, { target_branch: 'main' }), ['target_branch'])

  assert.deepEqual(snapshot(target), before)
})

test('replay gives a task\'s run as one ordered timeline, its agents, key knowledge and outcome', async () => {
  const store = Store.memory()
  const { picked } = curated(store)
  store.createBundle('playbook', { taskId: TASK })
  const replay = store.replay(TASK)
  assert.equal(replay.task_id, TASK)
  const types = replay.timeline.map((e) => e.type)
  for (const type of ['handoff.created', 'handoff.claimed', 'handoff.completed', 'curation.conversation_added',
    'curation.facts_added', 'curation.verified', 'curation.cherry_picked', 'curation.bundle_created']) {
    assert.ok(types.includes(type), `${type} in ${types.join(', ')}`)
  }
  // In the order it happened.
  assert.deepEqual(types.slice(0, 2), ['handoff.created', 'handoff.claimed'])
  assert.ok(types.indexOf('curation.facts_added') < types.indexOf('curation.verified'))
  assert.ok(types.indexOf('curation.verified') < types.indexOf('curation.cherry_picked'))
  assert.ok(types.indexOf('handoff.completed') < types.indexOf('curation.bundle_created'))
  const times = replay.timeline.map((e) => Date.parse(e.at))
  assert.deepEqual(times, [...times].sort((a, b) => a - b))
  for (const entry of replay.timeline) {
    assert.equal(typeof entry.summary, 'string')
    assert.ok(entry.summary.length > 0)
    assert.match(entry.type, /^(handoff|task|curation)\.[a-z_]+$/)
  }
  const created = replay.timeline.find((e) => e.type === 'curation.conversation_added')
  assert.equal(created.agent, 'agent-b')
  assert.equal(typeof created.data.conversation_id, 'string')

  const agents = Object.fromEntries(replay.agents.map((a) => [a.agent, a]))
  assert.deepEqual(Object.keys(agents).sort(), ['agent-a', 'agent-b'])
  assert.deepEqual([agents['agent-b'].claimed, agents['agent-b'].completed], [1, 1])
  assert.ok(agents['agent-b'].curated >= 3)
  assert.equal(agents['agent-a'].handed_off, 1)
  assert.match(agents['agent-b'].first_at, /^\d{4}-/)

  // Not only verified: the active facts too; the invalidated one never.
  assert.deepEqual(replay.key_facts.map((f) => f.status), ['verified', 'verified'])
  assert.ok(replay.key_facts.every((f) => !f.text.includes('one hour')))
  assert.ok(replay.key_conversations.some((c) => c.id === picked.id))
  assert.deepEqual([replay.outcome.status, replay.outcome.result], ['completed', 'the refresh retries with backoff'])
  assert.ok(replay.outcome.duration_seconds >= 0)
  assert.match(replay.outcome.started_at, /^\d{4}-/)

  const verified = await store.replayAsync(TASK, { verifiedOnly: true })
  assert.deepEqual(verified.timeline, replay.timeline)
  assert.deepEqual(verified.key_conversations.map((c) => c.id), [picked.id])
  assert.deepEqual(await store.replayAsync(TASK), replay)

  const err = await bothFail(() => store.replay('never-ran'), () => store.replayAsync('never-ran'))
  assert.deepEqual([err.code, err.what, err.id], ['NOT_FOUND', 'task', 'never-ran'])
  let bad = await bothFail(() => store.replay(TASK, { verifiedOnly: 'yes' }), () => store.replayAsync(TASK, { verifiedOnly: 'yes' }))
  assert.deepEqual(bad.problems.map((p) => p.field), ['verifiedOnly'])
  bad = await bothFail(() => store.replay('a/b'), () => store.replayAsync('a/b'))
  assert.deepEqual(bad.problems.map((p) => p.field), ['taskId'])
})

test('compare puts two runs side by side', async () => {
  const store = Store.memory()
  curated(store)
  // The rerun: agent-c in agent-b's place, one fact of its own, not completed.
  const handoff = store.create({ taskId: 'fix-oauth-rerun', goal: 'Fix the OAuth refresh again', fromAgent: 'agent-a', toAgent: 'agent-c', decisions: ['rotate the client secret'] })
  store.claim(handoff.id, 'agent-c')
  store.addFacts('task/fix-oauth-rerun/agent-c', ['the refresh needs retries with backoff', 'the clock skew is 5 minutes'])
  store.verify('task/fix-oauth-rerun/agent-c', { verifier: () => 0.95 })

  const comparison = store.compare(TASK, 'fix-oauth-rerun')
  assert.deepEqual([comparison.task_a, comparison.task_b], [TASK, 'fix-oauth-rerun'])
  assert.deepEqual(comparison.agents, { only_a: ['agent-b'], only_b: ['agent-c'], both: ['agent-a'] })
  assert.deepEqual(comparison.facts.both, ['the refresh needs retries with backoff'])
  assert.deepEqual(comparison.facts.only_b, ['the clock skew is 5 minutes'])
  assert.equal(comparison.facts.only_a.length, 1)
  assert.deepEqual(comparison.decision_points, { only_a: ['retry with backoff'], only_b: ['rotate the client secret'], both: [] })
  assert.deepEqual([comparison.outcome_a.status, comparison.outcome_b.status], ['completed', 'in_progress'])
  assert.equal(comparison.timeline_length_a, store.replay(TASK).timeline.length)
  assert.equal(comparison.timeline_length_b, store.replay('fix-oauth-rerun').timeline.length)
  assert.deepEqual(await store.compareAsync(TASK, 'fix-oauth-rerun'), comparison)

  const err = await bothFail(() => store.compare(TASK, 'never-ran'), () => store.compareAsync(TASK, 'never-ran'))
  assert.deepEqual([err.code, err.id], ['NOT_FOUND', 'never-ran'])
})

test('deleteBundle forgets the bundle and its token; what was imported stays', async () => {
  const store = Store.memory()
  curated(store)
  const bundle = store.createBundle('playbook', { taskId: TASK, visibility: 'public' })
  const other = store.createBundle('other', { taskId: TASK })
  store.importBundle(bundle, { targetBranch: 'main' })
  assert.equal(store.deleteBundle(bundle.id), undefined)
  assert.deepEqual(store.listBundles().map((b) => b.id), [other.id])
  let err = await bothFail(() => store.getBundle(bundle.id), () => store.getBundleAsync(bundle.id))
  assert.deepEqual([err.code, err.what, err.id], ['NOT_FOUND', 'bundle', bundle.id])
  err = await bothFail(() => store.bundleByToken(bundle.share_token), () => store.bundleByTokenAsync(bundle.share_token))
  assert.deepEqual([err.code, err.what], ['NOT_FOUND', 'bundle'])
  err = await bothFail(() => store.deleteBundle(bundle.id), () => store.deleteBundleAsync(bundle.id))
  assert.equal(err.code, 'NOT_FOUND')
  assert.equal(store.facts('main').length, 2)
  // The text outlives the bundle: importing it again still adds nothing.
  assert.equal(store.importBundle(bundle.toJson()).facts_skipped, 2)
  assert.equal(await store.deleteBundleAsync(other.id), undefined)
  assert.deepEqual(await store.listBundlesAsync(), [])
  err = await bothFail(() => store.getBundle('a/b'), () => store.getBundleAsync('a/b'))
  assert.deepEqual(err.problems.map((p) => p.field), ['id'])
})
