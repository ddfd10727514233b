// What the node:test files share.
import assert from 'node:assert/strict'

/**
 * The sync call's error and its Promise twin's rejection, which must be alike (code, message
 * and problems); returns the sync call's.
 */
export async function bothFail(sync, async) {
  let thrown
  try {
    sync()
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown, 'the sync call must throw')
  const rejected = await async().then(() => assert.fail('the Promise must reject'), (err) => err)
  assert.equal(rejected.code, thrown.code)
  assert.equal(rejected.message, thrown.message)
  assert.deepEqual(rejected.problems, thrown.problems)
  return thrown
}
