import {Command, Flags} from '@oclif/core'
import {isToolgateError, toToolgateError} from '../lib/errors.ts'
import {createLogger, type Logger} from '../lib/log/logger.ts'

/** One line of `--json` output: an object that says what it is. */
export type JsonEvent = {event: string} & Record<string, unknown>

/**
 * Shared flags and error handling for every command (contract §0): `--debug` and `--json` on every
 * command, ToolgateError → message on stderr + its exit code, never a stack trace for known errors.
 */
export abstract class BaseCommand extends Command {
  static override baseFlags = {
    debug: Flags.boolean({description: 'Log debug detail to stderr.', default: false}),
    json: Flags.boolean({
      description: 'Machine-readable output (JSON lines on stdout, JSON logs on stderr).',
      default: false,
    }),
    'non-interactive': Flags.boolean({
      description:
        'Never wait for a person (no prompt, no browser login); implied by the CI environment variable.',
      default: false,
    }),
  }

  /**
   * Whether a person can be asked something on this terminal: stdin is a TTY, and neither CI nor
   * --non-interactive says nobody is there (docs/exit-codes.md: missing input is exit 2 instead).
   */
  protected canPrompt(flags: {'non-interactive'?: boolean}): boolean {
    const ci = process.env.CI
    const inCi = ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0'
    return process.stdin.isTTY === true && !inCi && flags['non-interactive'] !== true
  }

  protected makeLogger(flags: {debug: boolean; json: boolean}): Logger {
    return createLogger({level: flags.debug ? 'debug' : 'info', json: flags.json})
  }

  /**
   * Prints one result line to stdout: JSON when `--json`, else the human text. Every JSON line
   * names its `event` (docs/json.md), so a script can tell a result from a log line.
   */
  protected emit(json: boolean, human: string, data: JsonEvent): void {
    process.stdout.write((json ? JSON.stringify(data) : human) + '\n')
  }

  /** One error on stderr: `Error: …` for people, one `{"error","code"}` object with `--json`. */
  private writeError(json: boolean, message: string, code: string): void {
    // Messages may quote what a remote party sent: no terminal control sequence gets through.
    // eslint-disable-next-line no-control-regex -- control characters are what we replace
    const safe = message.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, ' ')
    process.stderr.write(json ? JSON.stringify({error: message, code}) + '\n' : `Error: ${safe}\n`)
  }

  protected override async catch(
    err: Error & {exitCode?: number; oclif?: {exit?: number}},
  ): Promise<unknown> {
    const json = process.argv.includes('--json')
    if (isToolgateError(err)) {
      this.writeError(json, err.message, err.code)
      if (process.argv.includes('--debug') && err.cause)
        process.stderr.write(`  cause: ${String((err.cause as Error)?.message ?? err.cause)}\n`)
      this.exit(err.exitCode)
    }
    // oclif's own parse errors (unknown flag, missing arg) keep their messages and exit 2.
    if (err.oclif && (!json || (err as {code?: string}).code === 'EEXIT')) return super.catch(err)
    if (err.oclif && err.oclif.exit !== undefined) {
      // `--json` covers parse errors too; oclif's usage errors are ERR_USAGE (exit 2).
      this.writeError(json, err.message, 'ERR_USAGE')
      this.exit(err.oclif.exit)
    }
    const e = toToolgateError(err)
    this.writeError(json, err.message || e.message, e.code)
    if (process.argv.includes('--debug') && err.stack) process.stderr.write(err.stack + '\n')
    this.exit(e.exitCode)
  }
}
