// Reasons as callers send them: the wire form, or MASC's bare `context_limit` + `contextPct`
// and `timeout` + `timeoutSeconds`, read by the core's `Reason::from_input` (same errors as
// Python and the CLI).
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { Store, open } from '../index.mjs'

const stores = () => [Store.memory(), open(':memory:')]

/** Expects VALIDATION naming `field` from the sync and the async call. */
async function refused(sync, async, field) {
  for (const call of [sync, () => async().then(() => assert.fail('resolved'))]) {
    try {
      await call()
      assert.fail('did not throw')
    } catch (e) {
      assert.equal(e.code, 'VALIDATION', e.message)
      assert.deepEqual(e.problems.map((p) => p.field), [field], e.message)
    }
  }
}

test('the seed payload: reason context_limit with contextPct 85', async () => {
  for (const s of stores()) {
    const h = s.create({ taskId: 'masc', goal: 'carry on', fromAgent: 'claude', reason: 'context_limit', contextPct: 85 })
    assert.equal(h.reason, 'context_limit_85')
    assert.equal(h.contextUsagePercent, 85)
    const a = await s.createAsync({ taskId: 'masc', goal: 'carry on', reason: 'timeout', timeoutSeconds: 300 })
    assert.equal(a.reason, 'timeout_300s')
    // The wire forms still work, and a number given twice may agree.
    assert.equal(s.create({ taskId: 'masc', goal: 'g', reason: 'context_limit_70', contextPct: 70 }).reason, 'context_limit_70')
    assert.equal(s.create({ taskId: 'masc', goal: 'g', reason: 'timeout_30s', timeoutSeconds: 30 }).reason, 'timeout_30s')
    assert.equal(s.create({ taskId: 'masc', goal: 'g', contextPct: 40 }).reason, 'explicit')
  }
})

test('checkpoint takes the bare forms too', () => {
  for (const s of stores()) {
    const c = s.checkpoint('masc', 'claude', { goal: 'half way', reason: 'context_limit', contextPct: 90 })
    assert.equal(c.reason, 'context_limit_90')
    assert.equal(s.checkpoint('masc', 'claude', { goal: 'g', reason: 'timeout', timeoutSeconds: 5 }).reason, 'timeout_5s')
  }
})

test('a bare reason without its number, or numbers that disagree, are refused by name', async () => {
  const s = Store.memory()
  const cases = [
    [{ reason: 'context_limit' }, 'reason'],
    [{ reason: 'timeout' }, 'reason'],
    [{ reason: 'context_limit_85', contextPct: 90 }, 'contextPct'],
    [{ reason: 'timeout_300s', timeoutSeconds: 30 }, 'timeoutSeconds'],
    [{ reason: 'context_limit', contextPct: 101 }, 'contextPct'],
    [{ reason: 'bored' }, 'reason'],
    [{ reason: 'timeout', timeoutSeconds: -1 }, 'timeoutSeconds'],
  ]
  for (const [fields, field] of cases) {
    const options = { taskId: 't', goal: 'g', ...fields }
    await refused(() => s.create(options), () => s.createAsync(options), field)
  }
  const err = (() => { try { s.create({ taskId: 't', goal: 'g', reason: 'context_limit' }) } catch (e) { return e } })()
  assert.match(err.problems[0].rule, /context_pct/)
  await refused(
    () => s.checkpoint('t', 'a', { goal: 'g', reason: 'timeout' }),
    () => s.checkpointAsync('t', 'a', { goal: 'g', reason: 'timeout' }),
    'reason',
  )
  assert.equal(s.list().length, 0)
})
