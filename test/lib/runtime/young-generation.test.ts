import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {join} from 'node:path'
import {test} from 'node:test'
import {promisify} from 'node:util'

const ROOT = join(import.meta.dirname, '..', '..', '..')
const MODULE = join(ROOT, 'src', 'lib', 'runtime', 'young-generation.ts')

/**
 * A fresh process allocates 1,500,000 small objects while keeping the newest 20,000 alive (so
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
    const alive = new Array(20_000)
    for (let i = 0; i < 1_500_000; i++) {
      alive[i % 20_000] = {i, s: 'x' + i}
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
  // The control shows the workload does make V8 grow it (32 MB here, 64 MB at most). Tuned, V8
  // still sizes it somewhat by allocation rate: 2-7 MB in 100 runs on a loaded 2-core machine,
  // once 10.75 MB (a fixed 4 MB bound failed in CI at 5 MB). What is asserted is the effect: at
  // most half of what the same workload reaches without the call.
  assert.ok(untuned >= 24, `without the call the young generation reached only ${untuned} MB`)
  assert.ok(
    tuned <= untuned / 2,
    `with the call the young generation reached ${tuned} MB (without: ${untuned} MB)`,
  )
})
