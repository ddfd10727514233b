// Writes the TypeScript types of the store from the core's catalog (docs/design.md §15): each method
// (and its `…Async` Promise twin) as methods.js derives it, in `interface Store`, which merges
// with the class napi declares; each method's options interface (camelCase keys, JSDoc from the
// argument docs, optional unless the core requires it); every result type, from the results'
// JSON schemas, as src/output.rs shapes the values (camelCase keys, but for the types it keeps
// as written: curated memory, bundles, a protocol body); the enums as string-literal unions; and,
// from the record's JSON Schema, the types of a protocol message's body (`Handoff.protocol`, in
// the seed's snake_case names, as stored). Run by `npm run build` after `napi build`: it reads
// the catalog from the addon just built and writes the generated part into index.d.ts, right
// after the hand-written header napi prepends (dts-header.d.ts, which it leaves alone). A
// method the addon writes by hand (one taking a callable) is declared by napi; only its
// options are generated here.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const HEADER = `${root}dts-header.d.ts`
const DTS = `${root}index.d.ts`
const BEGIN = '// <<< generated from the core\'s catalog by scripts/gen-types.mjs: do not edit below'
const END = '// >>> end of generated types'

/** The TypeScript names of the core's types, where the package already exports another name. */
const NAMES = {
  Kind: 'HandoffKind',
  Status: 'HandoffStatus',
  Reason: 'HandoffReason',
  ClaimRef: 'ClaimReference',
  Member: 'TaskMember',
  StepState: 'TaskStep',
  TaskHeader: 'TaskSummary',
  Run: 'ProtocolRun',
  Phase: 'ProtocolPhase',
  Section: 'PacketSection',
  ItemKind: 'SectionKind',
  Manifest: 'PacketManifest',
  Message: 'BundleMessage',
}
/** Types dts-header.d.ts declares by hand, more precisely than their schema says. */
const BY_HAND = new Set(['HandoffReason', 'ProtocolPhase', 'SectionKind'])
/** What a parameter of a core type accepts, where that is more than the type itself. */
const ACCEPTS = { ClaimRef: 'Claim | ClaimReference' }
/** Arguments whose TypeScript type says more than their schema: (argument type).(argument). */
const OVERRIDES = {
  'CreateArgs.reason': 'HandoffReasonInput',
  'CheckpointArgs.reason': 'HandoffReasonInput',
  // Chat messages in any provider's shape (the core reads them): the simplest one named.
  'AddConversationArgs.messages': 'Array<ContextMessage | object>',
  'AppendMessagesArgs.messages': 'Array<ContextMessage | object>',
  'ContextForArgs.transcript': 'Array<ContextMessage | object>',
  // A bundle's portable JSON as text or data, or the Bundle itself (src/bundles.rs); `null`
  // when the options name one of the store's (`bundleId`, `shareToken`).
  'ImportBundleArgs.bundle': 'string | Bundle | BundleData | JsonObject | null | undefined',
  // Results' words the package names more precisely than their schema (free text there).
  'TimelineEntry.type': 'TimelineEntryType',
  'TaskOutcome.status': 'TaskStatus',
}
/** Options of this face's own beside the core's arguments, per options type: [key, type, doc]. */
const OWN_OPTIONS = {
  EventsOptions: [
    ['redact', 'boolean', 'Replace secrets in each event\'s texts (a reason, an outcome, an error, the addressee)\nwith `[REDACTED:<rule>]`, as the CLI shows them (default `true`); `false` is the owner\'s\nopt-out.'],
  ],
}
const require = createRequire(import.meta.url)
const { methodOf, camel } = require('../methods.js')
// The addon itself, without the methods index.js defines: those it has are written by hand.
const { _catalogJson, handoffJsonSchema, Store } = require('../binding.js')
const { operations, results } = JSON.parse(_catalogJson())
const record = JSON.parse(handoffJsonSchema())
// How src/output.rs names results: the types that keep the core's snake_case keys (all inside
// them too), those kept exactly as stored (a key left out when absent), and the keys renamed or
// left out (`null`), as type → key → name.
const STORED = new Set(results.stored)
const AS_WRITTEN = new Set([...results.as_written, ...STORED])
const RENAMED = {}
for (const [type, key, name] of results.renamed) (RENAMED[type] ??= {})[key] = name
for (const [type, key] of results.left_out) (RENAMED[type] ??= {})[key] = null
/** The protocol body's types, which an argument may hold too (`initialize`'s `context`). */
const PROTOCOL = new Set(Object.keys(record.$defs ?? {}))
const byHand = new Set(Object.getOwnPropertyNames(Store.prototype))

