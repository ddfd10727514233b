// OpenTelemetry spans for handoffs, when `@opentelemetry/api` is installed; without it every
// function here runs the operation untraced. The framework adapters open a span for each create,
// claim, complete and fail they do; `instrument(store)` does the same for a store you call
// yourself. The names are shared with the Python `handoff_core.tracing`: the OpenTelemetry GenAI
// conventions have no handoff operation, so a span uses their names where they fit and a
// `handoff.` namespace for the rest:
//
//   span name                 `handoff.<op> <acting agent>`, op one of create, claim, work, complete, fail
//   gen_ai.operation.name     `handoff.<op>`
//   gen_ai.agent.name         the acting agent: who hands over on create, the claimer otherwise
//   gen_ai.conversation.id    the task id
//   gen_ai.tool.name          the transfer tool, when a model's tool call made the handoff
//   gen_ai.tool.call.id       that tool call's id
//   handoff.id, handoff.task_id, handoff.from_agent, handoff.to_agent
//   handoff.claim_token       the claim's fencing token (claim, complete, fail)
//
// An error thrown by the operation marks its span as an error and is recorded on it.
//
// One trace across a chain of agents: `create` stores the active span's W3C trace context on the
// record (`traceparent`, `tracestate`; index.js), so the successor continues the creator's trace
// wherever it runs. A claim's span (made once the claim says which record it took) and the
// holder's work span (`handoff.work <holder>`: `withLease` on an instrumented store, and the
// adapter's `runClaimed`) are children of the record's `traceparent`, linked to the span active
// in the successor, if any; what the work creates carries the work span on.

// Loaded once, at import: the adapters open spans inside synchronous SDK callbacks, where an
// import could not be awaited.
const otel = await import('@opentelemetry/api').catch((err) => {
  // Absent is the normal case (tracing is opt-in); any other failure is a broken install, which
  // should be seen rather than silently leave the spans out.
  if (err?.code === 'ERR_MODULE_NOT_FOUND') return null
  throw err
})

/** The tracer's name, as the Python binding names its own. */
export const TRACER_NAME = 'handoff-core'

/** The operations that get a span: `work` is the holder's, from claim to settling. */
export const OPERATIONS = Object.freeze(['create', 'claim', 'work', 'complete', 'fail'])

/** Whether spans are recorded: `@opentelemetry/api` could be imported. */
export const tracingAvailable = otel !== null

// recordAttributes, handoffAttributes, startSpan and traceFields serve the adapters of this package and
// are left out of tracing.d.ts: the public face is instrument, traced, parentContext and the
// constants.

/** A W3C `traceparent`: version, trace id, parent span id, flags (lowercase hex). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * The OpenTelemetry context whose span is the remote one the record's `traceparent` names (with
 * its `tracestate`), on top of the active context; `null` when tracing is off or the record
 * carries no valid trace context.
 */
export function parentContext(handoff) {
  if (otel === null || !isObject(handoff) || typeof handoff.traceparent !== 'string') return null
  const found = TRACEPARENT.exec(handoff.traceparent)
  // Version ff is invalid by the W3C spec; another version is read as its first four fields.
  if (found === null || found[1] === 'ff') return null
  const spanContext = { traceId: found[2], spanId: found[3], traceFlags: parseInt(found[4], 16), isRemote: true }
  if (typeof handoff.tracestate === 'string' && handoff.tracestate) {
    spanContext.traceState = otel.createTraceState(handoff.tracestate)
  }
  if (!otel.isSpanContextValid(spanContext)) return null
  return otel.trace.setSpanContext(otel.context.active(), spanContext)
}

/**
 * The W3C trace context of `span` as a record's fields (`{ traceparent, tracestate? }`), or `{}`
 * when tracing is off or the span has none: what `create` stores for the successor. The
 * adapters give it explicitly, since without a context manager the span they opened is not the
 * active one that `create` would otherwise read.
 */
