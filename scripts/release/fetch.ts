/**
 * Gets a pinned npm package tarball with the ordinary npm client (`npm pack <name>@<version>`, which
 * goes through npm's own cache and registry settings) and checks it before anything is used:
 * the tarball's SHA-512 must equal the pinned `integrity` (from runtimes.json or package-lock.json),
 * and a file taken out of it must equal its pinned SHA-256 when one is given. Nothing is fetched
 * from anywhere but the npm registry, and a mismatch stops the build.
 *
 * Tarballs and extracted files are cached under build/cache/ by integrity, so a second build (or a
 * concurrent test) reuses them; every cache write is a private temp file renamed into place.
 */
import {execFileSync} from 'node:child_process'
import {createHash, randomBytes} from 'node:crypto'
import {existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync} from 'node:fs'
import {join} from 'node:path'

export interface PinnedPackage {
  name: string
  version: string
  /** npm's `dist.integrity`: `sha512-<base64>`. */
  integrity: string
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex')
}

export function integrityOf(bytes: Uint8Array): string {
  return `sha512-${createHash('sha512').update(bytes).digest('base64')}`
}

function cacheName(integrity: string): string {
  // base64 has '/' and '+': a file-name-safe spelling of the same digest.
  return integrity.replace(/^sha512-/, '').replace(/[/+=]/g, (c) => ({'/': '_', '+': '-'})[c] ?? '')
}

/** The verified tarball of `pkg` in `cacheDir`, fetched with `npm pack` when not cached yet. */
export function fetchPackage(pkg: PinnedPackage, cacheDir: string): string {
  if (!/^sha512-[A-Za-z0-9+/]+={0,2}$/.test(pkg.integrity))
    throw new Error(`${pkg.name}@${pkg.version}: pinned integrity "${pkg.integrity}" is not sha512`)
  mkdirSync(cacheDir, {recursive: true})
  const file = join(cacheDir, `${pkg.name.replace(/[@/]/g, '_')}-${cacheName(pkg.integrity)}.tgz`)
  if (existsSync(file) && integrityOf(readFileSync(file)) === pkg.integrity) return file
  const tmp = mkdtempSync(join(cacheDir, '.pack-'))
  try {
    const out = execFileSync(
      'npm',
      ['pack', `${pkg.name}@${pkg.version}`, '--pack-destination', tmp, '--json', '--silent'],
      {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000},
    )
    const [info] = JSON.parse(out) as [{filename: string}]
    const got = join(tmp, info.filename)
    const actual = integrityOf(readFileSync(got))
    if (actual !== pkg.integrity)
      throw new Error(
        `${pkg.name}@${pkg.version}: tarball integrity ${actual} does not match the pinned ${pkg.integrity}; refusing to use it`,
      )
    renameSync(got, file)
    return file
  } finally {
    rmSync(tmp, {recursive: true, force: true})
  }
}

/**
 * One file out of a verified package tarball (`member` relative to the package root), cached next
 * to it. With `sha256`, the extracted bytes must match it.
 */
export function extractVerified(
  pkg: PinnedPackage,
  member: string,
  cacheDir: string,
  sha256?: string,
): string {
  const tarball = fetchPackage(pkg, cacheDir)
  const dir = join(cacheDir, `${pkg.name.replace(/[@/]/g, '_')}-${pkg.version}-files`)
  const file = join(dir, member)
  const check = (path: string) => !sha256 || sha256File(path) === sha256
  if (existsSync(file) && check(file)) return file
  const tmp = join(cacheDir, `.x-${process.pid}-${randomBytes(4).toString('hex')}`)
  mkdirSync(tmp, {recursive: true})
  try {
    execFileSync('tar', ['-xzf', tarball, '-C', tmp, `package/${member}`], {stdio: 'pipe'})
    const got = join(tmp, 'package', member)
    const actual = sha256File(got)
    if (sha256 && actual !== sha256)
      throw new Error(
        `${pkg.name}@${pkg.version}: ${member} has SHA-256 ${actual}, not the pinned ${sha256}; refusing to use it`,
      )
    mkdirSync(join(file, '..'), {recursive: true})
    renameSync(got, file)
    return file
  } finally {
    rmSync(tmp, {recursive: true, force: true})
  }
}

/** The whole verified package unpacked into a fresh directory (for addon packages). */
export function unpackVerified(pkg: PinnedPackage, cacheDir: string): string {
  const tarball = fetchPackage(pkg, cacheDir)
  const dir = join(cacheDir, `${pkg.name.replace(/[@/]/g, '_')}-${cacheName(pkg.integrity)}`)
  if (existsSync(join(dir, 'package.json'))) return dir
  const tmp = join(cacheDir, `.u-${process.pid}-${randomBytes(4).toString('hex')}`)
  mkdirSync(tmp, {recursive: true})
  try {
    execFileSync('tar', ['-xzf', tarball, '-C', tmp], {stdio: 'pipe'})
    try {
      renameSync(join(tmp, 'package'), dir)
    } catch (err) {
      // A concurrent build unpacked the same verified tarball first.
      if (!existsSync(join(dir, 'package.json'))) throw err
    }
    return dir
  } finally {
    rmSync(tmp, {recursive: true, force: true})
  }
}
