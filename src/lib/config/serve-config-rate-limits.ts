import type {RateSpec} from '../server/rate-limit.ts'
import {Checker, join} from './checker.ts'

/**
 * `rateLimits` of the serve configuration (docs/serve.md "Rate limits"): token buckets per caller
 * (the token's subject; the client address without one). `read` covers the registry read routes
 * and is off unless set; `publish` covers publish and status changes and is on by default.
 */
export interface RateLimitsConfig {
  read?: RateSpec
  publish: RateSpec
}

export const DEFAULT_PUBLISH_LIMIT: RateSpec = {perSecond: 1, burst: 20}

const UNITS: Record<string, number> = {s: 1, m: 60, h: 3600}

export function checkRateLimits(c: Checker, value: unknown): RateLimitsConfig {
  if (value === undefined) return {publish: DEFAULT_PUBLISH_LIMIT}
  const o = c.object(value, 'rateLimits', ['read', 'publish'])
  if (!o) return {publish: DEFAULT_PUBLISH_LIMIT}
  const read = checkSpec(c, o.read, 'rateLimits.read')
  const publish = checkSpec(c, o.publish, 'rateLimits.publish')
  return {...(read ? {read} : {}), publish: publish ?? DEFAULT_PUBLISH_LIMIT}
}

function checkSpec(c: Checker, value: unknown, path: string): RateSpec | undefined {
  if (value === undefined) return undefined
  const o = c.object(value, path, ['rate', 'burst'])
  if (!o) return undefined
  const text = c.string(o.rate, join(path, 'rate'), {required: true})
  let perSecond: number | undefined
  if (text !== undefined) {
    const m = /^(\d{1,7})\/([smh])$/.exec(text.trim())
    if (!m || Number(m[1]) === 0)
      c.add(join(path, 'rate'), `"${text.slice(0, 40)}" is not a rate (e.g. 20/s, 600/m, 1000/h)`)
    else perSecond = Number(m[1]) / (UNITS[m[2]!] as number)
  }
  let burst = perSecond === undefined ? undefined : Math.max(1, Math.ceil(perSecond))
  if (o.burst !== undefined) {
    if (typeof o.burst !== 'number' || !Number.isInteger(o.burst) || o.burst < 1 || o.burst > 1e6)
      c.add(join(path, 'burst'), 'must be an integer from 1 to 1000000')
    else burst = o.burst
  }
  return perSecond === undefined || burst === undefined ? undefined : {perSecond, burst}
}
