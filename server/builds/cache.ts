/**
 * A deployment's build cache: buildah's storage (the layer cache and the images kept), the
 * package managers' caches and the build's scratch space, on a filesystem of its own — a sparse
 * file holding btrfs, loop-mounted for the time of a build — so a build can never use more disk
 * than SLIPWAY_BUILD_DISK, and the host only ever holds what is used (mounted with discard, a
 * freed block goes back to the host).
 *
 *   <root>/caches/<key>/disk.img      the filesystem
 *   <root>/caches/<key>/owner.json    { hostUid, createdAt }: the host uids its files belong to
 *   <root>/caches/<key>/used          touched by every build (least recently used goes first)
 *   <root>/caches/<key>/mnt/          mount point during a build
 *   <root>/caches/<key>/export/       an OCI layout of the images kept (uncompressed layers): an
 *                                     export writes only the layers it lacks, and a build's result
 *                                     is hard links into it (written only by skopeo, never by a build step)
 *
 * Each cache has its own range of 65536 host uids (`hostUid`..+65535) above 800 000 000, below
 * the boxes' range: root in its builds is `hostUid`, an unprivileged host user owning nothing
 * else.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import { join } from "node:path"
import { Effect, Schedule, type Scope } from "effect"
import { type CommandFailed, HOST_ENV, type ProcessRunner } from "../runtime/ProcessRunner.ts"

export const BUILD_UID_BASE = 800_000_000
export const BUILD_UID_RANGE = 65_536
/** Slots of 65536 uids from BUILD_UID_BASE, below the boxes' 1 000 000 000. */
export const BUILD_UID_SLOTS = 3000

const KEY_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

export const isCacheKey = (key: string): boolean => KEY_RE.test(key)

export interface CacheInfo {
  readonly key: string
  readonly hostUid: number
  /** Bytes the cache's file holds on the host disk. */
  readonly diskBytes: number
  /** When a build last used it (epoch ms). */
  readonly lastUsed: number
}

/** Subdirectories of a mounted cache, each owned by the cache's root. */
export const CACHE_DIRS = ["storage", "tmp", "home", "pkg", "pkg/npm", "pkg/yarn", "pkg/pnpm", "pkg/pip", "pkg/uv"] as const

const cacheDir = (root: string, key: string) => join(root, "caches", key)

const readOwner = (dir: string): number | undefined => {
  try {
    const owner = JSON.parse(readFileSync(join(dir, "owner.json"), "utf8")) as { hostUid?: unknown }
    return typeof owner.hostUid === "number" && Number.isInteger(owner.hostUid) ? owner.hostUid : undefined
  } catch {
    return undefined
  }
}

/** Bytes of the blobs of an OCI layout (0 when absent). */
const blobBytes = (layout: string): number => {
  let total = 0
  try {
    const base = join(layout, "blobs", "sha256")
    for (const name of readdirSync(base)) total += statSync(join(base, name)).blocks * 512
  } catch {
    // no layout yet
  }
  return total
}

/** Every cache on disk. */
export const listCaches = (root: string): ReadonlyArray<CacheInfo> => {
  const base = join(root, "caches")
  if (!existsSync(base)) return []
  const out: Array<CacheInfo> = []
  for (const key of readdirSync(base)) {
    if (!isCacheKey(key)) continue
    const dir = join(base, key)
    const hostUid = readOwner(dir)
    if (hostUid === undefined) continue
    let diskBytes = 0
    let lastUsed = 0
    try {
      diskBytes = statSync(join(dir, "disk.img")).blocks * 512
    } catch {
      // no filesystem yet
    }
    diskBytes += blobBytes(join(dir, "export"))
    try {
      lastUsed = statSync(join(dir, "used")).mtimeMs
    } catch {
      lastUsed = 0
    }
    out.push({ key, hostUid, diskBytes, lastUsed })
  }
  return out
}

/** The cache's uid range: kept when it exists, else the first free slot from the key's hash. Call under one lock. */
const allocateUid = (root: string, key: string): number => {
  const dir = cacheDir(root, key)
  const existing = readOwner(dir)
  if (existing !== undefined) return existing
  const used = new Set(listCaches(root).map((c) => c.hostUid))
  const h = createHash("sha256").update(key).digest().readUInt32BE(0)
  for (let i = 0; i < BUILD_UID_SLOTS; i++) {
    const uid = BUILD_UID_BASE + ((h + i) % BUILD_UID_SLOTS) * BUILD_UID_RANGE
    if (!used.has(uid)) {
      mkdirSync(dir, { recursive: true, mode: 0o711 })
      writeFileSync(join(dir, "owner.json"), JSON.stringify({ hostUid: uid, createdAt: new Date().toISOString() }) + "\n")
      return uid
    }
  }
  throw new Error(`no free uid range for another build cache (${BUILD_UID_SLOTS} caches exist)`)
}

