/**
 * MCP logging levels (MCP "Logging", the syslog severities of RFC 5424 §6.2.1), least to most
 * severe. A session that set `info` hears info and everything more severe.
 */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const

export type LogLevel = (typeof LOG_LEVELS)[number]

/** 0 for debug … 7 for emergency; undefined for anything that is not a level. */
export function logLevelRank(level: unknown): number | undefined {
  const i = LOG_LEVELS.indexOf(level as LogLevel)
  return i === -1 ? undefined : i
}

export function moreVerbose(a: LogLevel, b: LogLevel): LogLevel {
  return logLevelRank(a)! <= logLevelRank(b)! ? a : b
}
