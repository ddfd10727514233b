// The committed .d.ts type-checks real usage under `tsc --strict`, and refuses wrong usage.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

test('index.d.ts type-checks usage.ts under tsc --strict', () => {
  let output = ''
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
      '--moduleResolution', 'nodenext', '--skipLibCheck', 'false', 'test/fixtures/usage.ts'],
    { cwd: root, encoding: 'utf8' })
  } catch (err) {
    output = `${err.stdout ?? ''}${err.stderr ?? ''}`
  }
  assert.equal(output, '', output)
})
