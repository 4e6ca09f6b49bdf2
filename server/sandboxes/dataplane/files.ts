/**
 * File endpoints. Every operation runs INSIDE the box through the read-only static busybox at
 * BOX_TOOLS, so paths (symlinks included) resolve in the box's own mount namespace with the box's
 * permissions: nothing here opens a host path.
 */
import { createHash, randomBytes } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import busboy from "busboy"
import picomatch from "picomatch"
import { BOX_TOOLS, execIn, type BoxExec, type BoxCommand } from "./box.ts"
import { badRequest, DataplaneError, fileNotFound, readJsonBody, sendJson, unprocessable } from "./errors.ts"
import { assertLimit, boxPath, decodeOrThrow, GlobBody, GrepBody } from "./requests.ts"

export interface FileLimits {
  /** Largest upload, in bytes (default 1 GiB). */
  readonly maxUploadBytes: number
  /** Default and maximum `limit` of glob and grep (defaults 1000 and 10000). */
  readonly searchDefaultLimit: number
  readonly searchMaxLimit: number
  /** Entries a glob or grep may walk before answering `truncated` (default 200000). */
  readonly searchMaxEntries: number
  /** Wall time of a glob or grep before answering `truncated`, in ms (default 20 s). */
  readonly searchDeadlineMs: number
  /** Characters of a grep line's text returned (default 2000). */
  readonly grepMaxLineChars: number
  /** Largest JSON request body (default 1 MiB). */
  readonly maxJsonBytes: number
}

const B = BOX_TOOLS
/** Runs a script under the box's busybox sh; positional arguments are never interpolated into it. */
const tool = (box: BoxExec, script: string, args: ReadonlyArray<string>): BoxCommand =>
  execIn(box, [B, "sh", "-c", `B=${B}\n${script}`, "slipway", ...args])

interface ToolResult {
  readonly code: number
  readonly stdout: Buffer
  readonly stderr: string
}

