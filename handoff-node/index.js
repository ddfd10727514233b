// The CommonJS entry point: the native addon (binding.js, which `napi build` generates) with
// the store's methods defined from the core's catalog. Each operation is a method named in
// camelCase and its `…Async` Promise twin (methods.js says which arguments go by position);
// both call the addon's `_call` / `_callAsync` with the operation's name, so an operation the
// core adds is a method here without a line. A method the addon defines itself (one taking a
// callable: `verify`, `contextFor`, …) is kept. A `Bundle` a method returns gets `toJson()`.
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

module.exports = binding
