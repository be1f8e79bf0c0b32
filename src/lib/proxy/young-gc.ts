import {setFlagsFromString} from 'node:v8'
import {runInNewContext} from 'node:vm'

/**
 * Bounds the memory a long streamed response leaves behind.
 *
 * Every chunk read from the target is a fresh buffer (Node allocates one per socket read) and is
 * garbage as soon as the client socket took it. Streaming allocates almost no JavaScript heap, so
 * no young-generation GC runs; V8 frees those buffers only once external memory grew by its soft
 * limit of 64 MB. A 100 MB response through the proxy therefore raised RSS by ~60 MB
 * (bench/proxy.bench.ts). A minor GC (scavenge: only live young objects are copied, well under a
 * millisecond here) after every `EVERY` bytes forwarded frees them early, so RSS growth stays
 * around that bound. Small JSON-RPC exchanges reach it only every ~100,000 requests.
 */
const EVERY = 8 * 1024 * 1024

type Gc = (options: {type: 'minor'; execution: 'sync'}) => void

function exposeGc(): Gc | undefined {
  try {
    // The flag only affects contexts created after it is set: the main context keeps no `gc`
    // global, this private context gets one.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as Gc) : undefined
  } catch {
    return undefined
  }
}

let gc: Gc | undefined | null = null
let counted = 0

/** Counts forwarded body bytes and runs a minor GC every `EVERY` bytes. */
export function countForwarded(bytes: number): void {
  counted += bytes
  if (counted < EVERY) return
  counted = 0
  if (gc === null) gc = exposeGc()
  gc?.({type: 'minor', execution: 'sync'})
}
