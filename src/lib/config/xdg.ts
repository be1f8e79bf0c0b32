import {homedir} from 'node:os'
import {join} from 'node:path'

/**
 * XDG base directories (contract §0): config, data (secrets file, logs, workload state, the
 * embedded registry database) and state. `env` is injectable so tests never touch the real home.
 */
export interface XdgDirs {
  config: string
  data: string
  state: string
  /** Rebuildable data (the sandbox's installed packages). */
  cache: string
}

export function xdgDirs(env: NodeJS.ProcessEnv = process.env, app = 'toolgate'): XdgDirs {
  const home = env.HOME || homedir()
  const pick = (name: string, fallback: string) => {
    const v = env[name]
    // The XDG spec says relative paths are invalid and must be ignored.
    return v && v.startsWith('/') ? v : fallback
  }
  return {
    config: join(pick('XDG_CONFIG_HOME', join(home, '.config')), app),
    data: join(pick('XDG_DATA_HOME', join(home, '.local', 'share')), app),
    state: join(pick('XDG_STATE_HOME', join(home, '.local', 'state')), app),
    cache: join(pick('XDG_CACHE_HOME', join(home, '.cache')), app),
  }
}
