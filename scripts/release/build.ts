/**
 * Builds one single executable for one target, on any machine that is itself one of the targets:
 *
 * 1. the pinned Node runtime of the target (runtimes.json) and its native addon packages
 *    (package-lock.json) come from the npm registry and are verified (fetch.ts);
 * 2. the target's runtime loses its stale Authenticode / Mach-O signature (exe-format.ts);
 * 3. esbuild bundles the CLI with that target's addons and the Cedar wasm (bundle.ts);
 * 4. the host's copy of the same pinned Node runs `--build-sea` with the target runtime as its
 *    `executable`, writing the blob and flipping the SEA fuse. V8's code cache is only valid for
 *    the V8 that made it, so it is used when the target is the host; other targets start without it.
 */
import {execFileSync} from 'node:child_process'
import {chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {bundle, type BuildFacts, type Bundle} from './bundle.ts'
import {
  readMachO,
  readPe,
  peResourceNames,
  removeMachOSignature,
  removePeSignature,
} from './exe-format.ts'
import {extractVerified, unpackVerified} from './fetch.ts'
import {addonPackages, ROOT, runtimeFor, TARGETS, type Target, type TargetId} from './targets.ts'

// From Node's documentation of single executable applications: `:0` before, `:1` after injection.
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'
export const CACHE = join(ROOT, 'build', 'cache')

export function hostTarget(): Target | undefined {
  const os = process.platform === 'win32' ? 'win' : process.platform
  return TARGETS[`${os}-${process.arch}` as TargetId]
}

/** The host's verified copy of the pinned Node: it builds every target's blob. */
export function hostNode(): string {
  const host = hostTarget()
  if (!host)
    throw new Error(
      `no pinned Node runtime for this machine (${process.platform}-${process.arch}); build on one of the five targets`,
    )
  const rt = runtimeFor(host.id)
  const node = extractVerified(rt, rt.binary, CACHE, rt.binarySha256)
  chmodSync(node, 0o755)
  return node
}

/** The target's verified runtime binary. */
export function targetRuntime(id: TargetId): string {
  const rt = runtimeFor(id)
  return extractVerified(rt, rt.binary, CACHE, rt.binarySha256)
}

export interface Built {
  target: Target
  file: string
  bundle: Bundle
  codeCache: boolean
}

/** Throws unless `file` is a single executable of `target`: right format and arch, blob, fuse. */
export function checkStructure(file: string, target: Target): void {
  const buf = readFileSync(file)
  if (!buf.includes(`${SEA_FUSE}:1`)) throw new Error(`${file}: the SEA fuse is not flipped`)
  if (target.os === 'win') {
    const pe = readPe(buf)
    if (!pe.pe32plus || pe.machine !== 'x64')
      throw new Error(`${file}: not a PE32+ x86-64 executable`)
    if (pe.security.size !== 0) throw new Error(`${file}: carries a stale Authenticode signature`)
    if (!peResourceNames(buf).includes('10/NODE_SEA_BLOB'))
      throw new Error(`${file}: no NODE_SEA_BLOB resource`)
  } else if (target.os === 'darwin') {
    const m = readMachO(buf)
    if (m.arch !== target.arch) throw new Error(`${file}: Mach-O for ${m.arch}, not ${target.arch}`)
    const seg = m.segments.find((s) => s.name === 'NODE_SEA')
    if (!seg?.sections.includes('__NODE_SEA_BLOB'))
      throw new Error(`${file}: no NODE_SEA blob segment`)
    if (m.signed) throw new Error(`${file}: carries a stale code signature`)
  } else {
    const machine = buf.readUInt16LE(18)
    const want = target.arch === 'x64' ? 0x3e : 0xb7
    if (buf.readUInt32BE(0) !== 0x7f454c46 || machine !== want)
      throw new Error(`${file}: not an ELF executable for ${target.arch}`)
    if (!buf.includes('NODE_SEA_BLOB')) throw new Error(`${file}: no NODE_SEA_BLOB note`)
  }
}

export async function buildTarget(
  id: TargetId,
  out: string,
  facts: BuildFacts,
  log: (msg: string) => void = () => {},
): Promise<Built> {
  const target = TARGETS[id]
  const work = `${out}.work`
  rmSync(work, {recursive: true, force: true})
  mkdirSync(work, {recursive: true})
  try {
    const generator = hostNode()
    const codeCache = hostTarget()?.id === id

    // The base binary, without the signature the injection would leave stale.
    let base: Buffer = readFileSync(targetRuntime(id))
    if (target.os === 'win') base = removePeSignature(base)
    if (target.os === 'darwin') base = removeMachOSignature(base)
    const baseFile = join(work, `node${target.exe}`)
    writeFileSync(baseFile, base, {mode: 0o755})
    // Node's Linux binaries carry 33 MB of symbols and debug info. Native addons link against the
    // dynamic symbol table, which --strip-all keeps; llvm-strip handles both architectures.
    if (target.os === 'linux')
      execFileSync('llvm-strip', ['--strip-all', baseFile], {stdio: 'pipe'})

    const addonDirs = new Map(
      addonPackages(target).map((p) => [p.name, unpackVerified(p, CACHE)] as const),
    )
    const b = await bundle(join(work, 'toolgate.cjs'), facts, addonDirs)
    log(
      `${id}: bundle ${(readFileSync(b.file).length / 1e6).toFixed(1)} MB, assets ${[...b.assets.keys()].join(', ')}`,
    )

    const tmpOut = join(work, `toolgate${target.exe}`)
    // Paths relative to the work directory (the cwd of --build-sea): the blob records the main
    // script's path, which must not depend on where the build ran.
    const config = {
      main: basename(b.file),
      output: basename(tmpOut),
      executable: basename(baseFile),
      disableExperimentalSEAWarning: true,
      useCodeCache: codeCache,
      useSnapshot: false,
      assets: Object.fromEntries([...b.assets].sort(([a], [c]) => (a < c ? -1 : 1))),
    }
    writeFileSync(join(work, 'sea-config.json'), JSON.stringify(config, null, 2))
    // V8's code cache embeds values drawn from its random seed; a fixed seed in the generator makes
    // two builds byte-identical. The flag is not part of the flag hash V8 checks, so the executable
    // (which runs with its own random seed) still accepts the cache.
    execFileSync(generator, ['--random-seed=1', '--build-sea', join(work, 'sea-config.json')], {
      cwd: work,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {...process.env, NODE_OPTIONS: ''},
    })
    checkStructure(tmpOut, target)
    chmodSync(tmpOut, 0o755)
    if (codeCache) smoke(tmpOut, facts.version)
    rmSync(out, {force: true})
    // rename is atomic: a test polling for the binary never sees a half-written file.
    renameSync(tmpOut, out)
    return {target, file: out, bundle: b, codeCache}
  } finally {
    rmSync(work, {recursive: true, force: true})
  }
}

/** The binary runs here: `--version` must name the version before it replaces anything. */
function smoke(file: string, version: string): void {
  const printed = execFileSync(file, ['--version'], {
    encoding: 'utf8',
    env: {PATH: process.env.PATH, HOME: process.env.HOME, NODE_OPTIONS: ''},
    timeout: 60_000,
  }).trim()
  if (!printed.includes(version)) throw new Error(`smoke test: --version printed "${printed}"`)
}
