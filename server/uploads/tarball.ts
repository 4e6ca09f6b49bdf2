/**
 * Source tarballs (`langgraph deploy --remote` uploads one) are checked before any build sees
 * them, and unpacked only after the same checks. A tarball is refused, naming the entry, when:
 *
 * - it is not gzip, or the gzip holds no valid tar archive (a bad checksum, a truncated entry);
 * - it unpacks to more than `maxUnpackedBytes` (counted as it is decompressed: a gzip bomb stops
 *   there) or holds more than `maxEntries` entries;
 * - an entry's path is absolute or has a `..` component, appears twice, or goes through a
 *   symbolic link of the archive;
 * - an entry is a device node, a FIFO or any other type than file, directory, symbolic link and
 *   hard link;
 * - a symbolic link's target is absolute or leads outside the root, directly or through other
 *   links of the archive (resolved as the file system would, after the whole archive is read);
 * - a hard link does not name a regular file that comes earlier in the archive.
 *
 * Unpacking (node-tar) writes files owned by the server's user, without setuid, setgid or sticky
 * bits, into a directory of its own.
 */
import { createReadStream } from "node:fs"
import { mkdir, open, rm } from "node:fs/promises"
import { dirname } from "node:path"
import { createGunzip } from "node:zlib"
import { Data, Effect } from "effect"
import { Parser, type ReadEntry, Unpack } from "tar"

export interface TarballLimits {
  /** Bytes the tar stream may unpack to (headers included). */
  readonly maxUnpackedBytes: number
  /** Entries (files, directories, links) at most. */
  readonly maxEntries: number
}

export const defaultTarballLimits: TarballLimits = { maxUnpackedBytes: 1024 * 1024 * 1024, maxEntries: 20_000 }

/** Why a tarball is refused; `entry` names the offending entry when there is one. */
export class TarballRefused extends Data.TaggedError("TarballRefused")<{ readonly message: string; readonly entry?: string | undefined }> {}

export interface TarballSummary {
  readonly entries: number
  /** Bytes of regular files. */
  readonly fileBytes: number
}

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b])
const MAX_LINK_HOPS = 40

const quote = (text: string) => JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text)

type Kind = "file" | "directory" | "symlink"

/** Path components of an entry's name: leading `./` and trailing `/` dropped. Undefined when absolute or with `..`. */
const components = (name: string): ReadonlyArray<string> | undefined => {
  if (name.startsWith("/") || name.includes("\0")) return undefined
  const parts = name.split("/").filter((part) => part !== "" && part !== ".")
  return parts.includes("..") ? undefined : parts
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  CharacterDevice: "a device node (character device)",
  BlockDevice: "a device node (block device)",
  FIFO: "a FIFO (named pipe)",
  ContiguousFile: "a contiguous file",
  GNUDumpDir: "a GNU dump directory",
  SparseFile: "a sparse file"
}

