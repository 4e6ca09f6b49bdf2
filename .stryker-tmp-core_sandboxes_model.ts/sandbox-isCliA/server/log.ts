/** Structured JSON logs on stderr, one object per line. Never pass bodies, headers or secrets here. */
// @ts-nocheck

import type { LogLevel } from "./config.ts"

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  readonly debug: (msg: string, fields?: Record<string, unknown>) => void
  readonly info: (msg: string, fields?: Record<string, unknown>) => void
  readonly warn: (msg: string, fields?: Record<string, unknown>) => void
  readonly error: (msg: string, fields?: Record<string, unknown>) => void
  readonly enabled: (level: LogLevel) => boolean
}

export const makeLogger = (level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line)): Logger => {
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (rank[lvl] < rank[level]) return
      write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }) + "\n")
    }
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    enabled: (lvl) => rank[lvl] >= rank[level]
  }
}
