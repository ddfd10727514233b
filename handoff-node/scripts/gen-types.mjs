// Writes the TypeScript types of the store methods' options from the core's catalog (DESIGN
// §15): each method's options interface (camelCase keys, JSDoc from the argument docs, optional
// unless the core requires it), the enums as string-literal unions, the claim reference; and,
// from the record's JSON Schema, the types of a protocol message's body (`Handoff.protocol`,
// in the seed's snake_case names, as stored). An object's keys are written as the binding reads
// them: camelCase in an options object, a claim and the records a list argument holds (a
// plan's steps), as written everywhere else (a protocol body's `context`, `metadata`). Run by
// `npm run build` after `napi build`: it reads the catalog from the addon just built, writes the
// generated part of dts-header.d.ts (which napi prepends to index.d.ts) and the same part of
// index.d.ts, so that both are current without building twice.
//
// It also checks the store_operations! entries of src/store.rs against the catalog: every core
// operation has a method, and each method's parameter and return types are the ones its
// arguments' schema and the operation's result call for.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const HEADER = `${root}dts-header.d.ts`
const DTS = `${root}index.d.ts`
const BEGIN = '// <<< generated from the core\'s catalog by scripts/gen-types.mjs: do not edit below'
const END = '// >>> end of generated types'

/** The TypeScript names of the core's types, where the package already exports another name. */
const NAMES = { Kind: 'HandoffKind', Status: 'HandoffStatus', ClaimRef: 'ClaimReference' }
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
}
/** Options of this face's own beside the core's arguments, per options type: [key, type, doc]. */
const OWN_OPTIONS = {
  EventsOptions: [
    ['redact', 'boolean', 'Replace secrets in each event\'s texts (a reason, an outcome, an error, the addressee)\nwith `[REDACTED:<rule>]`, as the CLI shows them (default `true`); `false` is the owner\'s\nopt-out.'],
  ],
}
/** A result in the catalog's type language, in TypeScript. */
const RETURNS = { integer: 'number', unit: 'void', string: 'string' }

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())

const { _catalogJson, handoffJsonSchema } = createRequire(import.meta.url)('../index.js')
const { operations, methods } = JSON.parse(_catalogJson())
const record = JSON.parse(handoffJsonSchema())

const problems = []
const byName = new Map(methods.map((m) => [m.operation, m]))
for (const op of operations) {
  if (!byName.has(op.name)) {
    problems.push(`the core's operation ${op.name} has no method: add its entry to store_operations! in src/store.rs`)
  }
}

// Argument types read whole from options (`create`'s) are named after those options.
const optionsOf = new Map()
for (const m of methods) {
  const op = operations.find((o) => o.name === m.operation)
  if (op && m.positional.length === 0 && m.options) optionsOf.set(op.arguments.title, m.options.ts)
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
 * a parameter's type (a claim or its reference), `output` for a result's (times are strings),
 * `camel` when an object met right here is read with camelCase keys, `camelItems` when the
 * objects of a list met here are.
 */
function tsType(schema, root, how = {}) {
  const ref = schema.$ref?.replace('#/$defs/', '')
  if (ref) {
    const def = root.$defs[ref]
    if (optionsOf.has(def.title ?? ref)) return optionsOf.get(def.title ?? ref)
    const name = NAMES[ref] ?? ref
    if (!defs.has(ref)) defs.set(ref, { def, name, root, ways: new Map() })
    const way = { camel: Boolean(how.camel), output: Boolean(how.output) }
    defs.get(ref).ways.set(JSON.stringify(way), way)
    return how.accepting && ACCEPTS[ref] ? ACCEPTS[ref] : name
  }
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) {
    const types = alternatives.filter((a) => a.type !== 'null').map((a) => tsType(a, root, how))
    return types.join(' | ')
  }
  if (schema.const !== undefined) return `'${schema.const}'`
  if (schema.enum) return schema.enum.map((v) => `'${v}'`).join(' | ')
  const types = [schema.type ?? []].flat().filter((t) => t !== 'null')
  if (types.length !== 1) return 'JsonValue'
  switch (types[0]) {
    case 'string': return schema.format === 'date-time' && !how.output ? 'string | Date' : 'string'
    case 'integer':
    case 'number': return 'number'
    case 'boolean': return 'boolean'
    case 'array': {
      const item = tsType(schema.items ?? {}, root, { ...how, camel: how.camelItems, camelItems: false })
      return item.includes(' ') ? `Array<${item}>` : `${item}[]`
    }
    case 'object': return 'JsonObject'
    default: return 'JsonValue'
  }
}

