import {posix, win32} from 'node:path'

/**
 * The MCP clients `toolgate client` knows: where each keeps its MCP servers on Linux, macOS and
 * Windows, and the entry shape each documents. Paths are computed from a `ClientContext`, never
 * from the live process, so every OS layout is testable on any machine.
 */

export type ClientId =
  'claude-code' | 'claude-desktop' | 'cursor' | 'vscode' | 'windsurf' | 'gemini' | 'codex'

export type Scope = 'user' | 'project'

export interface ClientContext {
  platform: 'linux' | 'darwin' | 'win32'
  home: string
  env: NodeJS.ProcessEnv
  /** The project folder for `--scope project`. */
  cwd: string
}

/** What a client entry points at. */
export type EntryTarget =
  | {via: 'http'; url: string; sse: boolean}
  | {via: 'stdio'; command: string; args: string[]; env: Record<string, string>}

export interface ClientDef {
  id: ClientId
  name: string
  format: 'json' | 'toml'
  /** Where the servers map sits in the file. */
  key: string[]
  /** Executables whose presence on PATH means the client is installed. */
  commands: string[]
  /** The entry for an HTTP target, or undefined when the client cannot reach it over HTTP. */
  http: (url: string, sse: boolean) => Record<string, unknown> | undefined
  stdio: (t: Extract<EntryTarget, {via: 'stdio'}>) => Record<string, unknown>
  file: (scope: Scope, ctx: ClientContext) => string | undefined
}

function pathOf(ctx: ClientContext) {
  return ctx.platform === 'win32' ? win32 : posix
}

/** The per-user application data folder: Application Support, %APPDATA%, or XDG config. */
function appData(ctx: ClientContext): string {
  const p = pathOf(ctx)
  if (ctx.platform === 'darwin') return p.join(ctx.home, 'Library', 'Application Support')
  if (ctx.platform === 'win32') return ctx.env.APPDATA || p.join(ctx.home, 'AppData', 'Roaming')
  const xdg = ctx.env.XDG_CONFIG_HOME
  return xdg && xdg.startsWith('/') ? xdg : p.join(ctx.home, '.config')
}

const plainStdio = (t: Extract<EntryTarget, {via: 'stdio'}>) => ({
  command: t.command,
  args: t.args,
  env: t.env,
})
const typedStdio = (t: Extract<EntryTarget, {via: 'stdio'}>) => ({type: 'stdio', ...plainStdio(t)})

/** A file in the user's home (user scope) and one in the project (project scope). */
function homeAndProject(user: string[], project: string[] | undefined) {
  return (scope: Scope, ctx: ClientContext) => {
    const p = pathOf(ctx)
    if (scope === 'user') return p.join(ctx.home, ...user)
    return project && p.join(ctx.cwd, ...project)
  }
}

export const CLIENTS: readonly ClientDef[] = [
  {
    id: 'claude-code',
    name: 'Claude Code',
    format: 'json',
    key: ['mcpServers'],
    commands: ['claude'],
    http: (url, sse) => ({type: sse ? 'sse' : 'http', url}),
    stdio: typedStdio,
    // CLAUDE_CONFIG_DIR moves ~/.claude.json, as Claude Code itself reads it.
    file: (scope, ctx) => {
      const p = pathOf(ctx)
      if (scope === 'project') return p.join(ctx.cwd, '.mcp.json')
      const dir = ctx.env.CLAUDE_CONFIG_DIR
      return dir ? p.join(dir, '.claude.json') : p.join(ctx.home, '.claude.json')
    },
  },
  {
    id: 'claude-desktop',
    name: 'Claude Desktop',
    format: 'json',
    key: ['mcpServers'],
    commands: [],
    http: () => undefined,
    stdio: plainStdio,
    file: (scope, ctx) =>
      scope === 'user'
        ? pathOf(ctx).join(appData(ctx), 'Claude', 'claude_desktop_config.json')
        : undefined,
  },
  {
    id: 'cursor',
    name: 'Cursor',
    format: 'json',
    key: ['mcpServers'],
    commands: ['cursor'],
    http: (url) => ({url}),
    stdio: plainStdio,
    file: homeAndProject(['.cursor', 'mcp.json'], ['.cursor', 'mcp.json']),
  },
  {
    id: 'vscode',
    name: 'VS Code',
    format: 'json',
    key: ['servers'],
    commands: ['code'],
    http: (url, sse) => ({type: sse ? 'sse' : 'http', url}),
    stdio: typedStdio,
    file: (scope, ctx) => {
      const p = pathOf(ctx)
      return scope === 'user'
        ? p.join(appData(ctx), 'Code', 'User', 'mcp.json')
        : p.join(ctx.cwd, '.vscode', 'mcp.json')
    },
  },
  {
    id: 'windsurf',
    name: 'Windsurf',
    format: 'json',
    key: ['mcpServers'],
    commands: ['windsurf'],
    http: (url) => ({serverUrl: url}),
    stdio: plainStdio,
    file: homeAndProject(['.codeium', 'windsurf', 'mcp_config.json'], undefined),
  },
  {
    id: 'gemini',
    name: 'Gemini CLI',
    format: 'json',
    key: ['mcpServers'],
    commands: ['gemini'],
    // Gemini reads `httpUrl` as streamable HTTP and `url` as legacy SSE.
    http: (url, sse) => (sse ? {url} : {httpUrl: url}),
    stdio: plainStdio,
    file: homeAndProject(['.gemini', 'settings.json'], ['.gemini', 'settings.json']),
  },
  {
    id: 'codex',
    name: 'Codex',
    format: 'toml',
    key: ['mcp_servers'],
    commands: ['codex'],
    // Codex speaks streamable HTTP, not legacy SSE.
    http: (url, sse) => (sse ? undefined : {url}),
    stdio: plainStdio,
    // CODEX_HOME moves ~/.codex, as Codex itself reads it.
    file: (scope, ctx) => {
      if (scope === 'project') return undefined
      const p = pathOf(ctx)
      return p.join(ctx.env.CODEX_HOME || p.join(ctx.home, '.codex'), 'config.toml')
    },
  },
]

export const CLIENT_IDS = CLIENTS.map((c) => c.id)

export function clientById(id: string): ClientDef | undefined {
  return CLIENTS.find((c) => c.id === id)
}