/** The checks of one pass over an archive, entry by entry, and of the whole at the end. */
const makeChecker = (limits: TarballLimits) => {
  const kinds = new Map<string, Kind>()
  const links = new Map<string, ReadonlyArray<string>>()
  let entries = 0
  let fileBytes = 0

  /** Whether a symbolic link at `at` to `target` stays inside the root, following the archive's other links. */
  const staysInside = (at: ReadonlyArray<string>, target: string): boolean => {
    if (target.startsWith("/")) return false
    const stack = at.slice(0, -1) as Array<string>
    const pending = target.split("/")
    let hops = 0
    while (pending.length > 0) {
      const part = pending.shift()!
      if (part === "" || part === ".") continue
      if (part === "..") {
        if (stack.length === 0) return false
        stack.pop()
        continue
      }
      stack.push(part)
      const next = links.get(stack.join("/"))
      if (next !== undefined) {
        if (++hops > MAX_LINK_HOPS) return false
        stack.pop()
        if (next.length > 0 && next[0] === "") return false
        pending.unshift(...next)
      }
    }
    return true
  }

  const check = (entry: Pick<ReadEntry, "path" | "type" | "linkpath" | "size">): TarballRefused | undefined => {
    const name = String(entry.path)
    const refuse = (why: string) => new TarballRefused({ message: `entry ${quote(name)} ${why}`, entry: name })
    if (++entries > limits.maxEntries) return new TarballRefused({ message: `the tarball holds more than ${limits.maxEntries} entries`, entry: name })
    const parts = components(name)
    if (parts === undefined) return refuse(name.startsWith("/") ? "has an absolute path" : name.includes("\0") ? "has a NUL in its path" : "has a '..' in its path")
    const path = parts.join("/")
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join("/")
      if (links.has(prefix)) return refuse(`goes through the symbolic link ${quote(prefix)}`)
    }
    if (path === "") {
      return entry.type === "Directory" ? undefined : refuse("replaces the root directory")
    }
    if (kinds.has(path)) return refuse("appears twice")
    switch (entry.type) {
      case "File":
      case "OldFile":
        fileBytes += entry.size ?? 0
        kinds.set(path, "file")
        return undefined
      case "Directory":
        kinds.set(path, "directory")
        return undefined
      case "SymbolicLink": {
        const target = String(entry.linkpath ?? "")
        if (target === "" || target.includes("\0")) return refuse("is a symbolic link without a valid target")
        if (target.startsWith("/")) return refuse(`is a symbolic link to an absolute path (${quote(target)})`)
        if (!staysInside(parts, target)) return refuse(`is a symbolic link that leads outside the archive (${quote(target)})`)
        kinds.set(path, "symlink")
        links.set(path, target.split("/"))
        return undefined
      }
      case "Link": {
        const target = String(entry.linkpath ?? "")
        const targetParts = components(target)
        if (targetParts === undefined) return refuse(`is a hard link that leads outside the archive (${quote(target)})`)
        if (kinds.get(targetParts.join("/")) !== "file") return refuse(`is a hard link to ${quote(target)}, which is not a regular file earlier in the archive`)
        kinds.set(path, "file")
        return undefined
      }
      default:
        return refuse(`is ${TYPE_NAMES[entry.type] ?? `of type ${entry.type}`}: only files, directories and links are allowed`)
    }
  }

  /** Links are checked again once every link of the archive is known (a link may lead through one that came later). */
  const finish = (): TarballRefused | undefined => {
    for (const [path, target] of links) {
      if (!staysInside(path.split("/"), target.join("/"))) {
        return new TarballRefused({ message: `entry ${quote(path)} is a symbolic link that leads outside the archive through other links (${quote(target.join("/"))})`, entry: path })
      }
    }
    return undefined
  }

  return { check, finish, summary: (): TarballSummary => ({ entries, fileBytes }) }
}

/** Why reading failed, for a message: gzip errors as such; anything before the first valid entry means no tar archive at all. */
const describe = (error: unknown, entries: number): string => {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { readonly code?: unknown }).code
  if (typeof code === "string" && code.startsWith("Z_")) return `the tarball is not valid gzip (${message})`
  if (entries === 0 || /TAR_BAD_ARCHIVE/.test(message)) return "the gzip does not hold a complete tar archive"
  return `the tarball is not a valid tar archive (${message.replace(/^TAR_[A-Z_]+: /, "")})`
}

/**
 * Reads `file` (gzip, then tar) through `sink` (a node-tar Parser or Unpack whose filter applies
 * `checker`), stopping at the first refusal or once the stream unpacks past the limit.
 */
