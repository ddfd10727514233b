// Curated memory (docs/design.md §9) through the Node face: an agent's conversation on its branch,
// cherry-picks, facts, verification by a JavaScript verifier (sync, and async through a
// threadsafe function), merges, the successor's packet and the curation log; and bad input
// refused whole, the store left as it was. Results keep the seed's snake_case keys.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

import { Store } from '../index.mjs'
import { bothFail } from './helpers.mjs'

const TASK = 'fix-oauth'
const BRANCH = `task/${TASK}/agent-b`

/** Agent B's conversation: OpenAI's chat shape, with one exchange in Anthropic's. */
const CONVERSATION = [
  { role: 'user', content: 'The OAuth refresh fails after an hour: fix it' },
  { role: 'assistant', content: 'Let me read the token refresh code first.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"auth/refresh.py"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'def refresh(token): ...' },
  // Anthropic's shape: a text and a tool_use block; the result is a user turn's tool_result.
  {
    role: 'assistant',
    content: [
      { type: 'text', text: "I'll retry the refresh with exponential backoff." },
      { type: 'tool_use', id: 'toolu_1', name: 'edit_file', input: { path: 'auth/refresh.py' } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'edited' }] },
  { role: 'assistant', content: 'Done: the refresh retries with backoff and the tests pass.' },
]

const FACTS = [
  'refresh tokens expire after one hour',
  { text: 'the refresh needs retries with backoff', confidence: 0.9, source: 'auth/refresh.py' },
]

/** A store holding agent B's conversation and facts. */
function seeded() {
  const store = Store.memory()
  const conversation = store.addConversation(BRANCH, CONVERSATION, { title: 'fixing the refresh' })
  const facts = store.addFacts(BRANCH, FACTS)
  return { store, conversation, facts }
}

/** Everything curated memory holds, to compare before and after a refused call. */
function snapshot(store) {
  const conversations = store.listConversations()
  return {
    conversations,
    messages: conversations.map((c) => store.messages(c.id)),
    facts: store.branches().map((b) => store.facts(b.name)),
    events: store.curationEvents({ taskId: TASK }),
  }
}

test('a conversation goes on an agent\'s branch, its messages read from any provider\'s shape', async () => {
  const { store, conversation } = seeded()
  assert.equal(conversation.branch, BRANCH)
  assert.equal(conversation.task_id, TASK)
  assert.equal(conversation.agent, 'agent-b')
  assert.equal(conversation.title, 'fixing the refresh')
  assert.equal(conversation.message_count, 7)
  assert.equal(conversation.verification_status, 'unverified')
  assert.equal(conversation.verification_score, null)
  // The seed's snake_case keys, as the core writes them: no camelCase twin.
  assert.equal('messageCount' in conversation, false)
  assert.deepEqual(store.getConversation(conversation.id), conversation)
  assert.deepEqual(await store.getConversationAsync(conversation.id), conversation)

  const messages = store.messages(conversation.id)
  assert.deepEqual(messages.map((m) => m.seq), [1, 2, 3, 4, 5, 6, 7])
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'assistant', 'tool', 'assistant', 'tool', 'assistant'])
  // The OpenAI call, its arguments parsed; the Anthropic blocks as a call and its result.
  assert.deepEqual(messages[2].tool_calls, [{ id: 'call_1', name: 'read_file', arguments: { path: 'auth/refresh.py' } }])
  assert.equal(messages[4].content, "I'll retry the refresh with exponential backoff.")
  assert.deepEqual(messages[4].tool_calls, [{ id: 'toolu_1', name: 'edit_file', arguments: { path: 'auth/refresh.py' } }])
  assert.equal(messages[5].tool_call_id, 'toolu_1')
  assert.equal(messages[5].content, 'edited')
  assert.ok(messages.every((m) => m.is_cherry_picked === false && m.cherry_picked_to.length === 0))
  assert.deepEqual(store.messages(conversation.id, { fromSeq: 6 }).map((m) => m.seq), [6, 7])
  assert.deepEqual((await store.messagesAsync(conversation.id, { toSeq: 2 })).map((m) => m.seq), [1, 2])

  const longer = store.appendMessages(conversation.id, [{ role: 'user', content: 'thanks' }])
  assert.equal(longer.message_count, 8)
  assert.equal(store.messages(conversation.id, { fromSeq: 8 })[0].content, 'thanks')
  assert.deepEqual(store.listConversations({ branch: BRANCH }).map((c) => c.id), [conversation.id])
  assert.deepEqual((await store.listConversationsAsync({ taskId: 'other' })), [])
  assert.deepEqual(store.branches(), [{ name: BRANCH, parent: `task/${TASK}` }])
})

