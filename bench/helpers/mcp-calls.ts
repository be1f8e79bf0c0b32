import type {Client} from '@modelcontextprotocol/sdk/client/index.js'

/** Latency figures of `count` sequential `echo` calls on one client. */
export async function sequentialCalls(
  client: Client,
  count: number,
): Promise<{p50: number; p99: number; perSecond: number}> {
  const times: number[] = []
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    await client.callTool({name: 'echo', arguments: {message: `m${i}`}})
    times.push(performance.now() - t0)
  }
  const total = performance.now() - started
  times.sort((a, b) => a - b)
  return {
    p50: times[Math.floor(times.length * 0.5)]!,
    p99: times[Math.floor(times.length * 0.99)]!,
    perSecond: (count / total) * 1000,
  }
}

/** Calls/s with `inFlight` concurrent loops sharing `clients` (round robin) for `ms`. */
export async function concurrentCalls(
  clients: Client[],
  inFlight: number,
  ms: number,
): Promise<{perSecond: number; errors: number}> {
  let done = 0
  let errors = 0
  const until = performance.now() + ms
  const started = performance.now()
  await Promise.all(
    Array.from({length: inFlight}, async (_, i) => {
      const client = clients[i % clients.length]!
      while (performance.now() < until) {
        try {
          await client.callTool({name: 'echo', arguments: {message: 'x'}})
          done++
        } catch {
          errors++
        }
      }
    }),
  )
  return {perSecond: (done / (performance.now() - started)) * 1000, errors}
}

/** Current resident set size (VmRSS) in MB. */
export async function rssMb(pid: number): Promise<number> {
  const {readFile} = await import('node:fs/promises')
  const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : NaN
}