const pass = (file: string, limits: TarballLimits, makeSink: (checker: ReturnType<typeof makeChecker>, refuse: (error: TarballRefused) => void) => Parser) =>
  Effect.tryPromise({
    try: async (signal) => {
      const checker = makeChecker(limits)
      let refusal: TarballRefused | undefined
      const sink = makeSink(checker, (error) => {
        refusal ??= error
        sink.abort(new Error(error.message))
      })
      // Settled by whichever comes first: the end, or the first error (a strict parser reports every bad entry).
      const finished = new Promise<void>((resolve, reject) => {
        sink.on("error", (error: Error) => reject(refusal ?? error))
        sink.on("end", () => resolve())
      })
      finished.catch(() => undefined)

      const input = createReadStream(file, { signal })
      const gunzip = createGunzip()
      input.on("error", (error) => gunzip.destroy(error))
      input.pipe(gunzip)
      let unpacked = 0
      try {
        for await (const chunk of gunzip as AsyncIterable<Buffer>) {
          unpacked += chunk.length
          if (unpacked > limits.maxUnpackedBytes) throw new TarballRefused({ message: `the tarball unpacks to more than ${limits.maxUnpackedBytes} bytes` })
          if (refusal) throw refusal
          if (!sink.write(chunk)) await Promise.race([new Promise((resolve) => sink.once("drain", resolve)), finished])
        }
        sink.end()
        await finished
      } catch (error) {
        throw error instanceof TarballRefused ? error : new TarballRefused({ message: describe(error, checker.summary().entries) })
      } finally {
        input.destroy()
        gunzip.destroy()
      }
      if (refusal) throw refusal
      const atEnd = checker.finish()
      if (atEnd) throw atEnd
      return checker.summary()
    },
    catch: (error) => (error instanceof TarballRefused ? error : new TarballRefused({ message: `the tarball cannot be read: ${String(error)}` }))
  })

/** Fails unless `file` starts as gzip does. */
const checkGzip = (file: string) =>
  Effect.tryPromise({
    try: async () => {
      const handle = await open(file, "r")
      try {
        const head = Buffer.alloc(2)
        const { bytesRead } = await handle.read(head, 0, 2, 0)
        return bytesRead === 2 && head.equals(GZIP_MAGIC)
      } finally {
        await handle.close()
      }
    },
    catch: (error) => new TarballRefused({ message: `the tarball cannot be read: ${String(error)}` })
  }).pipe(Effect.flatMap((gzip) => (gzip ? Effect.void : Effect.fail(new TarballRefused({ message: "the tarball is not gzip (upload a .tar.gz)" })))))

/** Checks a stored tarball; answers its size, or why it is refused. */
export const inspectTarball = (file: string, limits: TarballLimits = defaultTarballLimits): Effect.Effect<TarballSummary, TarballRefused> =>
  Effect.andThen(
    checkGzip(file),
    pass(
      file,
      limits,
      (checker, refuse) =>
        new Parser({
          strict: true,
          gzip: false,
          filter: (_path, entry) => {
            const problem = checker.check(entry as ReadEntry)
            if (problem) refuse(problem)
            return false
          }
        })
    )
  )

/**
 * Unpacks a tarball into `directory`, which must not exist yet (it is created; on a refusal it is
 * removed again). The same checks as `inspectTarball` run on every entry before it is written.
 */
export const extractTarball = (file: string, directory: string, limits: TarballLimits = defaultTarballLimits): Effect.Effect<TarballSummary, TarballRefused> =>
  Effect.gen(function* () {
    yield* checkGzip(file)
    yield* Effect.tryPromise({
      try: async () => {
        await mkdir(dirname(directory), { recursive: true })
        await mkdir(directory, { mode: 0o755 })
      },
      catch: (error) => new TarballRefused({ message: `cannot unpack into ${directory}: ${(error as NodeJS.ErrnoException).code === "EEXIST" ? "it exists already" : String(error)}` })
    })
    return yield* pass(
      file,
      limits,
      (checker, refuse) =>
        new Unpack({
          cwd: directory,
          strict: true,
          gzip: false,
          preserveOwner: false,
          filter: (_path, entry) => {
            const read = entry as ReadEntry
            const problem = checker.check(read)
            if (problem) {
              refuse(problem)
              return false
            }
            if (typeof read.mode === "number") read.mode = (read.mode & 0o777) | (read.type === "Directory" ? 0o700 : 0o600)
            return true
          }
        })
    ).pipe(
      // The unpacker's writes already under way finish after its abort: a removal that meets one
      // (ENOTEMPTY) is tried again.
      Effect.tapError(() => Effect.promise(() => rm(directory, { recursive: true, force: true, maxRetries: 20, retryDelay: 10 })))
    )
  })
