/**
 * The release directory (dist-bin/): for each target the bare executable
 * `toolgate-<version>-<os>-<arch>[.exe]` and an archive of it (`.tar.gz`, `.zip` for Windows) with
 * the executable named `toolgate[.exe]`, a CycloneDX SBOM, and `SHA256SUMS` over all of them.
 */
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import {join} from 'node:path'
import {tarGz, zip} from './archive.ts'
import {buildTarget, type Built} from './build.ts'
import type {BuildFacts} from './bundle.ts'
import {sbom} from './sbom.ts'
import {releaseName, ROOT, TARGET_IDS, TARGETS, type Target, type TargetId} from './targets.ts'

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
  } catch {
    return undefined
  }
}

/**
 * Version, commit and build date. The date is SOURCE_DATE_EPOCH when set (the reproducible-builds
 * convention), else the commit's date: two builds of one commit embed the same facts.
 */
export function buildFacts(): BuildFacts {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string}
  const epoch = process.env.SOURCE_DATE_EPOCH ?? git(['log', '-1', '--format=%ct'])
  if (epoch !== undefined && !/^\d+$/.test(epoch))
    throw new Error(`SOURCE_DATE_EPOCH must be whole seconds since 1970, not "${epoch}"`)
  const seconds = epoch === undefined ? Math.floor(Date.now() / 1000) : Number(epoch)
  return {
    version: pkg.version,
    commit: git(['rev-parse', '--short=12', 'HEAD']) ?? 'unknown',
    buildDate: new Date(seconds * 1000).toISOString().replace('.000Z', 'Z'),
  }
}

export function archiveName(version: string, id: TargetId): string {
  const t = TARGETS[id]
  return `${releaseName(version, t)}.${t.archive}`
}

/** Writes the archive of one target's executable `file`; returns the archive's path. */
export function writeArchive(t: Target, file: string, outDir: string, facts: BuildFacts): string {
  const mtime = Math.floor(Date.parse(facts.buildDate) / 1000)
  const entries = [{name: `toolgate${t.exe}`, data: readFileSync(file), executable: true}]
  const license = join(ROOT, 'LICENSE')
  try {
    entries.push({name: 'LICENSE', data: readFileSync(license), executable: false})
  } catch {
    // No LICENSE file in the checkout: package.json's license field is in the SBOM.
  }
  const archive = join(outDir, archiveName(facts.version, t.id))
  writeFileSync(archive, t.archive === 'zip' ? zip(entries, mtime) : tarGz(entries, mtime))
  return archive
}

/**
 * After executables were changed in place (signed on macOS or Windows runners): their archives
 * are written again from them and SHA256SUMS again over everything. Returns the targets redone.
 */
export function rearchive(outDir: string): TargetId[] {
  const facts = buildFacts()
  const done: TargetId[] = []
  for (const id of TARGET_IDS) {
    const t = TARGETS[id]
    const file = join(outDir, `${releaseName(facts.version, t)}${t.exe}`)
    if (!existsSync(file)) continue
    writeArchive(t, file, outDir, facts)
    done.push(id)
  }
  writeChecksums(outDir)
  return done
}

export function writeChecksums(outDir: string): string {
  const names = readdirSync(outDir)
    .filter((n) => n !== 'SHA256SUMS' && !n.startsWith('.') && statSync(join(outDir, n)).isFile())
    .sort()
  const lines = names.map(
    (n) =>
      `${createHash('sha256')
        .update(readFileSync(join(outDir, n)))
        .digest('hex')}  ${n}\n`,
  )
  const file = join(outDir, 'SHA256SUMS')
  writeFileSync(file, lines.join(''))
  return file
}

export interface ReleaseOptions {
  targets: TargetId[]
  outDir: string
  archives: boolean
  log: (msg: string) => void
}

export async function buildRelease(opts: ReleaseOptions): Promise<Built[]> {
  const facts = buildFacts()
  rmSync(opts.outDir, {recursive: true, force: true})
  mkdirSync(opts.outDir, {recursive: true})
  const built: Built[] = []
  for (const id of opts.targets) {
    const started = Date.now()
    const t = TARGETS[id]
    const file = join(opts.outDir, `${releaseName(facts.version, t)}${t.exe}`)
    const b = await buildTarget(id, file, facts, opts.log)
    built.push(b)
    const size = statSync(file).size
    let line = `${id}: ${releaseName(facts.version, t)}${t.exe} ${(size / 1e6).toFixed(1)} MB`
    if (opts.archives) {
      const archive = writeArchive(t, file, opts.outDir, facts)
      line += `, ${archiveName(facts.version, id)} ${(statSync(archive).size / 1e6).toFixed(1)} MB`
    }
    opts.log(
      `${line}${b.codeCache ? ' (code cache)' : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    )
  }
  if (opts.archives) {
    writeFileSync(
      join(opts.outDir, `toolgate-${facts.version}.cdx.json`),
      JSON.stringify(sbom(built, facts), null, 2) + '\n',
    )
    writeChecksums(opts.outDir)
  }
  return built
}
