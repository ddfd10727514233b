// ESM entry point: the native addon is loaded once, through the CommonJS entry point (index.js,
// which defines the store's methods). A test checks that every export of index.js is here.
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
  _bundleJson,
  _call,
  _callAsync,
} = binding

export default binding