const collect = async (process: BoxCommand, stdin?: Buffer): Promise<ToolResult> => {
  process.stdin.on("error", () => {})
  process.stdin.end(stdin)
  const out: Array<Buffer> = []
  const err: Array<Buffer> = []
  let errBytes = 0
  process.stdout.on("data", (chunk: Buffer) => out.push(chunk))
  process.stderr.on("data", (chunk: Buffer) => {
    if (errBytes < 8192) err.push(chunk)
    errBytes += chunk.length
  })
  const [{ code, signal }] = await Promise.all([
    process.exited,
    new Promise((resolve) => process.stdout.on("close", resolve)),
    new Promise((resolve) => process.stderr.on("close", resolve))
  ])
  return { code: code ?? (signal ? 128 : -1), stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8").trim().slice(0, 500) }
}

const toolError = (type: "ReadError" | "WriteError", what: string, result: ToolResult) =>
  new DataplaneError(400, type, `${what}${result.stderr ? `: ${result.stderr.replace(/^.*?busybox: |^\S+: /, "")}` : ""}`)

// ---------------------------------------------------------------- stat and download

const STAT = `p="$1"
[ -e "$p" ] || exit 44
[ -d "$p" ] && exit 45
[ -f "$p" ] || exit 46
exec $B stat -L -c '%s %Y %i %y' "$p"`

export interface FileStat {
  readonly size: number
  readonly mtime: number
  readonly etag: string
  readonly lastModified: string
}

export const statFile = async (box: BoxExec, path: string): Promise<FileStat> => {
  const result = await collect(tool(box, STAT, [path]))
  if (result.code === 44) throw fileNotFound(path)
  if (result.code === 45) throw new DataplaneError(400, "ReadError", `Is a directory: ${path}`)
  if (result.code === 46) throw new DataplaneError(400, "ReadError", `Not a regular file: ${path}`)
  const line = result.stdout.toString("utf8").trim()
  const match = /^(\d+) (\d+) (\d+) (.+)$/.exec(line)
  if (result.code !== 0 || !match) throw toolError("ReadError", `Cannot stat ${path}`, result)
  const [size, mtime, inode, precise] = [Number(match[1]), Number(match[2]), match[3]!, match[4]!]
  const etag = `"${createHash("sha256").update(`${size}\0${inode}\0${precise}`).digest("base64url").slice(0, 27)}"`
  return { size, mtime, etag, lastModified: new Date(mtime * 1000).toUTCString() }
}

const READ = `p="$1"
[ -f "$p" ] || exit 44
exec $B dd if="$p" bs=262144 iflag=skip_bytes,count_bytes skip="$2" count="$3" 2>/dev/null`

/** READ for a relayed body: dd's own count on stderr (`N bytes … copied`) says how much went out. */
const READ_COUNTED = `p="$1"
[ -f "$p" ] || exit 44
exec $B dd if="$p" bs=262144 iflag=skip_bytes,count_bytes skip="$2" count="$3"`

/**
 * Bodies from this size on go from the box to the client without passing through this process
 * (`BoxExec.execInto`: a host relay writes them on the connection, which is then closed); smaller
 * ones through the command's stdout, where the relay's start would cost more than it saves.
 */
export const RELAY_MIN_BYTES = 1 << 20

/** The connection a relay may write on: plain HTTP/1.1 over a socket with a descriptor (not TLS, not HTTP/2). */
const relayable = (request: IncomingMessage): boolean => {
  const socket = request.socket as { readonly encrypted?: boolean; readonly _handle?: { readonly fd?: number } }
  return request.httpVersionMajor === 1 && socket.encrypted !== true && typeof socket._handle?.fd === "number" && socket._handle.fd >= 0
}

/**
 * The body (`length` bytes from `start`, the headers already decided) written by the box's relay
 * straight on the connection: Node sends the headers, then stays off the socket until the relay
 * is done; a relay that sent less than `length` bytes cuts the connection (a short body must not
 * look whole). The connection is not reused (`connection: close`).
 */
const relayBody = async (box: BoxExec, request: IncomingMessage, response: ServerResponse, status: number, headers: Record<string, string | number>, path: string, start: number, length: number) => {
  response.writeHead(status, { ...headers, connection: "close" })
  response.flushHeaders()
  const socket = request.socket
  // Every byte Node queued (the headers) reaches the kernel before the relay writes (or the client left).
  if (socket.writableLength > 0) {
    await new Promise<void>((resolve) => {
      const done = () => {
        socket.off("drain", done)
        socket.off("close", done)
        resolve()
      }
      socket.once("drain", done)
      socket.once("close", done)
    })
  }
  if (socket.destroyed) return
  const process = box.execInto!([B, "sh", "-c", `B=${B}\n${READ_COUNTED}`, "slipway", path, String(start), String(length)], socket)
  let stderr = ""
  process.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-2000)))
  response.on("close", () => {
    if (!response.writableFinished) process.kill("SIGKILL")
  })
  const [{ code }] = await Promise.all([process.exited, new Promise((resolve) => process.stderr.once("close", resolve))])
  const copied = [...stderr.matchAll(/(\d+) bytes \(/g)].at(-1)?.[1]
  if (code !== 0 || Number(copied) !== length) {
    response.destroy(new Error(`relayed ${copied ?? "?"} of ${length} bytes (exit ${code}) ${stderr.slice(0, 300)}`))
    return
  }
  // Nothing more to write: the relay sent the body.
  response.end()
}

type Range = { readonly start: number; readonly end: number } | "unsatisfiable" | undefined

/** One `bytes=` range (RFC 9110); several ranges or bad syntax are ignored (whole file), as the RFC allows. */
export const parseRange = (header: string | undefined, size: number): Range => {
  if (!header) return undefined
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (!match || (match[1] === "" && match[2] === "")) return undefined
  if (match[1] === "") {
    const suffix = Number(match[2])
    if (suffix === 0 || size === 0) return "unsatisfiable"
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(match[1])
  const end = match[2] === "" ? size - 1 : Number(match[2])
  if (start >= size) return "unsatisfiable"
  if (end < start) return undefined
  return { start, end: Math.min(end, size - 1) }
}

const etagMatches = (header: string, etag: string) =>
  header.trim() === "*" || header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)

