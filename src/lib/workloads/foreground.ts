import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {describeExit} from './exit-text.ts'
import type {RunningWorkload} from './run-workload.ts'
import type {WorkloadState} from './state.ts'

/**
 * Serves a started workload until it ends: SIGINT/SIGTERM stop it (server first, SIGKILL after the
 * stop timeout, then the proxy) and resolve normally; a server that exits on its own rejects with
 * its exit status, so the process exits non-zero; so does a failed remote login. `announce` (the
 * "running" line) runs once the signal handlers are in place, so a script that signals as soon as
 * it reads the line gets a clean stop, not Node's default exit by signal.
 */
export async function serveWorkload(
  workload: RunningWorkload,
  logger: Logger,
  announce: () => void = () => undefined,
): Promise<WorkloadState> {
  const onSignal = (signal: string) => {
    logger.info('stopping workload', {signal})
    void workload.stop()
  }
  const onInt = () => onSignal('SIGINT')
  const onTerm = () => onSignal('SIGTERM')
  process.on('SIGINT', onInt)
  process.on('SIGTERM', onTerm)
  try {
    announce()
    await workload.login().catch(async (err: unknown) => {
      await workload.stop()
      throw err
    })
    const final = await workload.finished
    if (final.status === 'exited') {
      const exit = {
        code: final.exitCode ?? null,
        signal: (final.exitSignal ?? null) as NodeJS.Signals | null,
      }
      throw new ToolgateError(
        'ERR_UPSTREAM',
        `workload "${final.name}": the MCP server ${describeExit(exit)}`,
      )
    }
    return final
  } finally {
    process.off('SIGINT', onInt)
    process.off('SIGTERM', onTerm)
  }
}