test('cherryPick copies a range of messages to another branch and marks where they went', async () => {
  const { store, conversation } = seeded()
  const picked = store.cherryPick(conversation.id, `task/${TASK}`, { fromSeq: 2, toSeq: 4, title: 'reading the refresh' })
  assert.equal(picked.branch, `task/${TASK}`)
  assert.equal(picked.message_count, 3)
  assert.equal(picked.cherry_picked_from, conversation.id)
  assert.equal(picked.title, 'reading the refresh')
  assert.deepEqual(store.messages(picked.id).map((m) => m.content), CONVERSATION.slice(1, 4).map((m) => m.content ?? ''))

  const source = store.messages(conversation.id)
  assert.deepEqual(source.map((m) => m.is_cherry_picked), [false, true, true, true, false, false, false])
  assert.deepEqual(source[1].cherry_picked_to.map(({ conversation_id, branch }) => ({ conversation_id, branch })),
    [{ conversation_id: picked.id, branch: `task/${TASK}` }])
  assert.match(source[1].cherry_picked_to[0].picked_at, /^\d{4}-\d\d-\d\dT/)

  // Without a range: the whole conversation.
  const whole = await store.cherryPickAsync(conversation.id, 'main')
  assert.equal(whole.message_count, 7)
})

test('cherryPickDecisions takes the seed\'s decision points, or what a judge function decides', async () => {
  const { store, conversation } = seeded()
  // "Let me ..." (and it leads to a call that succeeded), "I'll ..." (with a call that succeeded).
  const decisions = store.cherryPickDecisions(conversation.id, `task/${TASK}`)
  assert.deepEqual(store.messages(decisions.id).map((m) => m.content), [
    'Let me read the token refresh code first.',
    "I'll retry the refresh with exponential backoff.",
  ])
  assert.deepEqual(store.messages(decisions.id).map((m) => m.content),
    store.messages((await store.cherryPickDecisionsAsync(conversation.id, 'main')).id).map((m) => m.content))

  const asked = []
  const judged = store.cherryPickDecisions(conversation.id, `task/${TASK}`, {
    judge: (message) => {
      asked.push(message)
      return message.role === 'assistant' && message.content.startsWith('Done')
    },
  })
  assert.deepEqual(store.messages(judged.id).map((m) => m.seq), [1])
  assert.equal(store.messages(judged.id)[0].content, CONVERSATION[6].content)
  // The judge sees each message once, in the store's snake_case, with its index from 0.
  assert.deepEqual(asked.map((m) => m.index), [0, 1, 2, 3, 4, 5, 6])
  assert.deepEqual(asked[2].tool_calls, [{ id: 'call_1', name: 'read_file', arguments: { path: 'auth/refresh.py' } }])
  assert.equal(asked[3].tool_call_id, 'call_1')

  // An async judge, awaited by the Promise twin.
  const awaited = await store.cherryPickDecisionsAsync(conversation.id, 'main', {
    judge: async (message) => {
      await sleep(1)
      return message.index === 0
    },
  })
  assert.deepEqual(store.messages(awaited.id).map((m) => m.content), [CONVERSATION[0].content])
})

