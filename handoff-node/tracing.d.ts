/* Hand-written types of `handoff-core/tracing` (tracing.mjs). */
import type { Store } from './index.js'

/** An operation that gets a span. */
export type HandoffOperation = 'create' | 'claim' | 'complete' | 'fail'

/** A span's attributes, as OpenTelemetry takes them. */
export type HandoffSpanAttributes = { [name: string]: string | number }

/** The tracer's name (`handoff-core`), as the Python binding names its own. */
export declare const TRACER_NAME: 'handoff-core'
/** The operations that get a span. */
export declare const OPERATIONS: readonly HandoffOperation[]
/** Whether spans are recorded: `@opentelemetry/api` could be imported. */
export declare const tracingAvailable: boolean

/**
 * `store` with a span `handoff.<op> <agent>` around each create, claim, claimNext, complete and
 * fail (and their Async forms), attributes named as in the Python binding (`gen_ai.operation.name`,
 * `gen_ai.agent.name`, `gen_ai.conversation.id`, `gen_ai.tool.call.id`, `handoff.id`,
 * `handoff.task_id`, `handoff.from_agent`, `handoff.to_agent`, `handoff.claim_token`);
 * everything else is the store's own. The store itself when `@opentelemetry/api` is not installed.
 */
export declare function instrument<S extends Store>(store: S): S

/** The store an instrumented store wraps (any other store as it is). */
export declare function unwrap<S extends Store>(store: S): S

/** A span's handle while it is open (`null` when tracing is off). */
export interface HandoffSpan {
  setAttributes(attributes: HandoffSpanAttributes): unknown
}

/**
 * Runs `work` inside the span of `op` by `agent` and returns what it returns (a Promise's span
 * ends when it settles); a throw or rejection marks the span as an error and passes on.
 */
export declare function traced<T>(op: HandoffOperation, agent: string | null | undefined, attributes: HandoffSpanAttributes, work: (span: HandoffSpan | null) => T): T
