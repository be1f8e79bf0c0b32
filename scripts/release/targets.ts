/**
 * The five release targets and what each one embeds: its pinned Node runtime (runtimes.json) and,
 * for every native addon the program loads, that platform's prebuilt package at the exact version
 * and integrity package-lock.json records (npm locks every optional platform package).
 */
import {readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import type {PinnedPackage} from './fetch.ts'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

export type TargetId = 'linux-x64' | 'linux-arm64' | 'win-x64' | 'darwin-arm64' | 'darwin-x64'
export const TARGET_IDS: TargetId[] = [
  'linux-x64',
  'linux-arm64',
  'win-x64',
  'darwin-arm64',
  'darwin-x64',
]

export interface Target {
  id: TargetId
  /** `linux`, `darwin`, `win` (release file names) and Node's `process.platform`. */
  os: 'linux' | 'darwin' | 'win'
  platform: NodeJS.Platform
  arch: 'x64' | 'arm64'
  exe: '' | '.exe'
  archive: 'tar.gz' | 'zip'
  /** napi-rs platform suffix of addon packages (`linux-x64-gnu`, `win32-x64-msvc`, …). */
  napi: string
}

export const TARGETS: Record<TargetId, Target> = {
  'linux-x64': {
    id: 'linux-x64',
    os: 'linux',
    platform: 'linux',
    arch: 'x64',
    exe: '',
    archive: 'tar.gz',
    napi: 'linux-x64-gnu',
  },
  'linux-arm64': {
    id: 'linux-arm64',
    os: 'linux',
    platform: 'linux',
    arch: 'arm64',
    exe: '',
    archive: 'tar.gz',
    napi: 'linux-arm64-gnu',
  },
  'win-x64': {
    id: 'win-x64',
    os: 'win',
    platform: 'win32',
    arch: 'x64',
    exe: '.exe',
    archive: 'zip',
    napi: 'win32-x64-msvc',
  },
  'darwin-arm64': {
    id: 'darwin-arm64',
    os: 'darwin',
    platform: 'darwin',
    arch: 'arm64',
    exe: '',
    archive: 'tar.gz',
    napi: 'darwin-arm64',
  },
  'darwin-x64': {
    id: 'darwin-x64',
    os: 'darwin',
    platform: 'darwin',
    arch: 'x64',
    exe: '',
    archive: 'tar.gz',
    napi: 'darwin-x64',
  },
}

/** Native addon loaders the program imports, each with per-platform packages `<loader>-<napi>`. */
export const NATIVE_LOADERS = ['@napi-rs/keyring', '@ngrok/ngrok']

export interface Runtime extends PinnedPackage {
  binary: string
  binarySha256: string
  archive: string
}

interface RuntimesFile {
  node: string
  shasums256: Record<string, string>
  targets: Record<
    TargetId,
    {package: string; integrity: string} & Omit<Runtime, 'name' | 'version' | 'integrity'>
  >
}

export function runtimes(): RuntimesFile {
  return JSON.parse(
    readFileSync(join(ROOT, 'scripts', 'release', 'runtimes.json'), 'utf8'),
  ) as RuntimesFile
}

export function runtimeFor(id: TargetId): Runtime {
  const file = runtimes()
  const t = file.targets[id]
  if (!file.shasums256[t.archive])
    throw new Error(`runtimes.json: ${id} names archive ${t.archive}, which has no SHASUMS256 line`)
  return {
    name: t.package,
    version: file.node,
    integrity: t.integrity,
    binary: t.binary,
    binarySha256: t.binarySha256,
    archive: t.archive,
  }
}

interface LockEntry {
  version: string
  integrity?: string
}

/** The platform package of each native addon loader for `target`, pinned by package-lock.json. */
export function addonPackages(target: Target): PinnedPackage[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>
  }
  return NATIVE_LOADERS.map((loader) => {
    const name = `${loader}-${target.napi}`
    const entry = lock.packages[`node_modules/${name}`]
    if (!entry?.integrity)
      throw new Error(`package-lock.json has no integrity for ${name}; run npm install`)
    return {name, version: entry.version, integrity: entry.integrity}
  })
}

export function releaseName(version: string, target: Target): string {
  return `toolgate-${version}-${target.os}-${target.arch}`
}