test('a judge that throws, rejects or does not answer a boolean writes nothing', async () => {
  const { store, conversation } = seeded()
  const before = snapshot(store)
  const failure = new RangeError('the judge is down')
  assert.throws(() => store.cherryPickDecisions(conversation.id, 'main', { judge: () => { throw failure } }), (err) => err === failure)
  await assert.rejects(store.cherryPickDecisionsAsync(conversation.id, 'main', { judge: async () => { throw failure } }), (err) => err === failure)
  await assert.rejects(store.cherryPickDecisionsAsync(conversation.id, 'main', { judge: () => { throw failure } }), (err) => err === failure)
  const err = await bothFail(
    () => store.cherryPickDecisions(conversation.id, 'main', { judge: () => 'yes' }),
    () => store.cherryPickDecisionsAsync(conversation.id, 'main', { judge: async () => 'yes' }),
  )
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['judge'])
  // An async judge given to the sync method: a TypeError before it is asked anything.
  let asked = 0
  assert.throws(() => store.cherryPickDecisions(conversation.id, 'main', { judge: async () => { asked++; return true } }),
    (err) => err instanceof TypeError && /cherryPickDecisionsAsync/.test(err.message))
  assert.equal(asked, 0)
  // A plain function answering with a Promise: a TypeError too, and nothing written.
  assert.throws(() => store.cherryPickDecisions(conversation.id, 'main', { judge: () => Promise.reject(new Error('late')) }), TypeError)
  assert.deepEqual(snapshot(store), before)
})

test('cherryPickTools copies each tool call with its result', async () => {
  const { store, conversation } = seeded()
  const tools = store.cherryPickTools(conversation.id, `task/${TASK}`)
  const messages = store.messages(tools.id)
  assert.deepEqual(messages.map((m) => m.role), ['assistant', 'tool', 'assistant', 'tool'])
  assert.deepEqual(messages.map((m) => m.tool_calls.map((c) => c.id).concat(m.tool_call_id ?? [])),
    [['call_1'], ['call_1'], ['toolu_1'], ['toolu_1']])
  assert.equal((await store.cherryPickToolsAsync(conversation.id, 'main')).message_count, 4)
})

test('addFacts takes texts and objects; verify without a verifier scores a neutral 0.5 and writes nothing', async () => {
  const { store, facts } = seeded()
  assert.deepEqual(facts.map((f) => [f.text, f.status, f.confidence, f.source]), [
    ['refresh tokens expire after one hour', 'active', null, null],
    ['the refresh needs retries with backoff', 'active', 0.9, 'auth/refresh.py'],
  ])
  assert.deepEqual(store.facts(BRANCH), facts)

  const report = store.verify(BRANCH)
  assert.deepEqual([report.branch, report.verified, report.invalidated, report.unverified, report.failed], [BRANCH, 0, 0, 3, 0])
  assert.deepEqual(report.items.map((i) => [i.kind, i.score, i.verdict, i.error]), [
    ['fact', 0.5, 'unverified', null],
    ['fact', 0.5, 'unverified', null],
    ['conversation', 0.5, 'unverified', null],
  ])
  const after = store.facts(BRANCH)
  assert.deepEqual(after, facts)
  assert.deepEqual(store.facts(BRANCH, { status: 'verified' }), [])
  assert.equal((await store.verifyAsync(BRANCH)).unverified, 3)
})

/** Scores as a reviewer would: the retry fact holds, the one-hour fact does not. */
function reviewer(item) {
  if (item.kind === 'conversation') return { score: 0.8, explanation: 'the fix is tested' }
  return item.text.includes('retries') ? [0.9, 'the diff adds retries'] : 0.2
}

