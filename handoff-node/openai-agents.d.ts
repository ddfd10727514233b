/* Hand-written types of `handoff-core/openai-agents` (openai-agents.mjs), against @openai/agents' own types. */
import type { Agent, AgentOutputType, Handoff, RunConfig, RunContext, RunResult, TextOutput, UnknownContext } from '@openai/agents'
import type { Claim, ClaimReference, JsonValue, Store } from './index.js'

/** The task a durable handoff belongs to: fixed, or read from the run's context when the model calls the tool. */
export type TaskIdSource<TContext = UnknownContext> = string | ((runContext: RunContext<TContext>) => string | PromiseLike<string>)

/** The options of `durableHandoff`. */
export interface DurableHandoffOptions<TContext = UnknownContext> {
  /** The agent handing over: the record's `fromAgent` (the agent whose `handoffs` hold this handoff). */
  fromAgent: string
  /** The record's task id, or a function of the run context giving it (awaited when it returns a Promise). */
  taskId: TaskIdSource<TContext>
  /** What the successor must achieve; by default the model's `summary` argument. */
  goal?: string | null
  /** The tool's description for the model; by default the registry's transfer description. */
  toolDescription?: string | null
}

/**
 * A handoff to `agent` that is recorded in `store` instead of run here.
 *
 * Its tool is `transfer_to_<agent name>` (the SDK's own name) with the registry's strict transfer
 * schema (`reason`, `summary`, `pending`, `instructions`). When the model calls it, a pending
 * handoff `fromAgent` → `agent.name` is written: `taskId`, `goal` (else the model's summary), the
 * model's pending steps and instructions, and in `metadata` the `adapter`, the tool call's
 * `call_id`, the model's `handoff_reason` and the `transcript` so far (chat messages, redacted,
 * within 4,000 tokens). Its id is `oa-` and 32 hex digits of SHA-256 of `taskId + "\n" + callId`
 * (as the Python adapter computes it), so a retried run writes it once. `agent` does not run in
 * this process: a stand-in named after it ends the run with an output naming the handoff's id.
 *
 * The record is written by the handoff's input filter, so the run may not use `conversationId`
 * or `previousResponseId` (the SDK refuses filtered handoffs with server-managed history).
 * Names the store refuses (`agent.name`, `fromAgent`) throw `VALIDATION` here, before any run.
 */
export declare function durableHandoff<TContext = UnknownContext, TOutput extends AgentOutputType = TextOutput>(
  store: Store,
  agent: Agent<TContext, TOutput>,
  options: DurableHandoffOptions<TContext>,
): Handoff<TContext, TextOutput>

/** The options of `runClaimed`. */
export interface RunClaimedOptions<TContext = undefined> {
  /** The context packet's budget in tokens (default 4000). */
  budgetTokens?: number
  /** The run's context, as `run(agent, input, { context })` takes it. */
  context?: TContext | RunContext<TContext>
  /** The runner's configuration (`new Runner(runConfig)`). */
  runConfig?: Partial<RunConfig>
}

/**
 * Runs `agent` on the claimed handoff and settles it: the input is the store's packet for the
 * handoff (`store.contextFor`: the record, its task's goal and plan, the outcomes of the steps
 * it depends on, who worked on it before, the predecessor's unverified findings and the
 * relevant knowledge on `main`), with the transcript the record carries (the framework's own)
 * as one more conversation, redacted, within `budgetTokens`, as Responses items),
 * the claim heartbeats while the agent runs (`store.withLease`), and the handoff is completed
 * with the final output (text as it is, anything else as JSON). When the run throws, the claim
 * is failed with the error's message (pending again while attempts remain) and the Promise
 * rejects with the error itself. With `@opentelemetry/api` installed, all of it is the holder's
 * span `handoff.work <holder>`, a child of the record's `traceparent` (the creator's span), so the
 * successor continues the creator's trace; the record `durableHandoff` writes carries the trace
 * context of its `handoff.create` span.
 */
export declare function runClaimed<TAgent extends Agent<any, any>, TContext = undefined>(
  store: Store,
  agent: TAgent,
  claim: Claim | ClaimReference,
  options?: RunClaimedOptions<TContext>,
): Promise<RunResult<TContext, TAgent>>

/** The id a tool call's record gets: `oa-` and 32 hex digits of SHA-256 of `taskId + "\n" + callId`. */
export declare function recordId(taskId: string, callId: string): string

/** Conversation items in any shape `ContextBuilder.addMessages` reads, as chat messages, redacted, within 4,000 tokens (the newest kept). */
export declare function transcript(items: Array<object>): JsonValue[]

/** A run's final output as a handoff's outcome: text as it is, anything else as JSON, cut to `MAX_OUTCOME_BYTES`. */
export declare function outcomeText(output: unknown): string

/** The prefix of the ids of the records this adapter writes (`oa`). */
export declare const ID_PREFIX: 'oa'
/** The transcript's budget in tokens (4000). */
export declare const TRANSCRIPT_BUDGET_TOKENS: number
/** The longest outcome kept, in UTF-8 bytes (60,000); a longer one is cut and says so. */
export declare const MAX_OUTCOME_BYTES: number
