// One trace across a chain of agents, in one process: `create` stores the active span's W3C trace
// context on the record, an instrumented store's claim and `withLease` work are children of the
// record's `traceparent`, and a lease reports progress. (The Python suite follows a chain across
// three processes with an OTLP receiver: handoff-py/tests/test_one_trace.py.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'

import { context, createTraceState, ROOT_CONTEXT, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'

import { Store } from 'handoff-core'
import { instrument, parentContext } from 'handoff-core/tracing'

const spans = new InMemorySpanExporter()
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }))

/**
 * The smallest context manager on AsyncLocalStorage (what @opentelemetry/context-async-hooks
 * does), so that the active span follows the code as it would in an application.
 */
class AmbientContext {
  #storage = new AsyncLocalStorage()
  active() {
    return this.#storage.getStore() ?? ROOT_CONTEXT
  }

  with(ctx, fn, thisArg, ...args) {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args))
  }

  bind(_ctx, target) {
    return target
  }

  enable() {
    return this
  }

  disable() {
    this.#storage.disable()
    return this
  }
}
context.setGlobalContextManager(new AmbientContext())

const tracer = trace.getTracer('test')
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const [, TRACE_ID, PARENT_ID] = TRACEPARENT.split('-')
const parentId = (span) => span.parentSpanContext?.spanId ?? span.parentSpanId
const traceparentOf = (span) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`

test('create takes the active span\'s trace context, unless given one', async () => {
  const store = Store.memory()
  assert.equal(store.create({ taskId: 't', goal: 'no span' }).traceparent ?? null, null)
  const remote = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID, spanId: PARENT_ID, traceFlags: 1, isRemote: true, traceState: createTraceState('vendor=abc'),
  })
  const [span, ambient, given, promised] = await tracer.startActiveSpan('triage', {}, remote, async (span) => {
    const ambient = store.create({ taskId: 't', goal: 'in a span' })
    const given = store.create({ taskId: 't', goal: 'given', traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-00` })
    const promised = await store.createAsync({ taskId: 't', goal: 'async' })
    span.end()
    return [span, ambient, given, promised]
  })
  assert.equal(ambient.traceparent, traceparentOf(span))
  assert.equal(ambient.tracestate, 'vendor=abc')
  assert.equal(promised.traceparent, traceparentOf(span))
  assert.equal(given.traceparent, `00-${'1'.repeat(32)}-${'2'.repeat(16)}-00`)
  assert.equal(given.tracestate ?? null, null)
  assert.throws(() => store.create({ taskId: 't', goal: 'bad', traceparent: '00-NOT-HEX' }), (err) => err.code === 'VALIDATION')
})

test('a claimed record\'s traceparent is the parent of the claim\'s span', async () => {
  spans.reset()
  const store = instrument(Store.memory())
  const h = store.create({ taskId: 't', goal: 'refund', toAgent: 'billing', traceparent: TRACEPARENT })
  const claim = store.claimNext('billing')
  assert.equal(claim.handoff.traceparent, TRACEPARENT)
  assert.equal(store.claimNext('billing'), null)
  await assert.rejects(store.claimAsync('no-such-id', 'billing'), (err) => err.code === 'NOT_FOUND')
  const [claimed, nothing, refused] = spans.getFinishedSpans().filter((s) => s.name === 'handoff.claim billing')
  assert.equal(claimed.spanContext().traceId, TRACE_ID)
  assert.equal(parentId(claimed), PARENT_ID)
  assert.equal(claimed.attributes['handoff.id'], h.id)
  assert.equal(claimed.attributes['handoff.claim_token'], claim.token)
  // Nothing claimed, or refused: an ordinary span in a trace of its own.
  assert.equal(parentId(nothing), undefined)
  assert.notEqual(refused.spanContext().traceId, TRACE_ID)
})

