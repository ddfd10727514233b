// The CommonJS entry point: the native addon (binding.js, which `napi build` generates) with
// the store's methods defined from the core's catalog. Each operation is a method named in
// camelCase and its `…Async` Promise twin (methods.js says which arguments go by position);
// both call the addon's `_call` / `_callAsync` with the operation's name, so an operation the
// core adds is a method here without a line. A method the addon defines itself (one taking a
// callable: `verify`, `contextFor`, …) is kept. A `Bundle` a method returns gets `toJson()`.
// `create` defaults its trace context to the active OpenTelemetry span's, and a lease in
// `withLease` reports progress (both below).
'use strict'

const binding = require('./binding.js')
const { methodOf } = require('./methods.js')

const { operations } = JSON.parse(binding._catalogJson())
const Store = binding.Store.prototype

/** Whether a result of `schema` holds bundles (a `Bundle`, a list of them, or one or none). */
function holdsBundles(schema) {
  if (schema.$ref === '#/$defs/Bundle') return true
  return [schema.items, ...(schema.anyOf ?? [])].some((s) => s && holdsBundles(s))
}

/** Gives each bundle of `result` its `toJson()`: its portable JSON, not enumerable. */
function withToJson(result) {
  for (const bundle of Array.isArray(result) ? result : [result]) {
    if (bundle === null || typeof bundle !== 'object') continue
    const text = binding._bundleJson(JSON.stringify(bundle.data))
    Object.defineProperty(bundle, 'toJson', { value: () => text, writable: true, configurable: true })
  }
  return result
}

function define(name, method) {
  Object.defineProperty(method, 'name', { value: name })
  Object.defineProperty(Store, name, { value: method, writable: true, configurable: true })
}

for (const op of operations) {
  const { name, positional, options } = methodOf(op)
  const asyncName = `${name}Async`
  if (!Object.prototype.hasOwnProperty.call(Store, name)) {
    const count = positional.length
    const arity = count + (options ? 1 : 0)
    const parameter = options ? options.name : null
    define(name, function (...args) {
      return binding._call(this, op.name, count, parameter, args.slice(0, arity))
    })
    define(asyncName, function (...args) {
      return binding._callAsync(this, op.name, count, parameter, args.slice(0, arity))
    })
  }
  if (holdsBundles(op.result)) {
    const sync = Store[name]
    const promised = Store[asyncName]
    define(name, function (...args) {
      return withToJson(sync.apply(this, args))
    })
    define(asyncName, function (...args) {
      return promised.apply(this, args).then(withToJson)
    })
  }
}

// `create` stores the caller's W3C trace context on the record (`traceparent`, `tracestate`),
// by default the active OpenTelemetry span's when the optional peer `@opentelemetry/api` is
// installed: the successor then continues the creator's trace (handoff-core/tracing). A
// caller's own `traceparent` or `tracestate` is kept as given.
let otel = null
try {
  otel = require('@opentelemetry/api')
} catch (err) {
  // Absent is the normal case (a loader hook hiding it says so in ESM's words); a broken
  // install should be seen.
  if (err?.code !== 'MODULE_NOT_FOUND' && err?.code !== 'ERR_MODULE_NOT_FOUND') throw err
}

/** The active span's W3C trace context (`{ traceparent, tracestate? }`), or null when none is valid. */
function ambientTraceContext() {
  const span = otel.trace.getSpan(otel.context.active())
  const sc = span?.spanContext()
  if (!sc || !otel.isSpanContextValid(sc)) return null
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0')
  const found = { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}` }
  const state = sc.traceState?.serialize()
  if (state) found.tracestate = state
  return found
}

function withAmbientTrace(options) {
  if (otel === null || options === null || typeof options !== 'object' || Array.isArray(options)) return options
  if (options.traceparent != null || options.tracestate != null) return options
  const found = ambientTraceContext()
  return found === null ? options : { ...options, ...found }
}

for (const name of ['create', 'createAsync']) {
  const plain = Store[name]
  define(name, function (options, ...rest) {
    return plain.call(this, withAmbientTrace(options), ...rest)
  })
}

// `lease.progress(value)` (and `progressAsync`) in `withLease`'s work: a heartbeat carrying how
// the work goes (a small JSON value), now; the record keeps it until the next report and the
// lease's own heartbeats leave it in place. The lease knows its claim, not its store: the work
// is wrapped to note which store holds it.
const leaseStores = new WeakMap()
const Lease = binding.Lease.prototype

function storeOf(lease) {
  const store = leaseStores.get(lease)
  if (store === undefined) throw new TypeError('lease.progress: the lease was not given by store.withLease')
  return store
}

if (!Object.prototype.hasOwnProperty.call(Lease, 'progress')) {
  Object.defineProperty(Lease, 'progress', {
    value: function progress(value) {
      return storeOf(this).heartbeat(this.claim, { progress: value })
    },
    writable: true,
    configurable: true,
  })
  Object.defineProperty(Lease, 'progressAsync', {
    value: function progressAsync(value) {
      return Promise.resolve().then(() => storeOf(this).heartbeatAsync(this.claim, { progress: value }))
    },
    writable: true,
    configurable: true,
  })
  const withLease = Store.withLease
  define('withLease', function (claim, work, ...rest) {
    const store = this
    const noted = typeof work === 'function'
      ? function (lease, ...more) {
          leaseStores.set(lease, store)
          return work.call(this, lease, ...more)
        }
      : work
    return withLease.call(this, claim, noted, ...rest)
  })
}

module.exports = binding
