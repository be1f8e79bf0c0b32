/**
 * Runtime helpers compiled into the standalone executable (never imported from src/). The build's
 * esbuild plugins rewrite `.node` addons and wasm-bindgen packages to call these, so library code
 * imports its packages normally and works the same from source and from the binary.
 *
 * Outside a single executable (e.g. running the bundle with plain node while debugging) both fall
 * back to the original file on disk, whose path the build recorded relative to the repository
 * (so the bundle is the same wherever it is built): run such a bundle from the repository root.
 */
import {createHash, randomBytes} from 'node:crypto'
import {existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import {basename, join, resolve} from 'node:path'
import * as sea from 'node:sea'

function inSea(): boolean {
  try {
    return sea.isSea()
  } catch {
    return false
  }
}

/** Bytes of an embedded asset (SEA) or of the original file (plain bundle). */
export function getAssetBytes(key: string, originalPath: string): Uint8Array {
  if (inSea()) return new Uint8Array(sea.getRawAsset(key))
  return readFileSync(resolve(originalPath))
}

function cacheRoot(): string {
  const xdg = process.env.XDG_CACHE_HOME
  return xdg && xdg.startsWith('/') ? xdg : join(homedir(), '.cache')
}

/**
 * Writes the addon to a per-user cache directory (0700) under a content-hash name, so a second run
 * reuses it and two versions never collide, then loads it with `process.dlopen` — the same call
 * `require('x.node')` makes. A file whose content does not match its hash is replaced, never loaded.
 */
function materialise(key: string, bytes: Uint8Array): string {
  const digest = createHash('sha256').update(bytes).digest('hex')
  const name = `${digest.slice(0, 16)}-${basename(key)}`
  let dir: string
  try {
    dir = join(cacheRoot(), 'toolgate', 'native')
    mkdirSync(dir, {recursive: true, mode: 0o700})
  } catch {
    // No writable home (read-only container): a private directory under the system temp dir.
    dir = mkdtempSync(join(tmpdir(), 'toolgate-native-'))
  }
  const file = join(dir, name)
  if (existsSync(file)) {
    const current = createHash('sha256').update(readFileSync(file)).digest('hex')
    if (current === digest) return file
  }
  // Atomic: write a private temp file then rename, so a concurrent start never loads half a file.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileSync(tmp, bytes, {mode: 0o700})
  renameSync(tmp, file)
  return file
}

/** `module.exports` of a native addon, embedded as a SEA asset or loaded from its original path. */
export function loadNativeAddon(key: string, originalPath: string): unknown {
  const file = inSea()
    ? materialise(key, new Uint8Array(sea.getRawAsset(key)))
    : resolve(originalPath)
  const mod = {exports: {} as unknown}
  process.dlopen(mod, file)
  return mod.exports
}
