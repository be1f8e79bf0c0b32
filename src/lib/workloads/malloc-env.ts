/**
 * glibc allocator settings for a detached run's background process (Linux only).
 *
 * Under load that process's V8 heap stays small (17 → 26 MB over 20,000 calls), but its RSS grew
 * by ~25 MB more: memory malloc'd by V8's background threads (compiler zones, GC) lands in per-thread
 * arenas that glibc keeps after it is freed. One arena, and giving freed memory back once 128 KiB
 * are free at the top, cut the peak RSS by ~10 MB at the same calls/s (bench/run-bridge.bench.ts,
 * issue 11). Node flags cannot do this, and an environment variable is the one way in, read by
 * glibc at exec.
 *
 * The user's own GLIBC_TUNABLES is left as it is. Ours is for toolgate's process only: the
 * background process removes what `added` names before it starts the server (child-main.ts), so
 * the server's environment is exactly what it would have been.
 */
const TUNABLES = 'glibc.malloc.arena_max=1:glibc.malloc.trim_threshold=131072'

export function backgroundProcessEnv(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): {env: NodeJS.ProcessEnv; added: string[]} {
  if (platform !== 'linux' || env.GLIBC_TUNABLES !== undefined) return {env, added: []}
  return {env: {...env, GLIBC_TUNABLES: TUNABLES}, added: ['GLIBC_TUNABLES']}
}
