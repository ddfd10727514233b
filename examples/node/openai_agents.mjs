// A support ticket handed from a triage agent to billing with @openai/agents, durably: the
// triage run records the handoff in ./handoff.db and ends; a billing worker (another process in
// real life, a function here) claims it and runs billing on the redacted context packet. The
// models are scripted, so it runs with no network and no API key.
//
//   node examples/node/openai_agents.mjs [--db PATH]
//
// @openai/agents must resolve from here: `make test` links handoff-node's copy into
// examples/node/node_modules. The lines marked as glue below are all a user writes to make the
// handoff durable (8 lines).
import { Agent, run, setTracingDisabled, Usage } from '@openai/agents'
// glue:start
import { open } from 'handoff-core'
import { durableHandoff, runClaimed } from 'handoff-core/openai-agents'
// glue:end

setTracingDisabled(true) // the SDK's own traces would go to OpenAI's servers

const dbFlag = process.argv.indexOf('--db')
const path = dbFlag >= 0 ? process.argv[dbFlag + 1] : './handoff.db'
const ticket = `ticket-${Date.now()}`
const question = 'I was charged twice for order 1042. My API key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789, if you need it.'

// Stands in for a real model (`model: 'gpt-5'`): answers each request from a script and keeps
// what it was sent, so that we can show what billing saw.
class ScriptedModel {
  constructor(...steps) { this.steps = steps; this.inputs = [] }
  async getResponse(request) {
    this.inputs.push(request.input)
    const step = this.steps.shift()
    if (step === undefined) throw new Error('the script ran out')
    return { usage: new Usage(), output: [step] }
  }
  async * getStreamedResponse() { throw new Error('not streamed in this example') }
}
const transferCall = {
  type: 'function_call', callId: 'call_1', name: 'transfer_to_billing', status: 'completed',
  arguments: JSON.stringify({ reason: 'a billing question', summary: 'Customer was charged twice for order 1042', pending: ['refund the second charge'], instructions: 'Check the ledger before refunding.' }),
}
const answer = { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Refunded the second charge of order 1042.' }] }
const billingModel = new ScriptedModel(answer)
const billing = new Agent({ name: 'billing', instructions: 'You resolve billing problems.', model: billingModel })

// Process 1: the front desk. Triage hands over to billing; billing does not run here.
async function frontDesk() {
  // glue:start
  const store = open(path)
  // glue:end
  const triage = new Agent({
    name: 'triage',
    instructions: 'Route the customer to the right team.',
    model: new ScriptedModel(transferCall),
    // glue:start
    handoffs: [durableHandoff(store, billing, { fromAgent: 'triage', taskId: ticket })],
    // glue:end
  })
  const result = await run(triage, question)
  console.log(`triage: ${result.finalOutput}`)
  return store.list({ taskId: ticket })
}

// Process 2: a billing worker, on any machine that opens the same store.
async function billingWorker() {
  // glue:start
  const store = open(path)
  const claim = await store.claimNextAsync('billing', { taskId: ticket, waitSeconds: 5 })
  if (claim === null) throw new Error('the billing worker found nothing to claim')
  const result = await runClaimed(store, billing, claim)
  // glue:end
  console.log(`billing (token ${claim.token}): ${result.finalOutput}`)
  return store.get(claim.handoffId)
}

const check = (ok, what) => { if (!ok) throw new Error(`unexpected: ${what}`) }

const recorded = await frontDesk()
check(recorded.length === 1 && recorded[0].status === 'pending' && recorded[0].toAgent === 'billing', 'one pending handoff to billing')
check(billingModel.inputs.length === 0, 'billing ran in the front desk process')
console.log(`recorded ${recorded[0].id}: "${recorded[0].goal}", ${recorded[0].metadata.transcript.length} message(s) of transcript`)

const done = await billingWorker()
check(done.status === 'completed' && done.outcome === 'Refunded the second charge of order 1042.', 'the handoff completed with billing\'s answer')
const seen = JSON.stringify(billingModel.inputs[0])
check(seen.includes('Check the ledger') && seen.includes('charged twice'), 'billing saw the goal, instructions and transcript')
check(!seen.includes('sk-proj-') && seen.includes('[REDACTED:openai-api-key]'), 'the API key was redacted')
console.log(`billing saw ${billingModel.inputs[0].length} input items, the API key redacted`)
console.log(`${done.id}: ${done.status} — "${done.outcome}"`)
