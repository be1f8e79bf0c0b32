/**
 * `toolgate run --workload-child`: how a detached run starts its background process. The entry
 * (src/cli.ts) recognises exactly these arguments before loading the command-line framework, and
 * hands the process to child-main.ts.
 */
export const CHILD_FLAG = '--workload-child'

export function isWorkloadChild(argv: readonly string[]): boolean {
  return argv.length === 2 && argv[0] === 'run' && argv[1] === CHILD_FLAG
}
