import {toToolgateError} from '../errors.ts'
import {readChildRequest} from './child-argv.ts'
import {runInput, serveWorkload, startForeground, workloadLogger} from './run-command.ts'

/**
 * The background process of a detached `toolgate run` (`run --workload-child`), started without
 * oclif or the other commands: it only runs one workload, so it loads only what that needs. The
 * command-line framework and every other command's libraries were ~20 MB of a workload's
 * resident memory (issue 11: bridge RSS ≤ 80 MB). Its stderr is the workload's log file, where a
 * failure is written the way a command writes it, with the same exit code.
 */
export async function runWorkloadChild(
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<void> {
  let json = false
  try {
    const request = await readChildRequest(stdin)
    // What the parent set for this process alone (allocator tuning) never reaches the server.
    for (const name of request.addedEnv ?? []) delete process.env[name]
    // Set after start, these live in this process's memory only, not in /proc/<pid>/environ;
    // a server never gets them (server-env.ts drops TOOLGATE_*).
    Object.assign(process.env, request.ownEnv ?? {})
    json = request.flags.json
    const input = runInput(request.name, request.rest, request.flags)
    const logger = workloadLogger(request.name, request.flags, {child: true})
    const workload = await startForeground(input, logger, {json, isTTY: false})
    await serveWorkload(workload, logger)
  } catch (err) {
    const e = toToolgateError(err)
    const message = (err as Error)?.message || e.message
    process.stderr.write(
      json ? JSON.stringify({error: message, code: e.code}) + '\n' : `Error: ${message}\n`,
    )
    process.exitCode = e.exitCode
  }
}