/**
 * An interface of `properties` (less `skip`), with `aliases` as deprecated older names: its keys
 * in camelCase when `camel` (else as the core writes them, docs too), its properties' types met
 * the way `inner` says; `nullable` for an object the binding reads as options, where `null` is
 * `undefined` (an optional key takes `null` too, as values from JSON or an SDK often are).
 */
function interfaceOf(name, doc, schema, root, { camel: camelKeys = true, inner = {}, skip = [], aliases = [], nullable = false, own = [] } = {}) {
  const key = camelKeys ? camel : (k) => k
  const required = new Set(schema.required ?? [])
  let out = jsdoc(doc, '', !camelKeys) + `export interface ${name} {\n`
  for (const [k, property] of Object.entries(schema.properties ?? {})) {
    if (skip.includes(k)) continue
    const optional = required.has(k) ? '' : '?'
    const type = (OVERRIDES[`${schema.title}.${k}`] ?? tsType(property, root, inner)) + (optional && nullable ? ' | null' : '')
    out += jsdoc(property.description, '  ', !camelKeys) + `  ${key(k)}${optional}: ${type}\n`
    for (const [alias, target] of aliases.filter(([, t]) => t === k)) {
      const text = `The same as \`${camel(target)}\` (its older name); give one or the other.\n@deprecated Use \`${camel(target)}\`.`
      out += jsdoc(text, '  ') + `  ${camel(alias)}?: ${type}\n`
    }
  }
  for (const [k, type, text] of own) {
    out += jsdoc(text, '  ', true) + `  ${k}?: ${type}${nullable ? ' | null' : ''}\n`
  }
  return `${out}}\n`
}

/** The declaration of a def met `way`: an object's keys as the binding reads them there. */
function declaration({ def, name, root }, way) {
  if (def.properties) {
    // Below an object read with camelCase keys (or as written), every object is read as written.
    // An object read with camelCase keys (a list's records) is read as options are: `null` is `undefined`.
    const nullable = way.camel && !way.output
    return interfaceOf(name, def.description, def, root, { camel: way.camel, inner: { output: way.output }, nullable })
  }
  const variants = def.oneOf ?? def.anyOf ?? []
  // The words' docs (an untagged union's alternatives are documented by their own types).
  const docs = variants.filter((v) => v.description && v.const !== undefined).map((v) => `- \`${v.const}\`: ${v.description}`)
  return jsdoc([def.description, ...docs].join('\n')) + `export type ${name} = ${tsType(def, root, way)}\n`
}

let generated = ''
for (const op of operations) {
  const method = byName.get(op.name)
  if (!method) continue
  const root = op.arguments
  const where = `${camel(op.name)} (src/store.rs)`
  for (const p of method.positional) {
    if (!root.properties?.[p.name]) {
      problems.push(`${where}: ${p.name} is no argument of the core's ${op.name}`)
      continue
    }
    // The binding reads a claim's keys, and those of a list's objects, in camelCase.
    const how = { accepting: true, camel: p.name === 'claim', camelItems: true }
    const expected = OVERRIDES[`${root.title}.${p.name}`] ?? tsType(root.properties[p.name], root, how)
    if (p.ts !== expected) problems.push(`${where}: ${p.name} should be typed "${expected}", not "${p.ts}"`)
  }
  const result = op.returns.endsWith('?') ? `${op.returns.slice(0, -1)} | null` : op.returns
  const list = result.match(/^\[(.*)\]$/)
  const returns = list ? `${RETURNS[list[1]] ?? list[1]}[]` : (RETURNS[result] ?? result)
  if (method.returns[0] !== returns || method.returns[1] !== `Promise<${returns}>`) {
    problems.push(`${where}: returns "${returns}" and "Promise<${returns}>", not "${method.returns.join('", "')}"`)
  }
  if (method.options) {
    const skip = method.positional.map((p) => p.name)
    const doc = `The ${method.options.name} of \`store.${camel(op.name)}\`.`
    const inner = { camelItems: true }
    const own = OWN_OPTIONS[method.options.ts] ?? []
    generated += interfaceOf(method.options.ts, doc, root, root, { inner, skip, aliases: method.aliases, nullable: true, own })
  } else if (Object.keys(root.properties ?? {}).some((k) => !method.positional.some((p) => p.name === k))) {
    problems.push(`${where}: the core's arguments beyond ${method.positional.map((p) => p.name).join(', ') || 'none'} need an options object`)
  }
}
// A protocol message's body, as records carry it: the seed's names, as stored.
const body = tsType(record.properties.protocol, record, { output: true })
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
const start = header.indexOf(BEGIN)
const next = (start < 0 ? header : header.slice(0, start)) + `${BEGIN}\n${generated}${END}\n`
writeFileSync(HEADER, next)
writeFileSync(DTS, next + dts.slice(header.length))
