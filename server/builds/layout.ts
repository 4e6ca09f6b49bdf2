/**
 * OCI image layouts on the host side: a deployment's export layout holds its kept images (tagged by
 * revision, uncompressed layers shared between them); a build's result is a layout of its own
 * holding one image, made of hard links into the export layout (a copy across filesystems).
 */
import { chownSync, copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

interface Descriptor {
  readonly mediaType?: string
  readonly digest: string
  readonly size?: number
  readonly annotations?: Record<string, string>
}
interface Index {
  readonly schemaVersion: number
  readonly manifests: ReadonlyArray<Descriptor>
}

const REF_NAME = "org.opencontainers.image.ref.name"
const DIGEST_RE = /^sha256:[a-f0-9]{64}$/

const blobPath = (layout: string, digest: string) => {
  if (!DIGEST_RE.test(digest)) throw new Error(`unexpected digest ${JSON.stringify(digest)} in ${layout}`)
  return join(layout, "blobs", "sha256", digest.slice(7))
}

const readIndex = (layout: string): Index => JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as Index

/** The blobs one manifest needs: itself, its config, its layers. */
const blobsOf = (layout: string, manifest: Descriptor): Array<string> => {
  const doc = JSON.parse(readFileSync(blobPath(layout, manifest.digest), "utf8")) as { config: Descriptor; layers?: ReadonlyArray<Descriptor> }
  return [manifest.digest, doc.config.digest, ...(doc.layers ?? []).map((l) => l.digest)]
}

/** The manifest tagged `tag` in `layout`. */
export const manifestOf = (layout: string, tag: string): Descriptor => {
  const entry = readIndex(layout).manifests.find((m) => m.annotations?.[REF_NAME] === tag)
  if (!entry) throw new Error(`no image tagged ${tag} in ${layout}`)
  return entry
}

/** Writes a layout at `dest` (which must not exist) holding only the image tagged `tag` of `source`. */
export const extractImage = (source: string, tag: string, dest: string): Descriptor => {
  const manifest = manifestOf(source, tag)
  mkdirSync(join(dest, "blobs", "sha256"), { recursive: true })
  for (const digest of new Set(blobsOf(source, manifest))) {
    const from = blobPath(source, digest)
    const to = blobPath(dest, digest)
    try {
      linkSync(from, to)
    } catch {
      copyFileSync(from, to)
    }
  }
  writeFileSync(join(dest, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }))
  writeFileSync(join(dest, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }))
  return manifest
}

/** Keeps the images tagged `keep` in `layout` and deletes every blob none of them needs. */
export const gcLayout = (layout: string, keep: ReadonlySet<string>, owner: number): void => {
  if (!existsSync(join(layout, "index.json"))) return
  const index = readIndex(layout)
  const kept = index.manifests.filter((m) => keep.has(m.annotations?.[REF_NAME] ?? ""))
  const needed = new Set(kept.flatMap((m) => blobsOf(layout, m)))
  const next = join(layout, "index.json.new")
  writeFileSync(next, JSON.stringify({ ...index, manifests: kept }), { mode: 0o644 })
  chownSync(next, owner, owner)
  renameSync(next, join(layout, "index.json"))
  const base = join(layout, "blobs", "sha256")
  for (const name of readdirSync(base)) if (!needed.has(`sha256:${name}`)) rmSync(join(base, name), { force: true })
}
