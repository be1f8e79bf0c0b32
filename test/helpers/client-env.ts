import {dirname, join, resolve} from 'node:path'

/** The real MCP clients' executables (npm dev dependencies: claude, gemini, codex). */
export const CLIENT_BIN = resolve('node_modules/.bin')

/**
 * The environment a real MCP client runs in under test: a throwaway HOME and XDG dirs, the
 * clients' executables on PATH, and nothing that makes a client update itself or report home.
 */
export function clientEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: `${CLIENT_BIN}:${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
    XDG_STATE_HOME: join(home, 'state'),
    CI: 'true',
    NO_COLOR: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    GEMINI_CLI_NO_RELAUNCH: 'true',
  }
}
