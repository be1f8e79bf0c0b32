import {ToolgateError} from '../errors.ts'
import type {RunFlags} from './run-command.ts'

const MAX_REQUEST_BYTES = 1024 * 1024

/**
 * What the parent of a detached run hands its background process on stdin (never on the command
 * line, which every user of the machine can read in `ps`): the workload name, the arguments after
 * it, and the flags the parent already parsed. The background process then needs no command-line
 * parser at all (child-main.ts).
 */
export interface ChildRequest {
  name: string
  rest: string[]
  flags: RunFlags & {debug: boolean; json: boolean}
  /** Environment variables the parent added for this process only, not for the server (malloc-env.ts). */
  addedEnv?: string[]
  /** The parent's `TOOLGATE_*` variables, passed here rather than in the environment (detach.ts). */
  ownEnv?: Record<string, string>
}

export async function readChildRequest(
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<ChildRequest> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stdin) {
    size += (chunk as Buffer).length
    if (size > MAX_REQUEST_BYTES)
      throw new ToolgateError('ERR_USAGE', 'workload arguments too long')
    chunks.push(chunk as Buffer)
  }
  let value: unknown
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null')
  } catch {
    value = undefined
  }
  const request = value as Partial<ChildRequest> | undefined
  if (
    typeof request !== 'object' ||
    request === null ||
    typeof request.name !== 'string' ||
    !Array.isArray(request.rest) ||
    !request.rest.every((a) => typeof a === 'string') ||
    typeof request.flags !== 'object' ||
    request.flags === null ||
    typeof request.flags.json !== 'boolean' ||
    typeof request.flags.debug !== 'boolean' ||
    (request.addedEnv !== undefined &&
      (!Array.isArray(request.addedEnv) ||
        !request.addedEnv.every((a) => typeof a === 'string'))) ||
    (request.ownEnv !== undefined &&
      (typeof request.ownEnv !== 'object' ||
        request.ownEnv === null ||
        !Object.entries(request.ownEnv).every(
          ([k, v]) => k.startsWith('TOOLGATE_') && typeof v === 'string',
        )))
  ) {
    throw new ToolgateError(
      'ERR_USAGE',
      '--workload-child: expected {"name","rest","flags"} as JSON on stdin (it is started by `toolgate run`, not by hand)',
    )
  }
  return request as ChildRequest
}