export const download = async (box: BoxExec, request: IncomingMessage, response: ServerResponse, rawPath: string | null): Promise<void> => {
  const path = boxPath(rawPath)
  const stat = await statFile(box, path)
  const headers: Record<string, string | number> = {
    "content-type": "application/octet-stream",
    etag: stat.etag,
    "last-modified": stat.lastModified,
    "accept-ranges": "bytes",
    "cache-control": "no-store"
  }
  const ifNoneMatch = request.headers["if-none-match"]
  if (ifNoneMatch && etagMatches(ifNoneMatch, stat.etag)) {
    response.writeHead(304, { etag: stat.etag, "last-modified": stat.lastModified })
    return void response.end()
  }
  const ifRange = request.headers["if-range"] as string | undefined
  const rangeHonoured = !ifRange || ifRange.trim() === stat.etag || ifRange.trim() === stat.lastModified
  const range = rangeHonoured ? parseRange(request.headers.range, stat.size) : undefined
  if (range === "unsatisfiable") {
    throw new DataplaneError(416, "RangeNotSatisfiable", `Requested range starts past the end of ${path} (${stat.size} bytes)`, {
      "content-range": `bytes */${stat.size}`
    })
  }
  const start = range ? range.start : 0
  const length = range ? range.end - range.start + 1 : stat.size
  if (range) headers["content-range"] = `bytes ${range.start}-${range.end}/${stat.size}`
  headers["content-length"] = length
  if (request.method === "HEAD" || length === 0) {
    response.writeHead(range ? 206 : 200, headers)
    return void response.end()
  }
  if (length >= RELAY_MIN_BYTES && box.execInto && relayable(request)) return relayBody(box, request, response, range ? 206 : 200, headers, path, start, length)
  const process = tool(box, READ, [path, String(start), String(length)])
  process.stdin.on("error", () => {})
  process.stdin.end()
  let sent = 0
  let stderr = ""
  process.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8").slice(0, 500)))
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const room = length - sent
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk
      sent += piece.length
      done(null, piece)
    }
  })
  response.on("close", () => {
    if (!response.writableFinished) process.kill("SIGKILL")
  })
  response.writeHead(range ? 206 : 200, headers)
  try {
    await pipeline(process.stdout, counter, response, { end: false })
  } catch {
    process.kill("SIGKILL")
  }
  const { code } = await process.exited
  if (sent !== length || code !== 0) {
    // The file changed (shrank, vanished) between stat and read: cut the connection so the client cannot take a short body for the file.
    response.destroy(new Error(`read ${sent} of ${length} bytes (exit ${code}) ${stderr}`))
    return
  }
  response.end()
}

// ---------------------------------------------------------------- upload

/** Writes stdin to a temporary file beside the target, then renames it into place (a reader never sees half a file). */
const WRITE = `p="$1"; t="$2"
d=$($B dirname -- "$p")
$B mkdir -p -- "$d" || exit 3
[ -d "$p" ] && exit 4
$B dd bs=262144 status=none of="$t" || { $B rm -f -- "$t"; exit 5; }
$B mv -f -- "$t" "$p" || { $B rm -f -- "$t"; exit 6; }`

const WRITE_ERRORS: Record<number, string> = {
  3: "Cannot create the parent directory of",
  4: "Is a directory:",
  5: "Cannot write",
  6: "Cannot move the upload into place at"
}

export const upload = async (
  box: BoxExec,
  request: IncomingMessage,
  response: ServerResponse,
  rawPath: string | null,
  limits: FileLimits
): Promise<void> => {
  const path = boxPath(rawPath)
  const temp = `${path}.slipway-upload-${randomBytes(6).toString("hex")}`
  let parser: busboy.Busboy
  try {
    // 1 MiB stream buffers (Node's default is 16 KiB): fewer pause/drain cycles per MiB between the parser and the box's writer.
    parser = busboy({ headers: request.headers, highWaterMark: 1 << 20, fileHwm: 1 << 20, limits: { files: 1, fileSize: limits.maxUploadBytes, fields: 16, parts: 32 } })
  } catch (error) {
    throw new DataplaneError(415, "InvalidRequest", `Expected a multipart/form-data body with a 'file' part: ${(error as Error).message}`)
  }
  let writing: Promise<{ written: number; result: ToolResult }> | undefined
  let tooLarge = false
  let aborted = false
  let process: BoxCommand | undefined
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on("file", (name, stream) => {
      if (name !== "file" || writing) return void stream.resume()
      const proc = tool(box, WRITE, [path, temp])
      process = proc
      proc.stdin.on("error", () => {})
      let written = 0
      const result = collectOutput(proc)
      // stdin is ended only when the whole part arrived: a cut-off upload is killed, never renamed into place.
      stream.pipe(proc.stdin, { end: false })
      stream.on("data", (chunk: Buffer) => (written += chunk.length))
      stream.on("limit", () => {
        tooLarge = true
        proc.kill("SIGKILL")
      })
      void proc.exited.then(() => {
        // The writer died early (bad path, killed): drain the rest of the part so the request completes.
        stream.unpipe(proc.stdin)
        stream.resume()
      })
      writing = new Promise<void>((done) => {
        stream.on("end", () => {
          if (tooLarge || aborted) proc.kill("SIGKILL")
          else proc.stdin.end()
          done()
        })
        stream.on("error", () => {
          proc.kill("SIGKILL")
          done()
        })
      }).then(async () => ({ written, result: await result }))
    })
    parser.on("close", resolve)
    parser.on("error", (error: Error) => reject(badRequest(`Malformed multipart body: ${error.message}`)))
  })
  request.on("close", () => {
    if (request.complete) return
    // The client went away mid-upload: stop the writer and fail the parse (busboy would wait forever).
    aborted = true
    process?.kill("SIGKILL")
    parser.destroy(new Error("the client closed the connection"))
  })
  request.pipe(parser)
  try {
    await parsed
  } catch (error) {
    process?.kill("SIGKILL")
    if (writing) await writing
    await cleanup(box, temp)
    throw error
  }
  if (!writing) throw unprocessable("The multipart body has no part named 'file'")
  const { written, result } = await writing
  if (tooLarge) {
    await cleanup(box, temp)
    throw new DataplaneError(413, "WriteError", `Upload is larger than ${limits.maxUploadBytes} bytes`)
  }
  if (result.code !== 0) {
    if (result.code > 128 || result.code < 0) await cleanup(box, temp)
    throw toolError("WriteError", `${WRITE_ERRORS[result.code] ?? "Cannot write"} ${path}`, result)
  }
  sendJson(response, 200, { path, written })
}