test('verify with a JavaScript verifier stores its verdicts under its name', () => {
  const { store, conversation, facts } = seeded()
  const items = []
  const report = store.verify(BRANCH, {
    verifier: (item) => {
      items.push(item)
      return reviewer(item)
    },
  })
  assert.deepEqual([report.verified, report.invalidated, report.unverified, report.failed], [2, 1, 0, 0])
  // Each item in the store's snake_case: a fact's fields, a conversation's with its messages.
  assert.deepEqual(items.map((i) => i.kind), ['fact', 'fact', 'conversation'])
  assert.equal(items[1].confidence, 0.9)
  assert.equal(items[2].id, conversation.id)
  assert.equal(items[2].messages.length, 7)
  assert.equal(items[2].messages[5].tool_call_id, 'toolu_1')
  assert.match(items[2].text, /^user: The OAuth refresh fails/)

  const [wrong, right] = store.facts(BRANCH)
  assert.deepEqual([wrong.id, wrong.status, wrong.score], [facts[0].id, 'invalidated', 0.2])
  assert.deepEqual([right.status, right.score, right.explanation], ['verified', 0.9, 'the diff adds retries'])
  // An inline arrow function is named after its option.
  assert.equal(right.verified_by, 'verifier')
  const checked = store.getConversation(conversation.id)
  assert.deepEqual([checked.verification_status, checked.verification_score, checked.explanation],
    ['verified', 0.8, 'the fix is tested'])

  // A named function's name is who verified.
  store.verify(BRANCH, { verifier: reviewer, factThreshold: 0.95 })
  assert.deepEqual(store.facts(BRANCH).map((f) => [f.status, f.verified_by]), [['invalidated', 'reviewer'], ['active', 'reviewer']])
})

test('verifyAsync awaits an async verifier on the JavaScript thread while the store works off it', async () => {
  const { store } = seeded()
  let ticks = 0
  const timer = setInterval(() => ticks++, 1)
  try {
    const report = await store.verifyAsync(BRANCH, {
      verifier: async function llmJudge(item) {
        await sleep(5)
        return reviewer(item)
      },
    })
    assert.deepEqual([report.verified, report.invalidated, report.failed], [2, 1, 0])
  } finally {
    clearInterval(timer)
  }
  assert.ok(ticks > 0, 'the event loop ran while the verifier was awaited')
  assert.deepEqual(store.facts(BRANCH).map((f) => [f.status, f.verified_by]), [['invalidated', 'llmJudge'], ['verified', 'llmJudge']])
  // A sync verifier serves the Promise twin too.
  assert.equal((await store.verifyAsync(BRANCH, { verifier: () => 0.5 })).unverified, 3)
})

test('a verifier that throws, rejects or answers no score leaves that item as it was, reported', async () => {
  const { store, facts } = seeded()
  const before = store.facts(BRANCH)
  const throwing = (item) => {
    if (item.kind === 'fact' && item.text.includes('one hour')) throw new Error('the docs are down')
    return item.kind === 'fact' ? 0.9 : 0.1
  }
  const report = store.verify(BRANCH, { verifier: throwing })
  assert.deepEqual([report.verified, report.invalidated, report.failed], [1, 1, 1])
  const failed = report.items.find((i) => i.error !== null)
  assert.deepEqual([failed.kind, failed.id, failed.score, failed.verdict], ['fact', facts[0].id, null, null])
  assert.match(failed.error, /verifier: threw: the docs are down/)
  assert.deepEqual(store.facts(BRANCH)[0], before[0])

  const rejecting = async (item) => {
    if (item.kind === 'fact' && item.text.includes('one hour')) throw new Error('the model timed out')
    return 0.9
  }
  const awaited = await store.verifyAsync(BRANCH, { verifier: rejecting })
  assert.equal(awaited.failed, 1)
  assert.match(awaited.items[0].error, /verifier: rejected: the model timed out/)
  assert.deepEqual(store.facts(BRANCH)[0], before[0])

  // NaN and 1.5 are no scores from 0 to 1: those items stay as they were.
  for (const answer of [NaN, 1.5, [Infinity, 'sure'], { score: -0.1 }, 'high']) {
    for (const run of [() => store.verify(BRANCH, { verifier: () => answer }), () => store.verifyAsync(BRANCH, { verifier: async () => answer })]) {
      const bad = await run()
      assert.deepEqual([bad.failed, bad.verified, bad.unverified, bad.invalidated], [3, 0, 0, 0], String(answer))
      assert.ok(bad.items.every((i) => i.score === null && i.verdict === null && i.error !== null))
    }
  }
  assert.match(store.verify(BRANCH, { verifier: () => NaN }).items[0].error, /score: must be a number from 0 to 1, is NaN/)
  assert.match(store.verify(BRANCH, { verifier: () => 1.5 }).items[0].error, /score: must be a number from 0 to 1, is 1.5/)
  assert.deepEqual(store.facts(BRANCH)[0], before[0])
})