const problems = []
const methods = operations.map((op) => methodOf(op))
const byName = new Map(methods.map((m) => [m.operation, m]))

// Argument types read whole from options (`create`'s) are named after those options.
const optionsOf = new Map()
for (const m of methods) {
  const op = operations.find((o) => o.name === m.operation)
  if (op && m.positional.length === 0 && m.options) optionsOf.set(op.arguments.title, m.options.type)
}

// Every name a caller writes in camelCase (the arguments, a claim's keys, the keys of the records
// a list argument holds), to write the docs' `snake_case` references to them as the caller does;
// the keys of other objects (a protocol body's `project_root`) are written as they are.
const argumentNames = new Set()
for (const op of operations) {
  const { properties = {}, $defs = {} } = op.arguments
  for (const [name, property] of Object.entries(properties)) {
    argumentNames.add(name)
    for (const p of [property, ...(property.anyOf ?? [])]) {
      const ref = (name === 'claim' ? p.$ref : p.items?.$ref)?.replace('#/$defs/', '')
      for (const key of Object.keys($defs[ref]?.properties ?? {})) argumentNames.add(key)
    }
  }
}
/** An argument type's older spellings, as (alias, argument): the core's `x-aliases`. */
const aliasesOf = (schema) => Object.entries(schema.properties ?? {}).flatMap(([name, p]) => (p['x-aliases'] ?? []).map((a) => [a, name]))

const prose = (text) => (text ?? '').replace(/`([a-z0-9_]+)`/g, (all, name) => (argumentNames.has(name) ? `\`${camel(name)}\`` : all))

