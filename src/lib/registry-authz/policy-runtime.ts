/**
 * The registry policy in force, and its reloads. A `policyFile` is watched (its directory, as file
 * sources are: editors and atomic writers replace the file) and re-read after a short debounce,
 * and also polled every `pollMs` (Kubernetes swaps a ConfigMap's `..data` symlink, an event that
 * names another file, and some filesystems send no events at all); an unchanged text is a no-op. A
 * new policy that does not load keeps the last good one, and the log says so and why. An inline
 * policy never changes.
 */
import {watch, type FSWatcher} from 'node:fs'
import {readFile} from 'node:fs/promises'
import {dirname} from 'node:path'
import {parseAuthzConfigText} from '../authz/policy-file.ts'
import type {RegistryAuthzSpec} from '../config/serve-config-authz.ts'
import type {Logger} from '../log/logger.ts'
import {RegistryPolicy, type RegistryPolicyOptions} from './registry-policy.ts'

export interface PolicyRuntimeOptions {
  logger: Logger
  dataVersion?: (() => number) | undefined
  /** Watch a policy file for changes (default true). */
  watch?: boolean
  debounceMs?: number
  /** Re-read interval besides the watch; default 30 s. */
  pollMs?: number
}

export class RegistryPolicyRuntime {
  readonly #spec: RegistryAuthzSpec
  readonly #log: Logger
  readonly #policyOptions: RegistryPolicyOptions
  #policy: RegistryPolicy
  #text: string | undefined
  /** The last text that failed to load, so a poll does not log the same failure again. */
  #badText: string | undefined
  #watcher: FSWatcher | undefined
  #poll: NodeJS.Timeout | undefined
  #debounce: NodeJS.Timeout | undefined
  #reloading: Promise<boolean> | undefined

  private constructor(
    spec: RegistryAuthzSpec,
    policy: RegistryPolicy,
    text: string | undefined,
    log: Logger,
    policyOptions: RegistryPolicyOptions,
  ) {
    this.#spec = spec
    this.#policy = policy
    this.#text = text
    this.#log = log
    this.#policyOptions = policyOptions
  }

  /** Loads the policy; throws ERR_POLICY_INVALID (index and parser message) when it does not load. */
  static async start(
    spec: RegistryAuthzSpec,
    options: PolicyRuntimeOptions,
  ): Promise<RegistryPolicyRuntime> {
    const policyOptions = {logger: options.logger, dataVersion: options.dataVersion}
    let runtime: RegistryPolicyRuntime
    if (spec.kind === 'inline') {
      runtime = new RegistryPolicyRuntime(
        spec,
        new RegistryPolicy(spec.config, policyOptions),
        undefined,
        options.logger,
        policyOptions,
      )
    } else {
      const text = await readFile(spec.path, 'utf8')
      const policy = new RegistryPolicy(parseAuthzConfigText(text, spec.path), policyOptions)
      runtime = new RegistryPolicyRuntime(spec, policy, text, options.logger, policyOptions)
      if (options.watch ?? true) {
        runtime.#watch(spec.path, options.debounceMs ?? 200)
        runtime.#poll = setInterval(() => void runtime.reload(), options.pollMs ?? 30_000)
        runtime.#poll.unref()
      }
    }
    options.logger.info('registry authorization policy loaded', {
      source: spec.kind === 'file' ? spec.path : 'auth.authz.cedar',
    })
    return runtime
  }

  current(): RegistryPolicy {
    return this.#policy
  }

  /**
   * Re-reads the policy file. Resolves true when a new policy took effect, false when the file is
   * unchanged or the new policy does not load (the last good one stays; the log says why).
   */
  reload(): Promise<boolean> {
    if (this.#spec.kind !== 'file') return Promise.resolve(false)
    const file = this.#spec.path
    // Serialised: a change during a reload is picked up by one more reload after it.
    const run = async (): Promise<boolean> => {
      let text: string
      try {
        text = await readFile(file, 'utf8')
      } catch (err) {
        this.#failed(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
        return false
      }
      if (text === this.#text || text === this.#badText) return false
      try {
        this.#policy = new RegistryPolicy(parseAuthzConfigText(text, file), this.#policyOptions)
      } catch (err) {
        this.#badText = text
        this.#failed(file, (err as Error).message)
        return false
      }
      this.#badText = undefined
      this.#text = text
      this.#log.info('registry authorization policy reloaded', {file})
      return true
    }
    const next = (this.#reloading ?? Promise.resolve(false)).then(run, run)
    this.#reloading = next
    return next
  }

  close(): void {
    if (this.#debounce) clearTimeout(this.#debounce)
    if (this.#poll) clearInterval(this.#poll)
    this.#watcher?.close()
    this.#watcher = this.#debounce = undefined
  }

  #failed(file: string, reason: string): void {
    this.#log.error('registry authorization policy reload failed; keeping the last good policy', {
      file,
      error: reason,
    })
  }

  #watch(file: string, debounceMs: number): void {
    try {
      // Any change in the directory: the file may be a symlink whose target was swapped.
      this.#watcher = watch(dirname(file), {persistent: false}, () => {
        if (this.#debounce) clearTimeout(this.#debounce)
        this.#debounce = setTimeout(() => {
          this.#debounce = undefined
          void this.reload()
        }, debounceMs)
        this.#debounce.unref()
      })
      this.#watcher.on('error', (err) => {
        this.#log.warn('registry authorization policy file cannot be watched', {
          file,
          error: err.message,
        })
        this.#watcher?.close()
        this.#watcher = undefined
      })
    } catch (err) {
      this.#log.warn('registry authorization policy file cannot be watched', {
        file,
        error: (err as Error).message,
      })
    }
  }
}
