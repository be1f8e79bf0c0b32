/**
 * `npm run build:binary`: the standalone linux-x64 executable build/toolgate.
 *
 * 1. esbuild bundles scripts/sea-entry.ts (oclif + the COMMANDS map + every library) into one
 *    CommonJS file — Node 24 single executables run a CommonJS main script. Native addons and wasm
 *    are embedded as SEA assets (scripts/sea/plugins.ts).
 * 2. `node --experimental-sea-config` (the pinned Node 24 from node_modules) turns the bundle and
 *    the assets into a preparation blob.
 * 3. postject injects the blob into a copy of that same Node binary, flipping the SEA fuse.
 *
 * Nothing is downloaded: the base binary is the `node@24` dev dependency.
 * Options: --out <file> (default build/toolgate), --skip-smoke.
 */
import {build} from 'esbuild'
import {execFileSync} from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {nativeAddonPlugin, wasmBindgenPlugin, wasmFilePlugin} from './sea/plugins.ts'

// From Node's documentation of single executable applications; postject searches for it.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({
  options: {out: {type: 'string'}, 'skip-smoke': {type: 'boolean', default: false}},
})
const out = resolve(values.out ?? join(root, 'build', 'toolgate'))
const work = join(dirname(out), 'sea')

function log(msg: string): void {
  process.stderr.write(`build-binary: ${msg}\n`)
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
  } catch {
    return 'unknown'
  }
}

if (process.platform !== 'linux' || process.arch !== 'x64') {
  throw new Error(
    `build:binary targets linux-x64; this machine is ${process.platform}-${process.arch}`,
  )
}

const started = Date.now()
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {version: string}
// The pinned toolchain Node (node@24 dev dependency) is both the SEA tool and the base binary.
const nodeBinary = realpathSync(join(root, 'node_modules', '.bin', 'node'))
const nodeVersion = execFileSync(nodeBinary, ['--version'], {encoding: 'utf8'}).trim()
if (!nodeVersion.startsWith('v24.'))
  throw new Error(`expected the pinned Node 24 at ${nodeBinary}, found ${nodeVersion}`)

rmSync(work, {recursive: true, force: true})
mkdirSync(work, {recursive: true})

// ---- 1. bundle ----
const assets = new Map<string, string>()
const bundle = join(work, 'toolgate.cjs')
const result = await build({
  entryPoints: [join(root, 'scripts', 'sea-entry.ts')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  logLevel: 'warning',
  legalComments: 'none',
  metafile: true,
  // oclif requires `typescript` (inside a try) only to transpile commands on the fly, which the
  // binary never does (sea-entry turns auto-transpile off); bundling it would add 9 MB.
  external: ['typescript'],
  // Build facts for src/lib/version.ts.
  define: {
    __TOOLGATE_VERSION__: JSON.stringify(pkg.version),
    __TOOLGATE_COMMIT__: JSON.stringify(gitCommit()),
    __TOOLGATE_BUILD_DATE__: JSON.stringify(new Date().toISOString()),
    // ESM sources use import.meta; in the CommonJS bundle it points at the executable itself.
    'import.meta.url': '__toolgate_import_meta_url',
    'import.meta.filename': '__toolgate_import_meta_filename',
    'import.meta.dirname': '__toolgate_import_meta_dirname',
  },
  banner: {
    js: [
      'var __toolgate_import_meta_filename = process.execPath;',
      'var __toolgate_import_meta_dirname = require("node:path").dirname(process.execPath);',
      'var __toolgate_import_meta_url = require("node:url").pathToFileURL(process.execPath).href;',
    ].join('\n'),
  },
  plugins: [nativeAddonPlugin(assets), wasmBindgenPlugin(assets), wasmFilePlugin(assets)],
})
const inputs = Object.keys(result.metafile.inputs).length
log(
  `bundled ${inputs} modules into ${relative(root, bundle)} (${(statSync(bundle).size / 1e6).toFixed(1)} MB), ${assets.size} asset(s): ${[...assets.keys()].join(', ') || 'none'}`,
)

// ---- 2. SEA preparation blob ----
const blob = join(work, 'sea-prep.blob')
const seaConfig = {
  main: bundle,
  output: blob,
  disableExperimentalSEAWarning: true,
  // V8 code cache of the bundle: faster startup; valid because the base binary is the same Node.
  useCodeCache: true,
  useSnapshot: false,
  assets: Object.fromEntries(assets),
}
writeFileSync(join(work, 'sea-config.json'), JSON.stringify(seaConfig, null, 2))
execFileSync(nodeBinary, ['--experimental-sea-config', join(work, 'sea-config.json')], {
  stdio: ['ignore', 'ignore', 'inherit'],
})

// ---- 3. inject into a copy of the Node binary ----
const tmpOut = `${out}.tmp`
rmSync(tmpOut, {force: true})
copyFileSync(nodeBinary, tmpOut)
chmodSync(tmpOut, 0o755)
const {inject} = createRequire(import.meta.url)('postject') as {
  inject(file: string, name: string, data: Buffer, opts: {sentinelFuse: string}): Promise<void>
}
// postject's ELF parser (LIEF) warns about every unnamed note section of Node's binary; harmless.
const warn = console.warn
console.warn = (...args: unknown[]) => {
  if (!String(args[0]).includes("Can't find string offset")) warn(...args)
}
try {
  await inject(tmpOut, 'NODE_SEA_BLOB', readFileSync(blob), {sentinelFuse: SEA_FUSE})
} finally {
  console.warn = warn
}

// ---- smoke test before replacing a previous good binary ----
if (!values['skip-smoke']) {
  const version = execFileSync(tmpOut, ['--version'], {
    encoding: 'utf8',
    env: {...process.env, NODE_OPTIONS: ''},
  }).trim()
  if (!version.includes(pkg.version)) throw new Error(`smoke test: --version printed "${version}"`)
  log(`smoke test: ${version}`)
}
rmSync(out, {force: true})
// rename is atomic: a test polling for the binary never sees a half-written file.
execFileSync('mv', ['-f', tmpOut, out])
log(
  `wrote ${relative(root, out) || out} (${(statSync(out).size / 1e6).toFixed(0)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
)
