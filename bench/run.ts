/**
 * `npm run bench`: runs every bench/*.bench.ts in turn, each as its own child process on the pinned
 * Node (so one benchmark's heap and sockets never colour the next), and prints their tables.
 * Optional arguments filter by name: `npm run bench -- serve`.
 * Exit code: non-zero when a benchmark crashed (a missed target is reported in its table, not here).
 */
import {spawn} from 'node:child_process'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

const here = fileURLToPath(new URL('.', import.meta.url))
const node = join(here, '..', 'node_modules', '.bin', 'node')
const filters = process.argv.slice(2)
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()

// Generous bound per benchmark; each bounds its own cells, this only stops a hung one.
const LIMIT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 15 * 60_000)

function runOne(file: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(node, [join(here, file)], {stdio: ['ignore', 'inherit', 'inherit']})
    const timer = setTimeout(() => {
      process.stderr.write(`bench: ${file} exceeded ${LIMIT_MS} ms, stopping it\n`)
      child.kill('SIGTERM')
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref()
    }, LIMIT_MS)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve(code)
    })
  })
}

const failed: string[] = []
for (const file of files) {
  process.stdout.write(`\n=== ${file} ===\n`)
  const started = Date.now()
  const code = await runOne(file)
  process.stdout.write(
    `=== ${file}: exit ${code} in ${((Date.now() - started) / 1000).toFixed(0)} s ===\n`,
  )
  if (code !== 0) failed.push(file)
}
if (files.length === 0) process.stdout.write('no bench/*.bench.ts matched\n')
if (failed.length > 0) {
  process.stderr.write(`bench: failed: ${failed.join(', ')}\n`)
  process.exitCode = 1
}