/** JSDoc for `text` at `indent`, in napi-rs's layout; `asWritten` keeps its names as the core writes them. */
function jsdoc(text, indent = '', asWritten = false) {
  const lines = (asWritten ? (text ?? '') : prose(text)).split('\n').map((l) => l.trim())
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`
  return `${indent}/**\n${lines.map((l) => `${indent} *${l ? ` ${l}` : ''}`).join('\n')}\n${indent} */\n`
}

/**
 * The types the options and the record refer to, in order of first use: def name → { def, name,
 * root, ways }, `ways` being each way it is met (`camel`, `output`, as JSON → that way).
 */
const defs = new Map()

/**
 * The TypeScript type of `schema`, found in `root`. `how` says where it is met: `accepting` for
 * a parameter's type (a claim or its reference), `output` for a result's (times are strings,
 * `null` is written out), `camel` when an object met right here has camelCase keys,
 * `camelItems` when the objects of a list met here have.
 */
function tsType(schema, root, how = {}) {
  const ref = schema.$ref?.replace('#/$defs/', '')
  // A protocol body (and a run's history) is as the seed writes it: a key left out when absent
  // or empty.
  if (STORED.has(ref) && how.output) how = { stored: true }
  if (ref) {
    const def = root.$defs[ref]
    if (!how.output && optionsOf.has(def.title ?? ref)) return optionsOf.get(def.title ?? ref)
    const name = NAMES[ref] ?? ref
    if (BY_HAND.has(name)) return name
    if (!defs.has(ref)) defs.set(ref, { def, name, root, ways: new Map() })
    const way = { camel: Boolean(how.camel) && !(how.output && AS_WRITTEN.has(ref)), output: Boolean(how.output), stored: Boolean(how.stored), ref }
    defs.get(ref).ways.set(JSON.stringify(way), way)
    return how.accepting && ACCEPTS[ref] ? ACCEPTS[ref] : name
  }
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) {
    const nullable = how.output && alternatives.some((a) => a.type === 'null')
    const types = alternatives.filter((a) => a.type !== 'null').map((a) => tsType(a, root, how))
    return [...new Set(types), ...(nullable ? ['null'] : [])].join(' | ')
  }
  if (schema.const !== undefined) return `'${schema.const}'`
  if (schema.enum) return schema.enum.map((v) => `'${v}'`).join(' | ')
  const all = [schema.type ?? []].flat()
  const nullable = how.output && all.includes('null') ? ' | null' : ''
  const types = all.filter((t) => t !== 'null')
  if (types.length !== 1) return 'JsonValue'
  switch (types[0]) {
    case 'string': return (schema.format === 'date-time' && !how.output && !how.stored ? 'string | Date' : 'string') + nullable
    case 'integer':
    case 'number': return 'number' + nullable
    case 'boolean': return 'boolean' + nullable
    case 'array': {
      const item = tsType(schema.items ?? {}, root, { ...how, camel: how.output ? how.camel : how.camelItems, camelItems: false })
      return (item.includes(' ') ? `Array<${item}>` : `${item}[]`) + nullable
    }
    case 'object':
      if (how.output && schema.properties) return inline([schema], root, how) + nullable
      return 'JsonObject' + nullable
    default: return 'JsonValue'
  }
}

/** `type` without its `null`: a key left out rather than null. */
const withoutNull = (type) => type.replace(/ \| null$/, '')

/** A result's key as src/output.rs writes it. */
const outputKey = (type, key, camelKeys) => RENAMED[type]?.[key] ?? (camelKeys ? camel(key) : key)

/**
 * An object literal type merging `variants` (a result's flattened enum: an event's `kind` and
 * `detail`): each key of every variant, optional unless every variant has it, its type the
 * union of the variants' (objects merged the same way).
 */
function inline(variants, root, how, top = false) {
  const keys = new Map()
  for (const v of variants) {
    for (const [k, p] of Object.entries(v.properties ?? {})) keys.set(k, [...(keys.get(k) ?? []), p])
  }
  const parts = [...keys].map(([k, ps]) => {
    const everywhere = top || (ps.length === variants.length && variants.every((v) => (v.required ?? []).includes(k)))
    const type = ps.every((p) => p.type === 'object' && p.properties)
      ? inline(ps, root, how)
      : [...new Set(ps.map((p) => tsType(p, root, how)))].join(' | ')
    return `${outputKey(null, k, how.camel)}${everywhere ? '' : '?'}: ${everywhere ? type : withoutNull(type)}`
  })
  return `{ ${parts.join('; ')} }`
}

/**
 * An interface of `properties` (less `skip`), with `aliases` as deprecated older names: its keys
 * in camelCase when `camel` (else as the core writes them, docs too), its properties' types met
 * the way `inner` says; `nullable` for an object the binding reads as options, where `null` is
 * `undefined` (an optional key takes `null` too, as values from JSON or an SDK often are);
 * `output` for a result, whose keys are all present but those the core leaves out.
 */
function interfaceOf(name, doc, schema, root, { camel: camelKeys = true, inner = {}, skip = [], aliases = [], nullable = false, own = [], output = false, stored = false, type = null } = {}) {
  const required = new Set(schema.required ?? [])
  let out = jsdoc(doc, '', !camelKeys) + `export interface ${name} {\n`
  for (const [k, property] of Object.entries(schema.properties ?? {})) {
    if (skip.includes(k) || (output && RENAMED[type]?.[k] === null)) continue
    let tsT = OVERRIDES[`${schema.title ?? type}.${k}`] ?? tsType(property, root, inner)
    // A result's key is always there in camelCase (src/output.rs writes an empty value for one
    // the core leaves out); as written, one neither required nor defaulted may be left out.
    const present = required.has(k) || output || (stored && property.default !== undefined)
    const optional = present ? '' : '?'
    if (output && optional) tsT = withoutNull(tsT)
    const key = output ? outputKey(type, k, camelKeys) : (camelKeys ? camel(k) : k)
    out += jsdoc(property.description, '  ', !camelKeys) + `  ${key}${optional}: ${tsT}${optional && nullable ? ' | null' : ''}\n`
    for (const [alias, target] of aliases.filter(([, t]) => t === k)) {
      const text = `The same as \`${camel(target)}\` (its older name); give one or the other.\n@deprecated Use \`${camel(target)}\`.`
      out += jsdoc(text, '  ') + `  ${camel(alias)}?: ${tsT}\n`
    }
  }
  if (output && schema.oneOf) {
    // A flattened enum beside the fields (an event's `kind` and `detail`).
    const merged = inline(schema.oneOf, root, inner, true).slice(2, -2)
    for (const part of merged.split(/; (?=[a-zA-Z_]+\??: )/)) out += `  ${part}\n`
  }
  for (const [k, t, text] of own) {
    out += jsdoc(text, '  ', true) + `  ${k}?: ${t}${nullable ? ' | null' : ''}\n`
  }
  return `${out}}\n`
}

