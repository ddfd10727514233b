// The store's methods, derived from the core's catalog (`_catalogJson`): each operation is a
// method named in camelCase (and its `…Async` Promise twin) taking the leading required
// arguments of the catalog's `positional` by position and the others in one options object.
// Read by index.js, which defines the methods, and by scripts/gen-types.mjs, which declares
// them; an operation the core adds needs no line here.
'use strict'

/**
 * Methods that take fewer arguments by position than the rule gives: their signatures predate
 * the catalog and stay as published (operation → how many).
 */
const POSITIONAL = {
  create: 0,
  create_task: 0,
  fail_task: 2,
  import_bundle: 1,
  release: 1,
  fail: 1,
  reject: 2,
  fail_step: 1,
  resolve_escalation: 1,
  report_error: 1,
  recover: 1,
  escalate: 1,
}

/** Options objects not called `options: <Operation>Options`: operation → [parameter, type]. */
const OPTIONS = {
  checkpoint: ['fields', 'CheckpointFields'],
  update_task: ['changes', 'TaskChanges'],
  verify: ['options', 'VerifyThresholds'],
  cherry_pick: ['options', 'CherryPickArguments'],
  verify_bundle: ['options', 'VerifyBundleThresholds'],
  context_for: ['options', 'ContextForArguments'],
}

/** Options a method requires although none of their keys is required by itself (one of several is). */
const REQUIRED_OPTIONS = new Set(['create_bundle', 'create_task', 'rerun_task', 'checkpoint'])

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
const pascal = (name) => camel(name).replace(/^./, (c) => c.toUpperCase())

/**
 * The method of `op` (a catalog entry): `{ name, operation, positional, options }`, where
 * `positional` are the core's argument names taken by position and `options` is
 * `{ name, type, optional }` or `null` when every argument goes by position.
 */
function methodOf(op) {
  const required = new Set(op.arguments.required ?? [])
  let count = 0
  while (count < op.positional.length && required.has(op.positional[count])) count++
  if (op.name in POSITIONAL) count = POSITIONAL[op.name]
  const positional = op.positional.slice(0, count)
  const rest = Object.keys(op.arguments.properties ?? {}).filter((k) => !positional.includes(k))
  let options = null
  if (rest.length > 0) {
    const [name, type] = OPTIONS[op.name] ?? ['options', `${pascal(op.name)}Options`]
    const optional = !rest.some((k) => required.has(k)) && !REQUIRED_OPTIONS.has(op.name)
    options = { name, type, optional }
  }
  return { name: camel(op.name), operation: op.name, positional, options }
}

module.exports = { methodOf, camel, pascal }
