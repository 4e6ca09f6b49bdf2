/**
 * Tarball checks and unpacking (server/uploads/tarball.ts) on real files: a tarball made by GNU
 * tar, and hostile ones refused with an error naming the entry.
 */
import { execFileSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { which } from "../../server/runtime/local/tools.ts"
import { extractTarball, inspectTarball, type TarballLimits } from "../../server/uploads/tarball.ts"
import { agentEntries, type TarEntry, tarGzOf, tarOf } from "./tarballs.ts"

let dir: string
let count = 0

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "slipway-tarball-test-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const fileWith = (content: Buffer): string => {
  const file = join(dir, `t${++count}.tar.gz`)
  writeFileSync(file, content)
  return file
}

/** The refusal message of `inspectTarball`, or "accepted". */
/** "accepted", or the refusal's message. */
const outcome = <A>(effect: Effect.Effect<A, { readonly message: string }>): Promise<string> =>
  Effect.runPromise(effect.pipe(Effect.match({ onSuccess: () => "accepted", onFailure: (error) => error.message })))

const refusal = (content: Buffer, limits?: TarballLimits): Promise<string> => outcome(inspectTarball(fileWith(content), limits))

describe("tarball checks", () => {
  it("accepts and unpacks a tarball made by GNU tar, links inside included, without setuid bits", async () => {
    const tar = which("tar")
    if (tar === null) throw new Error("tar not found: install Debian package tar")
    const source = join(dir, "src")
    mkdirSync(join(source, "agent", "lib"), { recursive: true })
    writeFileSync(join(source, "agent", "langgraph.json"), '{"graphs":{}}')
    writeFileSync(join(source, "agent", "lib", "util.py"), "x = 1\n", { mode: 0o4755 })
    symlinkSync("lib/util.py", join(source, "agent", "util.py"))
    execFileSync("ln", [join(source, "agent", "langgraph.json"), join(source, "agent", "copy.json")])
    const file = join(dir, "gnu.tar.gz")
    execFileSync(tar, ["-czf", file, "-C", source, "."])

    const summary = await Effect.runPromise(inspectTarball(file))
    expect(summary.entries).toBe(7)
    const out = join(dir, "gnu-out")
    await Effect.runPromise(extractTarball(file, out))
    expect(readFileSync(join(out, "agent", "langgraph.json"), "utf8")).toBe('{"graphs":{}}')
    expect(readlinkSync(join(out, "agent", "util.py"))).toBe("lib/util.py")
    expect(readFileSync(join(out, "agent", "copy.json"), "utf8")).toBe('{"graphs":{}}')
    expect(statSync(join(out, "agent", "lib", "util.py")).mode & 0o7777).toBe(0o755)
    expect(lstatSync(join(out, "agent", "lib", "util.py")).uid).toBe(process.getuid!())
  })

  it("unpacks only into a directory of its own", async () => {
    const file = fileWith(tarGzOf(agentEntries))
    const out = join(dir, "taken")
    mkdirSync(out)
    expect(await outcome(extractTarball(file, out))).toBe(`cannot unpack into ${out}: it exists already`)
  })

  it("refuses what is not gzip, and gzip that holds no tar archive", async () => {
    expect(await refusal(tarOf(agentEntries))).toBe("the tarball is not gzip (upload a .tar.gz)")
    expect(await refusal(gzipSync(Buffer.from("hello, not a tar archive\n".repeat(100))))).toBe("the gzip does not hold a complete tar archive")
    expect(await refusal(gzipSync(Buffer.alloc(0)))).toBe("the gzip does not hold a complete tar archive")
    expect(await refusal(gzipSync(Buffer.alloc(1024)))).toBe("the gzip does not hold a complete tar archive")
    const truncated = tarOf([{ path: "big", body: Buffer.alloc(4096, 1) }]).subarray(0, 2048)
    expect(await refusal(gzipSync(truncated))).toBe("the gzip does not hold a complete tar archive")
    expect(await refusal(tarGzOf(agentEntries).subarray(0, 60))).toBe("the tarball is not valid gzip (unexpected end of file)")
    const corrupt = tarGzOf(agentEntries)
    corrupt[20] ^= 0xff
    expect(await refusal(corrupt)).toMatch(/^the tarball is not valid gzip \(.+\)$/)
  })

  const hostile: ReadonlyArray<[string, ReadonlyArray<TarEntry>, string]> = [
    ["an absolute path", [{ path: "/etc/cron.d/evil", body: "x" }], 'entry "/etc/cron.d/evil" has an absolute path'],
    ["a .. component", [{ path: "agent/../../evil", body: "x" }], `entry "agent/../../evil" has a '..' in its path`],
    ["a symbolic link out", [{ path: "agent/", type: "Directory" }, { path: "agent/out", type: "SymbolicLink", linkpath: "../../etc" }], 'entry "agent/out" is a symbolic link that leads outside the archive ("../../etc")'],
    ["a symbolic link to an absolute path", [{ path: "passwd", type: "SymbolicLink", linkpath: "/etc/passwd" }], 'entry "passwd" is a symbolic link to an absolute path ("/etc/passwd")'],
    [
      "a symbolic link out through another link",
      [{ path: "d/", type: "Directory" }, { path: "d/l", type: "SymbolicLink", linkpath: ".." }, { path: "d/m", type: "SymbolicLink", linkpath: "l/.." }],
      'entry "d/m" is a symbolic link that leads outside the archive ("l/..")'
    ],
    [
      "a symbolic link out through a link that comes later",
      [{ path: "d/", type: "Directory" }, { path: "d/m", type: "SymbolicLink", linkpath: "l/.." }, { path: "d/l", type: "SymbolicLink", linkpath: ".." }],
      'entry "d/m" is a symbolic link that leads outside the archive through other links ("l/..")'
    ],
    ["a write through a symbolic link", [{ path: "s", type: "SymbolicLink", linkpath: "sub" }, { path: "s/file", body: "x" }], 'entry "s/file" goes through the symbolic link "s"'],
    ["a hard link out", [{ path: "h", type: "Link", linkpath: "../etc/passwd" }], 'entry "h" is a hard link that leads outside the archive ("../etc/passwd")'],
    ["a hard link to an absolute path", [{ path: "h", type: "Link", linkpath: "/etc/shadow" }], 'entry "h" is a hard link that leads outside the archive ("/etc/shadow")'],
    [
      "a hard link to a symbolic link",
      [{ path: "s", type: "SymbolicLink", linkpath: "f" }, { path: "f", body: "x" }, { path: "h", type: "Link", linkpath: "s" }],
      'entry "h" is a hard link to "s", which is not a regular file earlier in the archive'
    ],
    ["a character device", [{ path: "null", type: "CharacterDevice" }], 'entry "null" is a device node (character device): only files, directories and links are allowed'],
    ["a block device", [{ path: "sda", type: "BlockDevice" }], 'entry "sda" is a device node (block device): only files, directories and links are allowed'],
    ["a FIFO", [{ path: "pipe", type: "FIFO" }], 'entry "pipe" is a FIFO (named pipe): only files, directories and links are allowed'],
    ["an entry twice", [{ path: "a", body: "1" }, { path: "./a", body: "2" }], 'entry "./a" appears twice']
  ]
  for (const [what, entries, message] of hostile) {
    it(`refuses ${what}, naming the entry, before and while unpacking`, async () => {
      const content = tarGzOf(entries)
      expect(await refusal(content)).toBe(message)
      const out = join(dir, `out-${++count}`)
      expect(await outcome(extractTarball(fileWith(content), out))).toBe(message)
      expect(existsSync(out)).toBe(false)
    })
  }

  it("refuses too many entries and an archive that unpacks past its limit", async () => {
    const many = Array.from({ length: 11 }, (_, i) => ({ path: `f${i}`, body: "x" }))
    expect(await refusal(tarGzOf(many.slice(0, 10)), { maxEntries: 10, maxUnpackedBytes: 1024 ** 2 })).toBe("accepted")
    expect(await refusal(tarGzOf(many), { maxEntries: 10, maxUnpackedBytes: 1024 ** 2 })).toBe("the tarball holds more than 10 entries")
    // 4 MiB of zeros compress to a few KiB: counted as decompressed.
    const bomb = tarGzOf([{ path: "zeros", body: Buffer.alloc(4 * 1024 ** 2) }])
    expect(bomb.length).toBeLessThan(64 * 1024)
    expect(await refusal(bomb, { maxEntries: 10, maxUnpackedBytes: 1024 ** 2 })).toBe("the tarball unpacks to more than 1048576 bytes")
  })
})
