/**
 * Tarballs for the upload tests, hostile ones included, written header by header with node-tar's
 * `Header` (which encodes whatever it is given: absolute paths, `..`, device nodes).
 */
import { gzipSync } from "node:zlib"
import { Header } from "tar"

export interface TarEntry {
  readonly path: string
  readonly type?: "File" | "Directory" | "SymbolicLink" | "Link" | "CharacterDevice" | "BlockDevice" | "FIFO"
  readonly linkpath?: string
  readonly body?: string | Buffer
  readonly mode?: number
}

/** The tar archive (not compressed) of `entries`, in order. */
export const tarOf = (entries: ReadonlyArray<TarEntry>): Buffer => {
  const blocks: Array<Buffer> = []
  for (const entry of entries) {
    const type = entry.type ?? "File"
    const body = typeof entry.body === "string" ? Buffer.from(entry.body) : (entry.body ?? Buffer.alloc(0))
    const header = new Header({
      path: entry.path,
      type,
      mode: entry.mode ?? (type === "Directory" ? 0o755 : 0o644),
      size: type === "File" ? body.length : 0,
      mtime: new Date(0),
      uid: 1000,
      gid: 1000,
      ...(entry.linkpath !== undefined ? { linkpath: entry.linkpath } : {}),
      ...(type === "CharacterDevice" || type === "BlockDevice" ? { devmaj: 1, devmin: 3 } : {})
    })
    const block = Buffer.alloc(512)
    header.encode(block, 0)
    blocks.push(block)
    if (type === "File" && body.length > 0) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512))
    }
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

export const tarGzOf = (entries: ReadonlyArray<TarEntry>): Buffer => gzipSync(tarOf(entries))

/** A small agent's source, as `langgraph deploy --remote` packs one. */
export const agentEntries: ReadonlyArray<TarEntry> = [
  { path: "./", type: "Directory" },
  { path: "agent/", type: "Directory" },
  { path: "agent/langgraph.json", body: JSON.stringify({ dependencies: ["."], graphs: { agent: "./agent.py:graph" } }) },
  { path: "agent/agent.py", body: "graph = None\n" },
  { path: "agent/run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o4755 }
]