test('verify refuses an async verifier with a TypeError before asking it anything', async () => {
  const { store } = seeded()
  const before = snapshot(store)
  let asked = 0
  assert.throws(
    () => store.verify(BRANCH, { verifier: async () => { asked++; return 1 } }),
    (err) => err instanceof TypeError && /verifyAsync/.test(err.message),
  )
  assert.equal(asked, 0)
  assert.deepEqual(snapshot(store), before)
  // A plain function whose answer is a Promise is asked nothing more; its items stay as they were.
  assert.throws(() => store.verify(BRANCH, { verifier: () => { asked++; return Promise.reject(new Error('late')) } }), TypeError)
  assert.equal(asked, 1)
  assert.deepEqual(store.facts(BRANCH), before.facts[0])
  await sleep(1) // The Promise's rejection was handled: the process goes on.
})

test('merge moves verified knowledge up once; contextFor gives the successor those facts', async () => {
  const { store, conversation } = seeded()
  store.verify(BRANCH, { verifier: reviewer })
  const merged = store.merge(BRANCH)
  assert.deepEqual(merged, { branch: BRANCH, into: `task/${TASK}`, facts: 1, conversations: 1, kept: 1 })
  assert.deepEqual(await store.mergeAsync(BRANCH), { branch: BRANCH, into: `task/${TASK}`, facts: 0, conversations: 0, kept: 1 })

  const [copy] = store.facts(`task/${TASK}`)
  const source = store.facts(BRANCH).find((f) => f.text === copy.text)
  assert.deepEqual([copy.text, copy.status, copy.origin], ['the refresh needs retries with backoff', 'verified', source.id])
  assert.equal(source.status, 'promoted')
  const [up] = store.listConversations({ branch: `task/${TASK}` })
  assert.equal(up.origin, conversation.id)
  assert.equal(store.getConversation(conversation.id).promoted, true)

  const handoff = store.create({ taskId: TASK, goal: 'Finish the OAuth refresh fix', fromAgent: 'agent-b' })
  const packet = store.contextFor(handoff.id, { budgetTokens: 1500 })
  assert.equal(packet.budget, 1500)
  assert.ok(packet.tokens <= 1500)
  assert.ok(packet.sections.some((s) => s.kind === 'fact' && s.text === 'the refresh needs retries with backoff'))
  assert.ok(!packet.markdown.includes('one hour'), 'an invalidated fact is not handed on')
  assert.match(packet.markdown, /Finish the OAuth refresh fix/)
  // The same Packet as the builder's, its method included.
  assert.equal(typeof packet.toMessages, 'function')
  assert.ok(packet.toMessages('anthropic').length > 0)
  assert.deepEqual(Object.keys(packet).includes('toMessages'), false)
  const awaited = await store.contextForAsync(handoff.id)
  assert.equal(awaited.budget, 2000)
  assert.equal(typeof awaited.toMessages, 'function')
  const err = await bothFail(() => store.contextFor(handoff.id, { budgetTokens: 0 }), () => store.contextForAsync(handoff.id, { budgetTokens: 0 }))
  assert.deepEqual(err.problems.map((p) => p.field), ['budgetTokens'])
})

test('curationEvents lists every change on the task\'s branches, in order', async () => {
  const { store, conversation } = seeded()
  store.cherryPick(conversation.id, `task/${TASK}`, { fromSeq: 2, toSeq: 2 })
  store.verify(BRANCH, { verifier: reviewer })
  store.merge(BRANCH)
  const events = store.curationEvents({ taskId: TASK })
  assert.deepEqual(events.map((e) => [e.kind, e.branch]), [
    ['conversation_added', BRANCH],
    ['facts_added', BRANCH],
    ['cherry_picked', `task/${TASK}`],
    ['verified', BRANCH],
    ['merged', BRANCH],
  ])
  assert.equal(events[0].detail.conversation_id, conversation.id)
  assert.equal(events[3].detail.verified_by, 'reviewer')
  assert.match(events[0].at, /^\d{4}-\d\d-\d\dT/)
  assert.deepEqual(await store.curationEventsAsync({ taskId: TASK }), events)
  assert.deepEqual(store.curationEvents(), [])
})

