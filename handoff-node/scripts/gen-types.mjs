// Writes the TypeScript types of the store methods' options from the core's catalog (DESIGN
// §15): each method's options interface (camelCase keys, JSDoc from the argument docs, optional
// unless the core requires it), the enums as string-literal unions, the claim reference. Run by
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
}
/** A result in the catalog's type language, in TypeScript. */
const RETURNS = { integer: 'number', unit: 'void', string: 'string' }

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())

const { _catalogJson } = createRequire(import.meta.url)('../index.js')
const { operations, methods } = JSON.parse(_catalogJson())

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

// Every argument name, to write the docs' `snake_case` references as the camelCase a caller uses.
const argumentNames = new Set()
for (const op of operations) {
  for (const schema of [op.arguments, ...Object.values(op.arguments.$defs ?? {})]) {
    for (const name of Object.keys(schema.properties ?? {})) argumentNames.add(name)
  }
}
const prose = (text) => (text ?? '').replace(/`([a-z0-9_]+)`/g, (all, name) => (argumentNames.has(name) ? `\`${camel(name)}\`` : all))

/** JSDoc for `text` at `indent`, in napi-rs's layout. */
function jsdoc(text, indent = '') {
  const lines = prose(text).split('\n').map((l) => l.trim())
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`
  return `${indent}/**\n${lines.map((l) => `${indent} *${l ? ` ${l}` : ''}`).join('\n')}\n${indent} */\n`
}

const defs = new Map() // def name → [schema, TypeScript name], in order of first use

/** The TypeScript type of `schema`, found in `root`; `accepting` for a parameter's type. */
function tsType(schema, root, accepting = false) {
  const ref = schema.$ref?.replace('#/$defs/', '')
  if (ref) {
    const def = root.$defs[ref]
    if (optionsOf.has(def.title ?? ref)) return optionsOf.get(def.title ?? ref)
    const name = NAMES[ref] ?? ref
    if (!defs.has(ref)) defs.set(ref, [def, name])
    return accepting && ACCEPTS[ref] ? ACCEPTS[ref] : name
  }
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) {
    const types = alternatives.filter((a) => a.type !== 'null').map((a) => tsType(a, root, accepting))
    return types.join(' | ')
  }
  if (schema.const !== undefined) return `'${schema.const}'`
  if (schema.enum) return schema.enum.map((v) => `'${v}'`).join(' | ')
  const types = [schema.type ?? []].flat().filter((t) => t !== 'null')
  if (types.length !== 1) return 'JsonValue'
  switch (types[0]) {
    case 'string': return schema.format === 'date-time' ? 'string | Date' : 'string'
    case 'integer':
    case 'number': return 'number'
    case 'boolean': return 'boolean'
    case 'array': {
      const item = tsType(schema.items ?? {}, root, accepting)
      return item.includes(' ') ? `Array<${item}>` : `${item}[]`
    }
    case 'object': return 'JsonObject'
    default: return 'JsonValue'
  }
}

/** An interface of `properties` (less `skip`), with `aliases` as deprecated older names. */
function interfaceOf(name, doc, schema, root, skip = [], aliases = []) {
  const required = new Set(schema.required ?? [])
  let out = jsdoc(doc) + `export interface ${name} {\n`
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (skip.includes(key)) continue
    const type = OVERRIDES[`${schema.title}.${key}`] ?? tsType(property, root)
    const optional = required.has(key) ? '' : '?'
    out += jsdoc(property.description, '  ') + `  ${camel(key)}${optional}: ${type}\n`
    for (const [alias, target] of aliases.filter(([, t]) => t === key)) {
      const text = `The same as \`${camel(target)}\` (its older name); give one or the other.\n@deprecated Use \`${camel(target)}\`.`
      out += jsdoc(text, '  ') + `  ${camel(alias)}?: ${type}\n`
    }
  }
  return `${out}}\n`
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
    const expected = tsType(root.properties[p.name], root, true)
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
    generated += interfaceOf(method.options.ts, doc, root, root, skip, method.aliases)
  } else if (Object.keys(root.properties ?? {}).some((k) => !method.positional.some((p) => p.name === k))) {
    problems.push(`${where}: the core's arguments beyond ${method.positional.map((p) => p.name).join(', ') || 'none'} need an options object`)
  }
}
// The types the options refer to, each once (a Map's iteration also visits the types that
// writing one of them adds).
for (const [ref, [def, name]] of defs) {
  const root = operations.find((o) => o.arguments.$defs?.[ref]).arguments
  if (def.properties) {
    generated += interfaceOf(name, def.description, def, root)
  } else {
    const variants = def.oneOf ?? def.anyOf ?? []
    const docs = variants.filter((v) => v.description).map((v) => `- \`${v.const}\`: ${v.description}`)
    generated += jsdoc([def.description, ...docs].join('\n')) + `export type ${name} = ${tsType(def, root)}\n`
  }
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
