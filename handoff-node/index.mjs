// ESM entry point: the native addon is loaded once, through the CommonJS loader that
// `napi build` generates (index.js). A test checks that every export of index.js is here.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const binding = require('./index.js')

export const {
  AgentRegistry,
  ContextBuilder,
  Lease,
  ManualClock,
  Store,
  connect,
  connectAsync,
  open,
  openAsync,
  redact,
  generateBundleKey,
  toMarkdown,
  handoffToJson,
  handoffFromJson,
  handoffJsonSchema,
  __napiBindingTarget,
  _catalogJson,
  _coreProblems,
} = binding

export default binding