test('bad input is refused whole, every problem named, and the store is left as it was', async () => {
  const { store, conversation } = seeded()
  const before = snapshot(store)

  let err = await bothFail(() => store.addConversation('feature/x', CONVERSATION), () => store.addConversationAsync('feature/x', CONVERSATION))
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['branch'])

  // A range outside the conversation's seven messages.
  err = await bothFail(
    () => store.cherryPick(conversation.id, `task/${TASK}`, { fromSeq: 5, toSeq: 9 }),
    () => store.cherryPickAsync(conversation.id, `task/${TASK}`, { fromSeq: 5, toSeq: 9 }),
  )
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems, [{ field: 'toSeq', rule: 'must be between 1 and 7' }])
  err = await bothFail(
    () => store.cherryPick(conversation.id, `task/${TASK}`, { fromSeq: 0 }),
    () => store.cherryPickAsync(conversation.id, `task/${TASK}`, { fromSeq: 0 }),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['fromSeq'])

  // An oversized message (beyond the 64 KiB a field may hold), named inside `messages`.
  const huge = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x'.repeat(70 * 1024) }]
  err = await bothFail(() => store.addConversation(BRANCH, huge), () => store.addConversationAsync(BRANCH, huge))
  assert.equal(err.code, 'VALIDATION')
  assert.deepEqual(err.problems.map((p) => p.field), ['[1].content'])
  assert.match(err.problems[0].rule, /at most 65536 bytes/)
  err = await bothFail(() => store.appendMessages(conversation.id, huge), () => store.appendMessagesAsync(conversation.id, huge))
  assert.deepEqual(err.problems.map((p) => p.field), ['[1].content'])

  // Messages are read as written (snake_case keys and all): a bad one is named as written.
  err = await bothFail(
    () => store.addConversation('main', [{ role: 'assistant', content: 'x', tool_calls: 3 }]),
    () => store.addConversationAsync('main', [{ role: 'assistant', content: 'x', tool_calls: 3 }]),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['[0].tool_calls'])

  err = await bothFail(() => store.addFacts(BRANCH, ['', { text: 'x', confidence: 3 }]), () => store.addFactsAsync(BRANCH, ['', { text: 'x', confidence: 3 }]))
  assert.deepEqual(err.problems.map((p) => p.field), ['[0].text', '[1].confidence'])

  // The callable's problem comes with the others, all at once.
  err = await bothFail(() => store.verify('feature/x', { verifier: 3, factThreshold: 2 }), () => store.verifyAsync('feature/x', { verifier: 3, factThreshold: 2 }))
  assert.deepEqual(err.problems.map((p) => p.field), ['branch', 'factThreshold', 'verifier'])
  assert.equal(err.problems[2].rule, 'must be a function, got a number')
  err = await bothFail(
    () => store.cherryPickDecisions(conversation.id, 'feature/x', { judge: 'yes' }),
    () => store.cherryPickDecisionsAsync(conversation.id, 'feature/x', { judge: 'yes' }),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['targetBranch', 'judge'])
  err = await bothFail(() => store.verify(BRANCH, { verifer: () => 1 }), () => store.verifyAsync(BRANCH, { verifer: () => 1 }))
  assert.deepEqual(err.problems.map((p) => p.field), ['verifer'])
  err = await bothFail(() => store.merge('main'), () => store.mergeAsync('main'))
  assert.deepEqual(err.problems.map((p) => p.field), ['into'])
  err = await bothFail(() => store.facts(BRANCH, { status: 'done' }), () => store.factsAsync(BRANCH, { status: 'done' }))
  assert.deepEqual(err.problems.map((p) => p.field), ['status'])

  err = await bothFail(() => store.getConversation('nope'), () => store.getConversationAsync('nope'))
  assert.deepEqual([err.code, err.what, err.id], ['NOT_FOUND', 'conversation', 'nope'])
  err = await bothFail(() => store.cherryPickDecisions('nope', 'main', { judge: () => true }), () => store.cherryPickDecisionsAsync('nope', 'main', { judge: () => true }))
  assert.equal(err.code, 'NOT_FOUND')

  assert.deepEqual(snapshot(store), before)
})