/** The declaration of a def met `way`: an object's keys as the binding reads or writes them there. */
function declaration({ def, name, root }, way) {
  if (def.properties) {
    if (way.output) {
      const inner = { output: true, camel: way.camel }
      return interfaceOf(name, def.description, def, root, { camel: way.camel, inner, output: true, type: way.ref })
    }
    // The seed's protocol body leaves out what is empty; the rest writes what has a default.
    const stored = !PROTOCOL.has(way.ref)
    if (way.stored) return interfaceOf(name, def.description, def, root, { camel: false, inner: { stored: true }, stored })
    // Below an object read with camelCase keys (or as written), every object is read as written.
    // An object read with camelCase keys (a list's records) is read as options are: `null` is `undefined`.
    return interfaceOf(name, def.description, def, root, { camel: way.camel, nullable: way.camel })
  }
  const variants = def.oneOf ?? def.anyOf ?? []
  // The words' docs (an untagged union's alternatives are documented by their own types).
  const docs = variants.filter((v) => v.description && v.const !== undefined).map((v) => `- \`${v.const}\`: ${v.description}`)
  return jsdoc([def.description, ...docs].join('\n')) + `export type ${name} = ${tsType(def, root, { ...way, output: false })}\n`
}

/** A parameter: `name: type`, `?` when it may be left out. */
const parameter = (name, type, optional) => `${name}${optional ? '?' : ''}: ${type}`

let generated = ''
let store = ''
for (const op of operations) {
  const method = byName.get(op.name)
  const root = op.arguments
  const params = []
  for (const p of method.positional) {
    // The binding reads a claim's keys, and those of a list's objects, in camelCase.
    const how = { accepting: true, camel: p === 'claim', camelItems: true }
    const type = OVERRIDES[`${root.title}.${p}`] ?? tsType(root.properties[p], root, how)
    params.push(parameter(camel(p), type, false))
  }
  if (method.options) {
    const skip = method.positional
    const doc = `The ${method.options.name} of \`store.${method.name}\`.`
    const inner = { camelItems: true }
    const own = OWN_OPTIONS[method.options.type] ?? []
    generated += interfaceOf(method.options.type, doc, root, root, { inner, skip, aliases: aliasesOf(root), nullable: true, own })
    params.push(parameter(method.options.name, method.options.type, method.options.optional))
  }
  const returns = op.result.type === 'null' ? 'void' : tsType(op.result, op.result, { output: true, camel: true })
  if (byHand.has(method.name)) continue
  const doc = prose(root.description)
  store += jsdoc(doc, '  ') + `  ${method.name}(${params.join(', ')}): ${returns}\n`
  store += jsdoc(`${doc}\n\nAs a Promise: the work runs on libuv's thread pool.`, '  ') +
    `  ${method.name}Async(${params.join(', ')}): Promise<${returns}>\n`
}
generated += `/** The store's operations, from the core's catalog (index.js defines them). */\nexport interface Store {\n${store}}\n`

// A protocol message's body, as records carry it: the seed's names, as stored.
const body = tsType(record.properties.protocol, record, { stored: true })
if (body !== 'ProtocolBody') problems.push(`the record's protocol is typed "${body}", not "ProtocolBody"`)

// The types the options and the record refer to, each once, declared every way it is met (a
// Map's iteration also visits what declaring one adds) so that a type met two ways with two
// shapes (camelCase keys in one, snake_case in the other) is found, not half declared.
const declared = new Map() // def name → way (as JSON) → declaration
for (let more = true; more;) {
  more = false
  for (const [ref, entry] of defs) {
    if (!declared.has(ref)) declared.set(ref, new Map())
    for (const [key, way] of entry.ways) {
      if (declared.get(ref).has(key)) continue
      declared.get(ref).set(key, declaration(entry, way))
      more = true
    }
  }
}
for (const [ref, { name }] of defs) {
  const shapes = new Set(declared.get(ref).values())
  if (shapes.size > 1) {
    problems.push(`${name} is met in two ways (keys in camelCase or as written, an argument or a result) that give it two shapes: give one of them a type of its own`)
  }
  generated += [...shapes][0]
}

if (problems.length > 0) {
  console.error(`gen-types: the store's methods do not match the core's catalog:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}

const header = readFileSync(HEADER, 'utf8')
const dts = readFileSync(DTS, 'utf8')
if (!dts.startsWith(header)) {
  console.error('gen-types: index.d.ts does not begin with dts-header.d.ts: run `napi build` first')
  process.exit(1)
}
// The generated types go right after the header, in index.d.ts only: dts-header.d.ts holds what
// is written by hand. A block an earlier run left there (this script run again without `napi
// build` in between) is replaced.
let rest = dts.slice(header.length)
if (rest.startsWith(BEGIN)) {
  const end = rest.indexOf(`${END}\n`)
  if (end < 0) {
    console.error('gen-types: index.d.ts has the start of the generated types but not their end: run `napi build` first')
    process.exit(1)
  }
  rest = rest.slice(end + END.length + 1)
}
writeFileSync(DTS, `${header}${BEGIN}\n${generated}${END}\n${rest}`)
