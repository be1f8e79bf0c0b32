/**
 * Start-up of the standalone executable (issue 14), against the same runtime's `node -e 0` measured
 * in the same run: `toolgate --version`, `toolgate --help`, and `toolgate serve` until its first
 * answered registry request. Each is a fresh process (a cold V8 and module load; the OS page cache is
 * warm, as on a user's second run). Cells alternate round by round so machine load hits all alike.
 * Target: `--version` median ≤ 1.5 × `node -e 0`.
 *
 * The executable is built here (linux-x64, `build:binaries --target linux-x64`); the baseline is
 * the pinned Node 26 runtime it embeds, stripped the same way (scripts/release/build.ts).
 *
 * Run: node_modules/.bin/node bench/binary-start.bench.ts [--rounds 20]
 */
import {execFileSync, spawn, spawnSync} from 'node:child_process'
import {copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'
import {hostNode} from '../scripts/release/build.ts'
import {ROOT} from '../scripts/release/targets.ts'
import {SERVE_EXAMPLE_ARGS} from '../test/binary/binary-helpers.ts'

const {values} = parseArgs({options: {rounds: {type: 'string', default: '20'}}})
const rounds = Math.min(Math.max(Number(values.rounds), 3), 100)
const work = mkdtempSync(join(tmpdir(), 'tg-bench-start-'))
process.on('exit', () => rmSync(work, {recursive: true, force: true}))

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string})
  .version
execFileSync(
  join(ROOT, 'node_modules', '.bin', 'node'),
  [
    join(ROOT, 'scripts', 'build-binaries.ts'),
    '--target',
    'linux-x64',
    '--no-archives',
    '--out',
    join(work, 'rel'),
  ],
  {stdio: ['ignore', 'ignore', 'inherit']},
)
const bin = join(work, 'rel', `toolgate-${version}-linux-x64`)
const node = join(work, 'node')
copyFileSync(hostNode(), node)
execFileSync('llvm-strip', ['--strip-all', node])
const app = join(work, 'app')
mkdirSync(join(app, 'examples'), {recursive: true})
for (const f of ['anonymous.yaml', 'registry.json'])
  copyFileSync(join(ROOT, 'examples', f), join(app, 'examples', f))
const env = {
  PATH: '/usr/bin:/bin',
  HOME: join(work, 'home'),
  XDG_DATA_HOME: join(work, 'home', 'data'),
}

function timeRun(cmd: string, args: string[]): number {
  const t0 = process.hrtime.bigint()
  const r = spawnSync(cmd, args, {cwd: app, env, stdio: ['ignore', 'ignore', 'pipe']})
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return ms
}

/** Spawn to the first 200 from the registry list (polling 5 ms apart), then SIGKILL. */
async function timeServe(): Promise<number> {
  const t0 = process.hrtime.bigint()
  const child = spawn(bin, SERVE_EXAMPLE_ARGS, {cwd: app, env, stdio: ['ignore', 'pipe', 'ignore']})
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => reject(new Error('serve printed no URL in 30 s')), 30_000)
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d
        const m = /"url":"([^"]+)"/.exec(out)
        if (m) {
          clearTimeout(timer)
          resolve(m[1]!)
        }
      })
    })
    for (let i = 0; i < 6000; i++) {
      try {
        const r = await fetch(`${url}/registry/default/v0.1/servers?limit=1`)
        await r.arrayBuffer()
        if (r.status === 200) return Number(process.hrtime.bigint() - t0) / 1e6
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    throw new Error('serve did not answer in 30 s')
  } finally {
    child.kill('SIGKILL')
  }
}

const cells: Record<string, number[]> = {
  'node -e 0 (baseline)': [],
  'toolgate --version': [],
  'toolgate --help': [],
  'toolgate serve → first answer': [],
}
// Warm-up: the page cache and the native-addon cache directory, not measured.
timeRun(node, ['-e', '0'])
timeRun(bin, ['--version'])
timeRun(bin, ['--help'])
await timeServe()
for (let r = 0; r < rounds; r++) {
  cells['node -e 0 (baseline)']!.push(timeRun(node, ['-e', '0']))
  cells['toolgate --version']!.push(timeRun(bin, ['--version']))
  cells['toolgate --help']!.push(timeRun(bin, ['--help']))
  if (r % 2 === 0) cells['toolgate serve → first answer']!.push(await timeServe())
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}
const base = pct(cells['node -e 0 (baseline)']!, 50)
const rows = Object.entries(cells).map(([name, xs]) => [
  name,
  String(xs.length),
  pct(xs, 50).toFixed(1),
  pct(xs, 90).toFixed(1),
  `${(pct(xs, 50) / base).toFixed(2)}×`,
])
const header = ['cell', 'runs', 'median ms', 'p90 ms', 'vs node -e 0']
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
for (const row of [header, ...rows])
  process.stdout.write(row.map((c, i) => c.padEnd(widths[i]!)).join('  ') + '\n')
const ratio = pct(cells['toolgate --version']!, 50) / base
process.stdout.write(
  `target --version ≤ 1.5× node -e 0: ${ratio <= 1.5 ? 'met' : 'MISSED'} (${ratio.toFixed(2)}×)\n`,
)