export interface MountedCache {
  readonly key: string
  readonly hostUid: number
  /** Host path of the mounted filesystem (holds CACHE_DIRS). */
  readonly path: string
  /** Host path of the cache's OCI layout of exported images. */
  readonly exportLayout: string
}

const run = (runner: ProcessRunner["Service"], argv: ReadonlyArray<string>) =>
  runner.run(argv, { cleanEnv: true, env: HOST_ENV, timeout: "2 minutes" })

/**
 * Mounts the cache of `key` (creating it, `sizeBytes` large, the first time) until the scope
 * closes. `allocate` serialises uid allocation across builds.
 */
export const mountCache = (
  runner: ProcessRunner["Service"],
  root: string,
  key: string,
  sizeBytes: number,
  allocate: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
): Effect.Effect<MountedCache, Error, Scope.Scope> =>
  Effect.gen(function*(): Effect.fn.Return<MountedCache, Error | CommandFailed, Scope.Scope> {
    const dir = cacheDir(root, key)
    const hostUid = yield* allocate(Effect.try({ try: () => allocateUid(root, key), catch: (e) => e as Error }))
    const image = join(dir, "disk.img")
    const mnt = join(dir, "mnt")
    yield* Effect.try({
      try: () => {
        chmodSync(dir, 0o711)
        mkdirSync(mnt, { recursive: true, mode: 0o700 })
        const now = new Date()
        writeFileSync(join(dir, "used"), "")
        utimesSync(join(dir, "used"), now, now)
      },
      catch: (e) => e as Error
    })
    const isMounted = run(runner, ["findmnt", "-n", "-o", "TARGET", "--mountpoint", mnt]).pipe(
      Effect.map((r) => r.stdout.trim() !== ""),
      Effect.orElseSucceed(() => false)
    )
    if (!existsSync(image)) {
      const fresh = `${image}.new`
      yield* Effect.try({ try: () => writeFileSync(fresh, ""), catch: (e) => e as Error })
      yield* run(runner, ["truncate", "-s", String(sizeBytes), fresh])
      yield* run(runner, ["mkfs.btrfs", "-q", fresh])
      yield* run(runner, ["mv", "-f", fresh, image])
    } else if (statSync(image).size < sizeBytes) {
      // The setting grew: the file grows now, the filesystem once mounted.
      yield* run(runner, ["truncate", "-s", String(sizeBytes), image])
    }
    // Mounted for this build (a mount left by a crashed server is adopted), unmounted after it.
    yield* Effect.acquireRelease(
      Effect.gen(function*() {
        if (!(yield* isMounted)) yield* run(runner, ["mount", "-o", "loop,discard=async,noatime,nodev,nosuid", image, mnt])
      }),
      () =>
        // Freed blocks go back to the host file now (discard=async would get there later); the
        // sync commits btrfs's transaction first, which is when deleted extents become free.
        run(runner, ["sync", "-f", mnt]).pipe(Effect.andThen(run(runner, ["fstrim", mnt]))).pipe(
          Effect.ignore,
          Effect.andThen(
            run(runner, ["umount", mnt]).pipe(
              // Busy while the sandbox's last processes die: retried, then detached lazily.
              Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 30 }),
              Effect.catch(() => run(runner, ["umount", "-l", mnt])),
              Effect.ignore
            )
          )
        )
    )
    yield* run(runner, ["btrfs", "filesystem", "resize", "max", mnt]).pipe(Effect.ignore)
    yield* Effect.try({
      try: () => {
        chownSync(mnt, hostUid, hostUid)
        chmodSync(mnt, 0o700)
        for (const sub of CACHE_DIRS) {
          const p = join(mnt, sub)
          if (!existsSync(p)) mkdirSync(p, { mode: 0o755 })
          chownSync(p, hostUid, hostUid)
        }
      },
      catch: (e) => e as Error
    })
    const exportLayout = join(dir, "export")
    yield* Effect.try({
      try: () => {
        if (!existsSync(exportLayout)) mkdirSync(exportLayout, { mode: 0o700 })
        chownSync(exportLayout, hostUid, hostUid)
      },
      catch: (e) => e as Error
    })
    return { key, hostUid, path: mnt, exportLayout }
  }).pipe(Effect.mapError((e) => (e instanceof Error ? e : new Error(String((e as { message?: string }).message ?? e)))))

/** Deletes a cache that is not mounted (its images, layers and package caches). */
export const removeCache = (root: string, key: string): void => {
  rmSync(cacheDir(root, key), { recursive: true, force: true })
}
