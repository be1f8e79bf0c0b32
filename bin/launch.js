// Shared start of bin/run.js and bin/dev.js. Plain JavaScript that any Node can parse, so that a
// Node older than package.json's `engines` gets one clear line rather than a syntax error or a
// stack trace. Loads dist/ when it is built, else the TypeScript sources (a fresh clone after
// `npm ci` runs without a build step on a Node that strips types).
import {spawn} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** True when `version` (e.g. `20.20.2`) is below a `>=X.Y[.Z]` range; other ranges are not judged. */
export function nodeTooOld(version, range) {
  const want = /^>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(String(range))
  if (!want) return false
  const have = String(version).replace(/^v/, '').split('.').map(Number)
  for (let i = 0; i < 3; i++) {
    const w = Number(want[i + 1] ?? 0)
    const h = have[i] ?? 0
    if (h !== w) return h < w
  }
  return false
}

function fail(line) {
  process.stderr.write(`toolgate: ${line}\n`)
  // 69: the environment cannot run us (docs/exit-codes.md).
  process.exit(69)
}

// Set on the re-executed process: it must not look for another Node again.
const REEXEC = 'TOOLGATE_NODE_REEXEC'

/**
 * A checkout's own Node (the `node` dev dependency, which `npm ci` installs): `#!/usr/bin/env node`
 * finds whatever Node is first on PATH, often the system's older one.
 */
function pinnedNode() {
  const node = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'node.exe' : 'node')
  return existsSync(node) ? node : undefined
}

/** Runs this same command line on `node`, passing signals on, and exits as it does. */
function reexec(node) {
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: {...process.env, [REEXEC]: '1'},
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
    process.on(signal, () => child.kill(signal))
  child.on('error', (err) => fail(`cannot start ${node}: ${err.message}`))
  child.on('exit', (code, signal) => {
    if (!signal) process.exit(code ?? 1)
    // Die of the same signal, as a shell expects (our forwarding handler must not catch it).
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  })
  return new Promise(() => undefined) // this process only waits for the child now
}

export async function launch({entryUrl, sources = false}) {
  const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const range = pjson.engines?.node
  const tooOld = nodeTooOld(process.versions.node, range)
  // From a checkout, an older Node hands over to the project's own (node_modules/.bin/node).
  if (tooOld && process.env[REEXEC] !== '1') {
    const node = pinnedNode()
    if (node) return reexec(node)
  }
  if (tooOld)
    fail(
      `needs Node.js ${range}, but this is Node.js ${process.versions.node} (${process.execPath}); ` +
        `install a newer Node, or run it with the pinned one: node_modules/.bin/node bin/run.js`,
    )
  const built = !sources && existsSync(join(root, 'dist', 'cli.js'))
  if (!built && !process.features?.typescript)
    fail(
      `dist/ is not built and Node.js ${process.versions.node} cannot run the TypeScript sources; ` +
        `run "npm run build" (or use node_modules/.bin/node)`,
    )
  if (!built) pjson.oclif.commands.target = './src/index.ts'
  const entry = built ? join(root, 'dist', 'cli.js') : join(root, 'src', 'cli.ts')
  const {main} = await import(pathToFileURL(entry).href)
  await main({root, pjson, dir: entryUrl, development: sources, fromSources: !built})
}