test('curation in the seed\'s order: a verified pick, facts drawn from a conversation, a merged task\'s bundle verified', async () => {
  const { store, conversation } = seeded()
  // cherry_pick_conversation(verify=True), with the seed's names: scored before it is written.
  const seen = []
  const picked = store.cherryPick(conversation.id, `task/${TASK}`, {
    fromSequence: 2,
    toSequence: 5,
    verify: true,
    verifier: function judge (item) {
      seen.push(item.messages.length)
      return { score: 0.9, explanation: 'retries with backoff' }
    },
  })
  assert.deepEqual(seen, [4])
  assert.equal(picked.message_count, 4)
  assert.equal(picked.verification_status, 'verified')
  assert.equal(picked.verified_by, 'judge')
  const low = await store.cherryPickAsync(conversation.id, 'main', { verifier: async () => 0.1 })
  assert.equal(low.verification_status, 'invalidated')
  const before = snapshot(store)
  const failure = new RangeError('the verifier is down')
  assert.throws(() => store.cherryPick(conversation.id, 'main', { verifier: () => { throw failure } }), (err) => err === failure)
  await assert.rejects(store.cherryPickAsync(conversation.id, 'main', { verifier: async () => { throw failure } }), (err) => err === failure)
  const err = await bothFail(
    () => store.cherryPick(conversation.id, 'main', { verify: true }),
    () => store.cherryPickAsync(conversation.id, 'main', { verify: true }),
  )
  assert.deepEqual(err.problems.map((p) => p.field), ['verify'])
  assert.deepEqual(snapshot(store), before)

  // cherry_pick_to_facts: the heuristics, then an extractor (sync and async); candidates.
  const drawn = store.cherryPickToFacts(conversation.id, BRANCH)
  // A decision ("I'll ..."); the closing "Done: ..." states no conclusion, file or number.
  assert.deepEqual(drawn.map((f) => f.text), ["I'll retry the refresh with exponential backoff."])
  assert.ok(drawn.every((f) => f.status === 'active' && f.source.startsWith(`conversation:${conversation.id}#`)))
  const extracted = await store.cherryPickToFactsAsync(conversation.id, BRANCH, {
    extractor: async (item) => {
      assert.equal(item.kind, 'conversation')
      return { facts: ['the refresh needs retries with backoff', { text: 'tokens last 1h', confidence: 0.3 }] }
    },
  })
  assert.deepEqual(extracted.map((f) => f.confidence), [null, 0.3])
  assert.throws(() => store.cherryPickToFacts(conversation.id, BRANCH, { extractor: () => { throw failure } }), (err) => err === failure)

  // The task merged into main: its bundle still holds what it verified; then the bundle's gate.
  const byText = (item) => (item.text.includes('backoff') ? 0.9 : 0.1)
  store.verify(BRANCH, { verifier: byText })
  store.merge(BRANCH)
  store.verify(`task/${TASK}`, { verifier: byText })
  store.merge(`task/${TASK}`)
  const bundle = store.createBundle('Playbook', { taskId: TASK, visibility: 'team' })
  assert.ok(bundle.fact_count >= 2 && bundle.conversation_count >= 1, JSON.stringify(bundle))
  const refused = await bothFail(() => store.verifyBundle(bundle.id), () => store.verifyBundleAsync(bundle.id))
  assert.deepEqual(refused.problems.map((p) => p.field), ['verifier'])
  const verified = store.verifyBundle(bundle.id, { verifier: function panel () { return 0.95 } })
  assert.equal(verified.verification_status, 'verified')
  assert.equal(verified.verified_by, 'panel')
  const again = await store.verifyBundleAsync(bundle.id, { factThreshold: 0.99, invalidateBelow: 0.1, verifier: async () => 0.5 })
  assert.equal(again.verification_status, 'draft')
  assert.equal(store.getBundle(bundle.id).verification_score, 0.5)
})
