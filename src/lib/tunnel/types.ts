import type {Logger} from '../log/logger.ts'
import type {ArgSpec} from './provider-args.ts'
import type {TunnelTarget} from './target.ts'

export interface OpenTunnel {
  close(): Promise<void>
}

export interface TunnelHooks {
  logger: Logger
  /** The public URL, each time it is (re-)established. */
  onUrl: (url: string, details: Record<string, unknown>) => void
  env: NodeJS.ProcessEnv
}

export interface TunnelProvider {
  name: string
  args: Record<string, ArgSpec>
  /** Checks that need I/O (files, the environment), before anything is contacted. */
  prepare(args: Record<string, unknown>, env: NodeJS.ProcessEnv): Promise<unknown>
  open(target: TunnelTarget, prepared: unknown, hooks: TunnelHooks): Promise<OpenTunnel>
}
