/**
 * Stops a test's Slipway server of the local runtime and removes what a failure may have left of
 * it: its replica boxes (seen through a runner of our own on its state directory), its deployments'
 * database servers, a build cache still mounted. Answers the boxes it found still running and the
 * cgroups the stopped server left (a test expects none of either), and the error `close` ended
 * with, if any.
 */
import { execFile } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { removeCgroupParent } from "../../server/runtime/local/cgroups.ts"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { cgroupDirsNamed, makeTestRunner } from "../runtime/local/harness.ts"
import { openDatabases } from "./openDatabases.ts"

/** Fails after `ms` instead of hanging the file. */
export const within = <A>(ms: number, what: string, promise: Promise<A>) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms).unref())])

export const closeLocalServer = async (
  server: { readonly close: () => Promise<void> } | undefined,
  databaseDir: string,
  closeMs = 90_000
): Promise<{ readonly running: ReadonlyArray<string>; readonly leftCgroups: ReadonlyArray<string>; readonly closed: unknown }> => {
  let closed: unknown
  await within(closeMs, "server.close()", server?.close() ?? Promise.resolve()).catch((error) => (closed = error))
  const runtime = join(databaseDir, "runtime")
  // A stopped server leaves no cgroup of its own behind (its boxes', its builds', nor their parents).
  const cgroupParent = cgroupParentFor(runtime)
  const leftCgroups = [...cgroupDirsNamed(cgroupParent), ...cgroupDirsNamed(`${cgroupParent}-builds`)]
  const boxes = join(runtime, "boxes")
  const cleaner = existsSync(boxes) ? await makeTestRunner({ root: boxes, cgroupParent }) : undefined
  const leftover = cleaner ? await cleaner.recover() : { running: [], stopped: [] }
  for (const box of leftover.running) await cleaner!.destroy(box.id).catch(() => undefined)
  await openDatabases({ dataDir: join(runtime, "deployment-data") })
    .then((databases) => databases.close())
    .catch(() => undefined)
  // Build caches are mounted only during builds; an interrupted one may stay.
  const caches = join(runtime, "builds", "caches")
  if (existsSync(caches)) {
    for (const key of readdirSync(caches)) await promisify(execFile)("umount", ["-l", join(caches, key, "mnt")]).catch(() => undefined)
  }
  // Our own runner made the parent again: ours to remove.
  if (cleaner) removeCgroupParent(cleaner.service.limitsMode, cgroupParent)
  return { running: leftover.running.map((box) => box.id), leftCgroups, closed }
}