export function traceFields(span) {
  const sc = span?.spanContext?.()
  if (otel === null || !sc || !otel.isSpanContextValid(sc)) return {}
  const fields = { traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}` }
  const state = sc.traceState?.serialize()
  if (state) fields.tracestate = state
  return fields
}

/**
 * Where a span about `handoff` goes: under the record's trace context (`parent`), linked to the
 * span active here; or, when the record carries none, under the active context, unlinked.
 */
function placement(handoff) {
  const parent = parentContext(handoff)
  if (parent === null) return { parent: undefined, links: [] }
  const active = otel.trace.getSpanContext(otel.context.active())
  return { parent, links: active && otel.isSpanContextValid(active) ? [{ context: active }] : [] }
}

/**
 * What a handoff record (or what is known of one before it exists: `id`, `taskId`, `fromAgent`,
 * `toAgent`, `claimToken`, `metadata`) says about its span.
 */
export function recordAttributes(handoff) {
  if (!isObject(handoff)) return {}
  const attributes = {}
  const set = (name, value) => {
    if (typeof value === 'string' || typeof value === 'number') attributes[name] = value
  }
  set('handoff.id', handoff.id)
  set('handoff.task_id', handoff.taskId)
  set('gen_ai.conversation.id', handoff.taskId)
  set('handoff.from_agent', handoff.fromAgent)
  set('handoff.to_agent', handoff.toAgent)
  set('handoff.claim_token', handoff.claimToken)
  if (isObject(handoff.metadata)) set('gen_ai.tool.call.id', handoff.metadata.call_id)
  return attributes
}

/**
 * The attributes of operation `op` by `agent` on `handoff` (see `recordAttributes`), with the
 * claim's `token`, the transfer tool's name and its call's id when known.
 */
export function handoffAttributes(op, agent, handoff, { token, toolName, callId } = {}) {
  const attributes = { 'gen_ai.operation.name': `handoff.${op}`, ...recordAttributes(handoff) }
  if (typeof agent === 'string' && agent) attributes['gen_ai.agent.name'] = agent
  if (typeof token === 'number') attributes['handoff.claim_token'] = token
  if (typeof toolName === 'string') attributes['gen_ai.tool.name'] = toolName
  if (typeof callId === 'string') attributes['gen_ai.tool.call.id'] = callId
  return attributes
}

function spanName(op, agent) {
  return typeof agent === 'string' && agent ? `handoff.${op} ${agent}` : `handoff.${op}`
}

/**
 * Runs `work(span)` inside the span of operation `op` by `agent`, with `attributes`, and returns
 * what it returns (for a Promise, the span ends when it settles). `span` is `null` when tracing
 * is off; the work may add what it learns with `span?.setAttributes(...)`. A throw or rejection
 * marks the span as an error, is recorded on it, and passes on unchanged. Given the `handoff`
 * the work is about, the span is a child of the record's `traceparent` (see `parentContext`).
 */
export function traced(op, agent, attributes, work, handoff = null) {
  if (otel === null) return work(null)
  const tracer = otel.trace.getTracer(TRACER_NAME)
  const { parent, links } = placement(handoff)
  const options = { kind: otel.SpanKind.INTERNAL, attributes, links }
  return tracer.startActiveSpan(spanName(op, agent), options, parent ?? otel.context.active(), (span) => {
    let value
    try {
      value = work(span)
    } catch (err) {
      endWithError(span, err)
      throw err
    }
    if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
      return Promise.resolve(value).then((settled) => {
        span.end()
        return settled
      }, (err) => {
        endWithError(span, err)
        throw err
      })
    }
    span.end()
    return value
  })
}

/**
 * Starts the span of operation `op` by `agent` for work that another API performs, seen to start
 * in one place and end in another (a lease's completion), as a child of `within` (a span `traced`
 * gave) when given, else of the active span. `end()` ends it; `end(error)` marks it as an error
 * first. Does nothing when tracing is off.
 */
export function startSpan(op, agent, attributes, within = null) {
  if (otel === null) return { op, end() {} }
  // Given explicitly: the callbacks that settle a lease may run where the context manager
  // (if any) lost the active span.
  const parent = within ? otel.trace.setSpan(otel.context.active(), within) : otel.context.active()
  const span = otel.trace.getTracer(TRACER_NAME).startSpan(spanName(op, agent), { kind: otel.SpanKind.INTERNAL, attributes }, parent)
  return { op, end: (...error) => (error.length === 0 ? span.end() : endWithError(span, error[0])) }
}

/**
 * Records the span of a claim made at `startTime`, once its result says which record it took:
 * its parent is that record's trace context (a `claimNext` cannot know it before); a claim of
 * nothing, or a refused one (`error`), is under the active context.
 */
function claimSpan(op, agent, attributes, startTime, result, error) {
  const handoff = isObject(result) && isObject(result.handoff) ? result.handoff : null
  const { parent, links } = placement(handoff)
  const span = otel.trace.getTracer(TRACER_NAME).startSpan(
    spanName(op, agent),
    { kind: otel.SpanKind.INTERNAL, attributes, links, startTime },
    parent ?? otel.context.active(),
  )
  if (error !== undefined) return endWithError(span, error)
  recordResult(span, result)
  span.end()
}

function endWithError(span, err) {
  const error = err instanceof Error ? err : new Error(describe(err))
  span.recordException(error)
  span.setStatus({ code: otel.SpanStatusCode.ERROR, message: error.message })
  span.end()
}

function describe(value) {
  try {
    return String(value)
  } catch {
    return typeof value
  }
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

// What a store method's arguments say about its span: the acting agent and the attributes known
// before it runs. Its result (a record, a claim, or null) adds the rest.
const creator = ([options]) => ({
  agent: isObject(options) ? options.fromAgent : undefined,
  attributes: recordAttributes(isObject(options) ? { taskId: options.taskId, toAgent: options.toAgent } : {}),
})
const claimer = ([id, agent]) => ({ agent, attributes: typeof id === 'string' ? { 'handoff.id': id } : {} })
const nextClaimer = ([agent]) => ({ agent, attributes: {} })
const holder = ([claim]) => {
  if (!isObject(claim)) return { agent: undefined, attributes: {} }
  const attributes = {}
  if (typeof claim.handoffId === 'string') attributes['handoff.id'] = claim.handoffId
  if (typeof claim.token === 'number') attributes['handoff.claim_token'] = claim.token
  return { agent: isObject(claim.handoff) ? claim.handoff.claimedBy : undefined, attributes }
}

/** The store methods `instrument` traces, with their operation and what their arguments say. */
const METHODS = {
  create: ['create', creator],
  createAsync: ['create', creator],
  claim: ['claim', claimer],
  claimAsync: ['claim', claimer],
  claimNext: ['claim', nextClaimer],
  claimNextAsync: ['claim', nextClaimer],
  complete: ['complete', holder],
  completeAsync: ['complete', holder],
  fail: ['fail', holder],
  failAsync: ['fail', holder],
}

function recordResult(span, result) {
  if (span === null || !isObject(result)) return
  // A claim: its token and the record as claimed; otherwise the record itself.
  if (isObject(result.handoff) && typeof result.token === 'number') {
    span.setAttributes({ ...recordAttributes(result.handoff), 'handoff.claim_token': result.token })
  } else {
    span.setAttributes(recordAttributes(result))
  }
}

// An instrumented store → the store underneath, for the adapters, which open their own spans.
const underneath = new WeakMap()

/**
 * `store` with a span around each create, claim, claimNext, complete and fail (and their Async
 * forms); everything else is the store's own. The store itself when tracing is off.
 */
export function instrument(store) {
  if (otel === null || underneath.has(store)) return store
  const bound = new Map()
  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      if (!bound.has(key)) {
        const method = METHODS[key]
        // The native methods need the store itself as `this`, not the proxy.
        if (key === 'withLease') bound.set(key, tracedLease(target, value))
        else bound.set(key, method === undefined ? value.bind(target) : tracedMethod(target, value, method))
      }
      return bound.get(key)
    },
  })
  underneath.set(proxy, store)
  return proxy
}

function tracedMethod(target, method, [op, describeArgs]) {
  if (op === 'claim') return tracedClaim(target, method, describeArgs)
  return (...args) => {
    const { agent, attributes } = describeArgs(args)
    return traced(op, agent, { ...handoffAttributes(op, agent, null), ...attributes }, (span) => {
      const result = method.apply(target, args)
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        return result.then((settled) => {
          recordResult(span, settled)
          return settled
        })
      }
      recordResult(span, result)
      return result
    })
  }
}

function tracedClaim(target, method, describeArgs) {
  return (...args) => {
    const { agent, attributes } = describeArgs(args)
    const all = { ...handoffAttributes('claim', agent, null), ...attributes }
    const startTime = new Date()
    let result
    try {
      result = method.apply(target, args)
    } catch (err) {
      claimSpan('claim', agent, all, startTime, null, err)
      throw err
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      return result.then((settled) => {
        claimSpan('claim', agent, all, startTime, settled)
        return settled
      }, (err) => {
        claimSpan('claim', agent, all, startTime, null, err)
        throw err
      })
    }
    claimSpan('claim', agent, all, startTime, result)
    return result
  }
}

/**
 * `withLease` of an instrumented store: the work runs in the holder's span, `handoff.work
 * <holder>`, a child of the record's trace context. A claim reference carries no record, which is
 * then read first (when it cannot be, `withLease` itself says why).
 */
function tracedLease(target, withLease) {
  return (claim, ...rest) => {
    let handoff = isObject(claim) && isObject(claim.handoff) ? claim.handoff : null
    if (handoff === null && isObject(claim) && typeof claim.handoffId === 'string') {
      try {
        handoff = target.get(claim.handoffId)
      } catch {
        handoff = null
      }
    }
    if (handoff === null) return withLease.call(target, claim, ...rest)
    const holder = handoff.claimedBy ?? undefined
    const token = typeof claim.token === 'number' ? claim.token : undefined
    const attributes = handoffAttributes('work', holder, handoff, { token })
    return traced('work', holder, attributes, () => withLease.call(target, claim, ...rest), handoff)
  }
}

/** The store an instrumented store wraps (any other store as it is). */
export function unwrap(store) {
  return underneath.get(store) ?? store
}
