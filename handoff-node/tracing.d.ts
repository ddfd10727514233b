/* Hand-written types of `handoff-core/tracing` (tracing.mjs). */
import type { Store } from './index.js'

/**
 * An OpenTelemetry `Context` (from `@opentelemetry/api`), described here by its shape so that
 * these types do not need the optional peer installed.
 */
export interface TraceContext {
  getValue(key: symbol): unknown
  setValue(key: symbol, value: unknown): TraceContext
  deleteValue(key: symbol): TraceContext
}

/** An operation that gets a span. */
export type HandoffOperation = 'create' | 'claim' | 'work' | 'complete' | 'fail'

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
 *
 * One trace across a chain of agents: a claim's span (recorded once the claim says which record it
 * took) is a child of that record's `traceparent`, the creator's span; so is `withLease`'s work,
 * run in the holder's span `handoff.work <holder>`. The span active in the successor is linked.
 * (`create` itself stores the active span's trace context on the record, instrumented or not.)
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
 * ends when it settles); a throw or rejection marks the span as an error and passes on. Given the
 * `handoff` the work is about, the span is a child of its `traceparent` (see `parentContext`).
 */
export declare function traced<T>(op: HandoffOperation, agent: string | null | undefined, attributes: HandoffSpanAttributes, work: (span: HandoffSpan | null) => T, handoff?: { traceparent?: string | null, tracestate?: string | null } | null): T

/**
 * The OpenTelemetry context whose span is the remote one a record's `traceparent` names (with its
 * `tracestate`), on top of the active context: the parent of a successor's span. `null` when
 * `@opentelemetry/api` is not installed or the record carries no valid trace context.
 */
export declare function parentContext(handoff: { traceparent?: string | null, tracestate?: string | null } | null | undefined): TraceContext | null
