import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {join} from 'node:path'
import {test} from 'node:test'
import {promisify} from 'node:util'

const ROOT = join(import.meta.dirname, '..', '..', '..')
const MODULE = join(ROOT, 'src', 'lib', 'runtime', 'young-generation.ts')

/**
 * A fresh process allocates 400,000 small objects while keeping the newest 5,000 alive (so
 * many survive each scavenge, which is what makes V8 grow the young generation), and reports the
 * largest young-generation size it saw, in MB.
 */
async function largestYoungGeneration(tuned: boolean): Promise<number> {
  const script = `
    import v8 from 'node:v8'
    import {keepYoungGenerationSmall} from ${JSON.stringify(MODULE)}
    if (${tuned}) keepYoungGenerationSmall()
    const size = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size
    let largest = size()
    const alive = new Array(5_000)
    for (let i = 0; i < 400_000; i++) {
      alive[i % 5_000] = {i, s: 'x' + i}
      if (i % 1000 === 0) largest = Math.max(largest, size())
    }
    process.stdout.write(String(largest / 1048576))
  `
  const {stdout} = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', script],
    {cwd: ROOT},
  )
  return Number(stdout)
}

test('keepYoungGenerationSmall stops the young generation from growing under surviving garbage', async () => {
  const [untuned, tuned] = await Promise.all([
    largestYoungGeneration(false),
    largestYoungGeneration(true),
  ])
  // The control shows the workload does make V8 grow it (64 MB of semi-spaces by default).
  assert.ok(untuned >= 16, `without the call the young generation reached only ${untuned} MB`)
  assert.ok(tuned <= 4, `with the call the young generation reached ${tuned} MB`)
})
