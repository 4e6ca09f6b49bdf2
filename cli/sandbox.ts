/**
 * `slipway sandbox create | ls | rm | exec | cp`. Boxes are created, listed and removed through the
 * API (core/client); commands and files go through the box's dataplane at its `dataplane_url`
 * (/work/shared/spec/sandbox-dataplane.md): `POST /execute`, `POST /upload?path=` (multipart part
 * `file`), `GET /download?path=`. A box whose `dataplane_url` is null lives on a server whose
 * runtime cannot execute: the CLI says so and exits 7.
 */
import { createWriteStream, readFileSync, statSync } from "node:fs"
import { basename } from "node:path"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { sandboxEndpoints } from "../core/api/sandboxes.ts"
import { makeClient } from "../core/client/client.ts"
import { type Settings, requireKey } from "./config.ts"
import { call, userAgent } from "./deployments.ts"
import { CliError, ExitCode } from "./errors.ts"
import { type Output, table } from "./output.ts"

const clientFor = (settings: Settings) =>
  makeClient(sandboxEndpoints, { baseUrl: settings.url, apiKey: requireKey(settings), tenantId: settings.tenantId, userAgent })

export const notConfigured = "this server's runtime cannot execute (dataplane not configured)"

interface BoxView {
  readonly name: string
  readonly dataplane_url: string | null
}

const dataplaneOf = async (settings: Settings, name: string): Promise<string> => {
  const box = (await call(clientFor(settings).getBox({ params: { name } }), `getting sandbox ${name}`)) as unknown as BoxView
  if (box.dataplane_url === null || box.dataplane_url === undefined || box.dataplane_url === "") {
    throw new CliError(ExitCode.unavailable, "DataplaneNotConfigured", `sandbox ${name}: ${notConfigured}`)
  }
  return box.dataplane_url.replace(/\/+$/, "")
}

const headersFor = (settings: Settings): Record<string, string> => ({
  "x-api-key": requireKey(settings),
  "user-agent": userAgent,
  ...(settings.tenantId ? { "x-tenant-id": settings.tenantId } : {})
})

/** `{"detail": {"error", "message"}}` or a string detail, as the dataplane answers errors. */
const dataplaneError = async (response: Response, what: string, url: string): Promise<CliError> => {
  const text = await response.text()
  let error: string | undefined
  let message = text.trim() || `HTTP ${response.status}`
  try {
    const detail = JSON.parse(text)?.detail
    if (typeof detail === "string") message = detail
    else if (detail && typeof detail === "object") {
      error = typeof detail.error === "string" ? detail.error : undefined
      message = typeof detail.message === "string" ? detail.message : JSON.stringify(detail)
    }
  } catch {
    // not JSON: keep the text
  }
  const status = response.status
  if (status === 401 || status === 403) return new CliError(ExitCode.auth, "DataplaneAuth", `${what}: ${message} (HTTP ${status})`)
  if (error === "FileNotFound") return new CliError(ExitCode.notFound, "FileNotFound", `${what}: ${message}`)
  // `{"detail": "Not Found"}` is a server's answer for a path it does not route: no dataplane there.
  const routeMissing = status === 404 && error === undefined && message === "Not Found"
  if (status === 404 && !routeMissing && what.startsWith("download")) return new CliError(ExitCode.notFound, "FileNotFound", `${what}: ${message}`)
  if (status === 404) return new CliError(ExitCode.unavailable, "DataplaneUnavailable", `${what}: the dataplane at ${url} answered 404 (${message}); ${notConfigured}`)
  return new CliError(ExitCode.failure, error ?? "DataplaneError", `${what}: ${message} (HTTP ${status})`)
}

const send = async (url: string, init: RequestInit, what: string): Promise<Response> => {
  try {
    return await fetch(url, init)
  } catch (error) {
    const cause = (error as { cause?: Error }).cause
    throw new CliError(ExitCode.unreachable, "TransportError", `${what}: no answer from ${url}: ${cause?.message ?? (error as Error).message}`)
  }
}

export const create = async (settings: Settings, output: Output, options: { template: string; name?: string; wait?: boolean; timeout?: string }) => {
  const timeout = options.timeout === undefined ? undefined : Number(options.timeout)
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 0)) throw new CliError(ExitCode.usage, "UsageError", `--timeout must be a number of seconds, got ${options.timeout}`)
  const body = { template_name: options.template, ...(options.name ? { name: options.name } : {}), ...(options.wait ? { wait_for_ready: true } : {}), ...(timeout !== undefined ? { timeout } : {}) }
  const box = await call(clientFor(settings).createBox({ body: body as any }), `creating a sandbox from template ${options.template}`)
  output.result(box, () => box.name)
}

export const list = async (settings: Settings, output: Output, options: { limit: string; offset: string }) => {
  const page = await call(clientFor(settings).listBoxes({ query: { limit: options.limit, offset: options.offset } as any }), "listing sandboxes")
  output.result(page, () =>
    table(
      ["NAME", "STATUS", "TEMPLATE", "POOL", "CREATED", "DATAPLANE", "MESSAGE"],
      (page.sandboxes as ReadonlyArray<any>).map((box) => [
        box.name,
        box.status,
        box.template_name ?? (box.snapshot_id ? `snapshot ${box.snapshot_id}` : (box.image ?? "")),
        box.pool_name ?? "",
        String(box.created_at),
        box.dataplane_url ?? "(none)",
        // Why a box failed (or what it waits for).
        box.status_message ?? ""
      ])
    )
  )
}

