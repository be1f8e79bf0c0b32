/**
 * Which version of a server is "latest" (contract §1): the highest semver when every version
 * parses as semver, else the most recently published. A small SemVer 2.0.0 precedence compare
 * (semver.org §11) written here so the registry has no dependency for it.
 */
export interface SemVer {
  major: number
  minor: number
  patch: number
  /** Dot-separated pre-release identifiers; empty for a release. */
  prerelease: string[]
}

// semver.org's recommended pattern, without the build capture (build metadata has no precedence).
const SEMVER_RE =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$/

export function parseSemver(version: string): SemVer | undefined {
  const m = SEMVER_RE.exec(version)
  if (!m) return undefined
  const nums = [m[1], m[2], m[3]].map(Number)
  if (nums.some((n) => !Number.isSafeInteger(n))) return undefined
  return {
    major: nums[0] as number,
    minor: nums[1] as number,
    patch: nums[2] as number,
    prerelease: m[4] ? m[4].split('.') : [],
  }
}

function compareIdentifiers(a: string, b: string): number {
  const an = /^\d+$/.test(a)
  const bn = /^\d+$/.test(b)
  // semver.org §11.4.3: numeric identifiers have lower precedence than alphanumeric ones.
  if (an && bn) return Math.sign(Number(a) - Number(b))
  if (an) return -1
  if (bn) return 1
  return a < b ? -1 : a > b ? 1 : 0
}

/** Negative when a < b, positive when a > b, 0 when of equal precedence. */
export function compareSemver(a: SemVer, b: SemVer): number {
  const core = a.major - b.major || a.minor - b.minor || a.patch - b.patch
  if (core !== 0) return Math.sign(core)
  // §11.3: a pre-release has lower precedence than the release.
  if (a.prerelease.length === 0 || b.prerelease.length === 0) {
    return b.prerelease.length - a.prerelease.length === 0 ? 0 : a.prerelease.length === 0 ? 1 : -1
  }
  const n = Math.min(a.prerelease.length, b.prerelease.length)
  for (let i = 0; i < n; i++) {
    const c = compareIdentifiers(a.prerelease[i] as string, b.prerelease[i] as string)
    if (c !== 0) return c
  }
  return Math.sign(a.prerelease.length - b.prerelease.length)
}

export interface VersionCandidate {
  version: string
  /** RFC 3339 text or a Date. */
  publishedAt: string | Date
}

const ms = (t: string | Date) => (t instanceof Date ? t.getTime() : Date.parse(t))

/**
 * The latest of `candidates`, or undefined for none. Ties (equal semver precedence, e.g. differing
 * only in build metadata, or equal publish times) are broken by the version string so the answer
 * never depends on input order.
 */
export function pickLatest<T extends VersionCandidate>(candidates: readonly T[]): T | undefined {
  if (candidates.length === 0) return undefined
  const parsed = candidates.map((c) => parseSemver(c.version))
  const allSemver = parsed.every((p) => p !== undefined)
  let best = 0
  for (let i = 1; i < candidates.length; i++) {
    const c = candidates[i] as T
    const b = candidates[best] as T
    let cmp = allSemver
      ? compareSemver(parsed[i] as SemVer, parsed[best] as SemVer)
      : Math.sign((ms(c.publishedAt) || 0) - (ms(b.publishedAt) || 0))
    if (cmp === 0) cmp = c.version > b.version ? 1 : c.version < b.version ? -1 : 0
    if (cmp > 0) best = i
  }
  return candidates[best]
}
