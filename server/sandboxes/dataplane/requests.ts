/**
 * Request bodies and WebSocket frames the clients send, as effect/Schema descriptions, decoded
 * leniently about extra keys (newer clients add fields) and strictly about the ones we read.
 */
import { posix } from "node:path"
import { Result, Schema } from "effect"
import { decodeWithIssues, type ValidationIssue } from "../../../core/api/validation.ts"
import { BOX_HOME } from "./box.ts"
import { badRequest, DataplaneError, unprocessable } from "./errors.ts"

const Num = Schema.Finite
const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const RunConfig = Schema.Struct({
  user: optionalNullable(Schema.String),
  work_dir: optionalNullable(Schema.String),
  env_vars: optionalNullable(Schema.Record(Schema.String, Schema.String))
})

const commandFields = {
  command: Schema.String,
  shell: optionalNullable(Schema.String),
  env: optionalNullable(Schema.Record(Schema.String, Schema.String)),
  cwd: optionalNullable(Schema.String),
  run_config: optionalNullable(RunConfig)
}

export const HttpExecuteBody = Schema.Struct({ ...commandFields, timeout: optionalNullable(Num) })

export const ExecuteFrame = Schema.Struct({
  type: Schema.Literal("execute"),
  ...commandFields,
  timeout_seconds: optionalNullable(Num),
  idle_timeout_seconds: optionalNullable(Num),
  kill_on_disconnect: optionalNullable(Schema.Boolean),
  ttl_seconds: optionalNullable(Num),
  command_id: optionalNullable(Schema.String),
  pty: optionalNullable(Schema.Boolean),
  close_stdin: optionalNullable(Schema.Boolean)
})

export const ReconnectFrame = Schema.Struct({
  type: Schema.Literal("reconnect"),
  command_id: Schema.String,
  stdout_offset: optionalNullable(Num),
  stderr_offset: optionalNullable(Num)
})

export const InputFrame = Schema.Struct({ type: Schema.Literal("input"), data: Schema.String })

export const GlobBody = Schema.Struct({ pattern: Schema.String, path: optionalNullable(Schema.String), limit: optionalNullable(Num) })
export const GrepBody = Schema.Struct({
  pattern: Schema.String,
  path: optionalNullable(Schema.String),
  glob: optionalNullable(Schema.String),
  limit: optionalNullable(Num)
})

const describe = (issues: ReadonlyArray<ValidationIssue>) =>
  issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; ")

/** Decodes `input` or throws a 422 naming every bad field. */
export const decodeOrThrow = <S extends Schema.Top>(schema: S, prefix: string) => {
  const decode = decodeWithIssues(schema, [prefix], { excess: "ignore" })
  return (input: unknown): S["Type"] => {
    const result = decode(input)
    if (Result.isFailure(result)) throw unprocessable(describe(result.failure))
    return result.success
  }
}

const hasNul = (value: string) => value.includes("\0")

/** A path inside the box: relative paths resolve from /home/user; NUL and newlines are refused. */
export const boxPath = (value: string | null | undefined, field = "path"): string => {
  if (value === undefined || value === null || value === "") throw unprocessable(`${field}: Field required`)
  if (hasNul(value) || value.includes("\n")) throw badRequest(`${field} must not contain NUL or newline characters`)
  const absolute = value.startsWith("/") ? value : `${BOX_HOME}/${value}`
  const normal = posix.normalize(absolute)
  return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal
}

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/

/** What a command runs with, after the deprecated `env`/`cwd` and the newer `run_config` are reconciled. */
export interface CommandSpec {
  readonly command: string
  readonly shell: string
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
}

export const commandSpec = (body: {
  readonly command: string
  readonly shell?: string | null | undefined
  readonly env?: Readonly<Record<string, string>> | null | undefined
  readonly cwd?: string | null | undefined
  readonly run_config?: { readonly user?: string | null | undefined; readonly work_dir?: string | null | undefined; readonly env_vars?: Readonly<Record<string, string>> | null | undefined } | null | undefined
}): CommandSpec => {
  const runConfig = body.run_config ?? undefined
  if (runConfig && ((body.env ?? undefined) !== undefined || (body.cwd ?? undefined) !== undefined)) {
    throw badRequest("Cannot combine run_config with env/cwd; use run_config.env_vars and run_config.work_dir")
  }
  if (runConfig?.user) throw badRequest("run_config.user is not supported by this dataplane; commands run as the box's user")
  if (hasNul(body.command)) throw badRequest("command must not contain NUL characters")
  const shell = body.shell ?? "/bin/bash"
  if (!shell.startsWith("/") || hasNul(shell) || shell.includes("\n")) throw badRequest("shell must be an absolute path inside the sandbox")
  const env = (runConfig ? runConfig.env_vars : body.env) ?? {}
  for (const [name, value] of Object.entries(env)) {
    if (!envName.test(name)) throw badRequest(`env: '${name}' is not a valid environment variable name`)
    if (hasNul(value)) throw badRequest(`env: the value of '${name}' must not contain NUL characters`)
  }
  const cwdInput = (runConfig ? runConfig.work_dir : body.cwd) ?? undefined
  if (runConfig && cwdInput !== undefined && !cwdInput.startsWith("/")) throw badRequest("run_config.work_dir must be an absolute path")
  return { command: body.command, shell, env, cwd: cwdInput === undefined ? BOX_HOME : boxPath(cwdInput, "cwd") }
}

/** Seconds from the wire: null/undefined -> fallback; `-1` (or any negative) -> none; else clamped to `max`. */
export const seconds = (value: number | null | undefined, fallback: number, max: number): number | undefined => {
  const v = value ?? fallback
  if (v < 0) return undefined
  return Math.min(v, max)
}

export const assertLimit = (value: number | null | undefined, fallback: number, max: number): number => {
  const v = value ?? fallback
  if (!Number.isInteger(v) || v < 1) throw unprocessable("limit: Input should be an integer greater than or equal to 1")
  return Math.min(v, max)
}

export { DataplaneError }
