import {ToolgateError} from '../errors.ts'

const MAX_ARGV_BYTES = 1024 * 1024

/** The background process of a detached run reads its arguments (a JSON array) from stdin. */
export async function readStdinArgv(
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string[]> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stdin) {
    size += (chunk as Buffer).length
    if (size > MAX_ARGV_BYTES) throw new ToolgateError('ERR_USAGE', 'workload arguments too long')
    chunks.push(chunk as Buffer)
  }
  const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null')
  if (!Array.isArray(value) || !value.every((a) => typeof a === 'string')) {
    throw new ToolgateError(
      'ERR_USAGE',
      '--workload-child: expected the run arguments as a JSON array on stdin',
    )
  }
  return value
}