const collectOutput = async (process: BoxCommand): Promise<ToolResult> => {
  const err: Array<Buffer> = []
  let errBytes = 0
  process.stdout.resume()
  process.stderr.on("data", (chunk: Buffer) => {
    if (errBytes < 8192) err.push(chunk)
    errBytes += chunk.length
  })
  const { code, signal } = await process.exited
  return { code: code ?? (signal ? 137 : -1), stdout: Buffer.alloc(0), stderr: Buffer.concat(err).toString("utf8").trim().slice(0, 500) }
}

const cleanup = async (box: BoxExec, temp: string) => {
  await collect(tool(box, `$B rm -f -- "$1"`, [temp])).catch(() => undefined)
}

// ---------------------------------------------------------------- glob and grep

/** Streams a tool's stdout as lines (overlong lines cut at `maxLine` bytes), stopping when `onLine` answers false or at the deadline. */
const eachLine = async (
  process: BoxCommand,
  separator: number,
  maxLine: number,
  deadlineMs: number,
  onLine: (line: Buffer) => boolean
): Promise<{ stopped: boolean }> => {
  let stopped = false
  let pending: Array<Buffer> = []
  let pendingBytes = 0
  const stop = () => {
    if (stopped) return
    stopped = true
    process.kill("SIGKILL")
  }
  const timer = setTimeout(stop, deadlineMs)
  process.stderr.resume()
  await new Promise<void>((resolve) => {
    process.stdout.on("data", (chunk: Buffer) => {
      if (stopped) return
      let from = 0
      for (let at = chunk.indexOf(separator); at !== -1; at = chunk.indexOf(separator, from)) {
        const piece = chunk.subarray(from, at)
        const line = pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]).subarray(0, maxLine)
        pending = []
        pendingBytes = 0
        from = at + 1
        if (!onLine(line)) return stop()
      }
      if (from < chunk.length && pendingBytes < maxLine) {
        pending.push(chunk.subarray(from))
        pendingBytes += chunk.length - from
      }
    })
    process.stdout.on("close", resolve)
  })
  await process.exited
  clearTimeout(timer)
  return { stopped }
}

/** Names with a newline are skipped (the listing is line-based); the box's pseudo filesystems are never walked. */
const NEWLINE_FREE = `NL='
'`
const PRUNE = `\\( -path /proc -o -path /sys -o -path /dev -o -path "*$NL*" \\) -prune -o`

const WALK = `r="$1"; shift
[ -e "$r" ] || exit 44
${NEWLINE_FREE}
exec $B find -H "$r" -mindepth 1 "$@" ${PRUNE} -exec $B stat -c '%f %s %Y|%n' {} +`

const relativeTo = (root: string, path: string) => path.slice(root === "/" ? 1 : root.length + 1)