export const remove = async (settings: Settings, output: Output, names: ReadonlyArray<string>) => {
  const client = clientFor(settings)
  for (const name of names) await call(client.deleteBox({ params: { name } }), `deleting sandbox ${name}`)
  output.result({ deleted: names }, () => names.map((name) => `deleted ${name}`).join("\n"))
}

/** Runs `command` in the box; resolves with the command's exit code (which the CLI exits with). */
export const exec = async (
  settings: Settings,
  output: Output,
  name: string,
  command: ReadonlyArray<string>,
  options: { timeout: string; shell: string; cwd?: string; env?: ReadonlyArray<string> }
): Promise<number> => {
  if (command.length === 0) throw new CliError(ExitCode.usage, "UsageError", "exec needs a command: slipway sandbox exec <name> -- <command…>")
  const timeout = Number(options.timeout)
  if (!Number.isInteger(timeout) || timeout < 1) throw new CliError(ExitCode.usage, "UsageError", `--timeout must be a positive number of seconds, got ${options.timeout}`)
  const env: Record<string, string> = {}
  for (const entry of options.env ?? []) {
    const equals = entry.indexOf("=")
    if (equals <= 0) throw new CliError(ExitCode.usage, "UsageError", `--env expects NAME=value, got ${JSON.stringify(entry)}`)
    env[entry.slice(0, equals)] = entry.slice(equals + 1)
  }
  const dataplane = await dataplaneOf(settings, name)
  // One word is passed as is (it may be a whole shell line); several are quoted for the shell.
  const line = command.length === 1 ? command[0]! : command.map((word) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(" ")
  const url = `${dataplane}/execute`
  const response = await send(
    url,
    {
      method: "POST",
      headers: { ...headersFor(settings), "content-type": "application/json" },
      body: JSON.stringify({ command: line, timeout, shell: options.shell, ...(options.cwd ? { cwd: options.cwd } : {}), ...(Object.keys(env).length ? { env } : {}) }),
      signal: AbortSignal.timeout((timeout + 10) * 1000)
    },
    `exec in ${name}`
  )
  if (!response.ok) throw await dataplaneError(response, `exec in ${name}`, url)
  const answer = (await response.json()) as { stdout?: string; stderr?: string; exit_code?: number }
  if (output.json) output.result(answer, () => "")
  else {
    process.stdout.write(answer.stdout ?? "")
    process.stderr.write(answer.stderr ?? "")
  }
  return typeof answer.exit_code === "number" ? answer.exit_code : ExitCode.failure
}

/** `box:path` names a file in a box; anything else a local path (`-` is stdout for a download). */
const parseTarget = (text: string): { box: string; path: string } | undefined => {
  const match = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?):(.+)$/.exec(text)
  return match ? { box: match[1]!, path: match[3]! } : undefined
}

export const copy = async (settings: Settings, output: Output, source: string, destination: string) => {
  const from = parseTarget(source)
  const to = parseTarget(destination)
  if ((from === undefined) === (to === undefined)) {
    throw new CliError(ExitCode.usage, "UsageError", "cp copies between this machine and a box: one of the two must be <box>:<path>, the other a local path")
  }
  if (to !== undefined) {
    let data: Buffer
    try {
      if (statSync(source).isDirectory()) throw new CliError(ExitCode.usage, "UsageError", `${source} is a directory; cp copies one file`)
      data = readFileSync(source)
    } catch (error) {
      if (error instanceof CliError) throw error
      throw new CliError(ExitCode.notFound, "FileNotFound", `cannot read ${source}: ${(error as Error).message}`)
    }
    const dataplane = await dataplaneOf(settings, to.box)
    const path = to.path.endsWith("/") ? `${to.path}${basename(source)}` : to.path
    const url = `${dataplane}/upload?path=${encodeURIComponent(path)}`
    const form = new FormData()
    form.append("file", new Blob([new Uint8Array(data)], { type: "application/octet-stream" }), "file")
    const response = await send(url, { method: "POST", headers: headersFor(settings), body: form }, `upload to ${to.box}:${path}`)
    if (!response.ok) throw await dataplaneError(response, `upload to ${to.box}:${path}`, url)
    output.result({ box: to.box, path, written: data.length }, () => `${source} -> ${to.box}:${path} (${data.length} bytes)`)
    return
  }
  const dataplane = await dataplaneOf(settings, from!.box)
  const url = `${dataplane}/download?path=${encodeURIComponent(from!.path)}`
  const response = await send(url, { method: "GET", headers: headersFor(settings) }, `download ${from!.box}:${from!.path}`)
  if (!response.ok || response.body === null) throw await dataplaneError(response, `download ${from!.box}:${from!.path}`, url)
  if (destination === "-") {
    await pipeline(Readable.fromWeb(response.body as any), process.stdout, { end: false })
    return
  }
  const target = destination.endsWith("/") ? `${destination}${basename(from!.path)}` : destination
  await pipeline(Readable.fromWeb(response.body as any), createWriteStream(target))
  output.result({ box: from!.box, path: from!.path, file: target, bytes: statSync(target).size }, () => `${from!.box}:${from!.path} -> ${target} (${statSync(target).size} bytes)`)
}