test('withLease on an instrumented store runs the work in the holder\'s span, under the record\'s trace', async () => {
  spans.reset()
  const store = instrument(Store.memory())
  const h = store.create({ taskId: 't', goal: 'refund', toAgent: 'billing', traceparent: TRACEPARENT })
  const claim = store.claim(h.id, 'billing')
  const { result: onward } = await tracer.startActiveSpan('poll', async (poll) => {
    const done = await store.withLease(claim, async () => {
      const onward = await store.createAsync({ taskId: 't', goal: 'refund the card', fromAgent: 'billing', toAgent: 'refunds' })
      return { onward }
    }, { outcome: 'handed on' })
    poll.end()
    return { result: done.result.onward, poll }
  })
  const [work] = spans.getFinishedSpans().filter((s) => s.name === 'handoff.work billing')
  const [poll] = spans.getFinishedSpans().filter((s) => s.name === 'poll')
  assert.equal(work.spanContext().traceId, TRACE_ID)
  assert.equal(parentId(work), PARENT_ID)
  assert.deepEqual(work.links.map((l) => l.context.spanId), [poll.spanContext().spanId])
  assert.equal(work.attributes['handoff.id'], h.id)
  assert.equal(work.attributes['handoff.claim_token'], claim.token)
  // What the holder creates continues the trace: its create span is in the work span, and the
  // record carries it for the next successor.
  const [created] = spans.getFinishedSpans().filter((s) => s.name === 'handoff.create billing')
  assert.equal(parentId(created), work.spanContext().spanId)
  assert.equal(onward.traceparent, traceparentOf(created))
  assert.equal(store.get(h.id).status, 'completed')

  // A claim reference carries no record: it is read for its trace context.
  spans.reset()
  const again = store.create({ taskId: 't', goal: 'more', traceparent: TRACEPARENT })
  const { handoffId, token, secret, leaseSeconds } = store.claim(again.id, 'billing')
  await store.withLease({ handoffId, token, secret, leaseSeconds }, () => 'done')
  const [byReference] = spans.getFinishedSpans().filter((s) => s.name === 'handoff.work billing')
  assert.equal(parentId(byReference), PARENT_ID)
})

test('a lease reports progress, kept on the record until the next report', async () => {
  const store = Store.memory()
  const h = store.create({ taskId: 't', goal: 'long job' })
  const claim = store.claim(h.id, 'worker', { leaseSeconds: 30 })
  let held
  await store.withLease(claim, async (lease) => {
    held = lease
    assert.deepEqual(lease.progress({ step: 'download', pct: 40 }).progress, { step: 'download', pct: 40 })
    assert.deepEqual(store.get(h.id).progress, { step: 'download', pct: 40 })
    assert.deepEqual((await lease.progressAsync({ pct: 80 })).progress, { pct: 80 })
    assert.throws(() => lease.progress({ blob: 'x'.repeat(5000) }), (err) => err.code === 'VALIDATION')
    return 'done'
  })
  const done = store.get(h.id)
  assert.equal(done.status, 'completed')
  assert.deepEqual(done.progress, { pct: 80 })
  assert.throws(() => held.progress({ late: true }), (err) => err.code === 'LEASE_LOST' || err.code === 'INVALID_TRANSITION')
  await assert.rejects(held.progressAsync({ late: true }), (err) => err.code === 'LEASE_LOST' || err.code === 'INVALID_TRANSITION')
})

test('parentContext reads a record\'s traceparent, and nothing from a record without one', () => {
  const ctx = parentContext({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' })
  const sc = trace.getSpanContext(ctx)
  assert.deepEqual([sc.traceId, sc.spanId, sc.traceFlags, sc.isRemote, sc.traceState.get('vendor')], [TRACE_ID, PARENT_ID, 1, true, 'abc'])
  assert.equal(parentContext({ traceparent: null }), null)
  assert.equal(parentContext({ traceparent: `ff-${TRACE_ID}-${PARENT_ID}-01` }), null)
  assert.equal(parentContext({ traceparent: `00-${'0'.repeat(32)}-${PARENT_ID}-01` }), null)
  assert.equal(parentContext(null), null)
})