export const glob = async (box: BoxExec, request: IncomingMessage, response: ServerResponse, limits: FileLimits): Promise<void> => {
  const body = decodeOrThrow(GlobBody, "body")(await readJsonBody(request, limits.maxJsonBytes))
  if (body.pattern === "") throw unprocessable("body.pattern: must not be empty")
  const root = boxPath(body.path ?? "/home/user")
  const limit = assertLimit(body.limit, limits.searchDefaultLimit, limits.searchMaxLimit)
  const isMatch = picomatch(body.pattern.replace(/^\.\//, ""), { dot: true })
  const depth = body.pattern.includes("**") ? [] : ["-maxdepth", String(body.pattern.split("/").filter(Boolean).length)]
  const dirCheck = await collect(tool(box, `[ -e "$1" ] || exit 44; [ -d "$1" ] || exit 45`, [root]))
  if (dirCheck.code === 44) throw fileNotFound(root)
  if (dirCheck.code === 45) throw new DataplaneError(400, "ReadError", `Not a directory: ${root}`)
  const matches: Array<{ path: string; is_dir: boolean; size_bytes: number; modified_at: string }> = []
  let truncated = false
  let seen = 0
  const process = tool(box, WALK, [root, ...depth])
  process.stdin.on("error", () => {})
  process.stdin.end()
  const { stopped } = await eachLine(process, 0x0a, 1 << 16, limits.searchDeadlineMs, (raw) => {
    if (++seen > limits.searchMaxEntries) return !(truncated = true)
    const line = raw.toString("utf8")
    const bar = line.indexOf("|")
    const meta = /^([0-9a-f]+) (\d+) (\d+)$/.exec(line.slice(0, bar))
    if (bar < 0 || !meta) return true
    const path = line.slice(bar + 1)
    if (!path.startsWith(root === "/" ? "/" : `${root}/`) || !isMatch(relativeTo(root, path))) return true
    if (matches.length >= limit) return !(truncated = true)
    const mode = parseInt(meta[1]!, 16)
    matches.push({
      path,
      is_dir: (mode & 0o170000) === 0o040000,
      size_bytes: Number(meta[2]),
      modified_at: new Date(Number(meta[3]) * 1000).toISOString()
    })
    return true
  })
  matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  sendJson(response, 200, { matches, truncated: truncated || stopped })
}

const FILES = `r="$1"
[ -e "$r" ] || exit 44
${NEWLINE_FREE}
exec $B find -H "$r" ${PRUNE} -type f -print0`

const GREP = `exec $B xargs -0 $B grep -nHsF -e "$1" --`

export const grep = async (box: BoxExec, request: IncomingMessage, response: ServerResponse, limits: FileLimits): Promise<void> => {
  const body = decodeOrThrow(GrepBody, "body")(await readJsonBody(request, limits.maxJsonBytes))
  if (body.pattern === "") throw unprocessable("body.pattern: must not be empty")
  if (body.pattern.includes("\n") || body.pattern.includes("\0")) throw badRequest("pattern must be a single line of text")
  const root = boxPath(body.path ?? "/home/user")
  const limit = assertLimit(body.limit, limits.searchDefaultLimit, limits.searchMaxLimit)
  // A bare `*.py` matches basenames at any depth; a pattern with `/` matches the path relative to the root.
  const fileGlob = body.glob ? picomatch(body.glob, { dot: true, basename: !body.glob.includes("/") }) : undefined
  const started = Date.now()

  const files: Array<string> = []
  let truncated = false
  const exists = await collect(tool(box, `[ -e "$1" ] || exit 44`, [root]))
  if (exists.code === 44) throw fileNotFound(root)
  const lister = tool(box, FILES, [root])
  lister.stdin.on("error", () => {})
  lister.stdin.end()
  const listed = await eachLine(lister, 0, 1 << 16, limits.searchDeadlineMs, (raw) => {
    if (files.length >= limits.searchMaxEntries) return !(truncated = true)
    const path = raw.toString("utf8")
    const relative = path === root ? path.slice(path.lastIndexOf("/") + 1) : relativeTo(root, path)
    if (!fileGlob || fileGlob(relative)) files.push(path)
    return true
  })
  truncated ||= listed.stopped

  const matches: Array<{ path: string; line: number; text: string }> = []
  if (files.length > 0) {
    const known = new Set(files)
    const searcher = tool(box, GREP, [body.pattern])
    searcher.stdin.on("error", () => {})
    searcher.stdin.end(Buffer.from(files.map((file) => `${file}\0`).join(""), "utf8"))
    const remaining = Math.max(1, limits.searchDeadlineMs - (Date.now() - started))
    const searched = await eachLine(searcher, 0x0a, 1 << 20, remaining, (raw) => {
      const line = raw.toString("utf8")
      // `file:line:text`; file names may hold ':', so take the first split whose file part is a file we listed.
      for (let colon = line.indexOf(":"); colon !== -1; colon = line.indexOf(":", colon + 1)) {
        const file = line.slice(0, colon)
        if (!known.has(file)) continue
        const rest = /^(\d+):/.exec(line.slice(colon + 1))
        if (!rest) continue
        if (matches.length >= limit) return !(truncated = true)
        const text = line.slice(colon + 1 + rest[0].length).replace(/\r$/, "")
        matches.push({ path: file, line: Number(rest[1]), text: text.slice(0, limits.grepMaxLineChars) })
        break
      }
      return true
    })
    truncated ||= searched.stopped
  }
  sendJson(response, 200, { matches, truncated })
}
