/**
 * What a test of a local-runtime server sets and leaves: `setEnv` sets settings in `process.env`
 * for the file and answers the function that restores them; `removeLeftovers` (in `afterAll`,
 * after the server closed) destroys the boxes a failure left running, stops the deployments'
 * database servers and unmounts build caches, and answers the ids of the boxes it found running.
 */
import { execFile } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { makeTestRunner } from "../runtime/local/harness.ts"
import { openDatabases } from "./openDatabases.ts"

export const setEnv = (values: Readonly<Record<string, string>>): (() => void) => {
  const saved = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]))
  Object.assign(process.env, values)
  return () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  }
}

/** `databaseDir` is the directory of the server's database (its runtime lives in `runtime/` there). */
export const removeLeftovers = async (databaseDir: string): Promise<ReadonlyArray<string>> => {
  const runtime = join(databaseDir, "runtime")
  const boxes = join(runtime, "boxes")
  const cleaner = existsSync(boxes) ? await makeTestRunner({ root: boxes, cgroupParent: cgroupParentFor(runtime) }) : undefined
  const running = cleaner ? (await cleaner.recover()).running : []
  for (const box of running) await cleaner!.destroy(box.id).catch(() => undefined)
  await openDatabases({ dataDir: join(runtime, "deployment-data") })
    .then((databases) => databases.close())
    .catch(() => undefined)
  // Build caches stay mounted only during builds; a failure may leave one.
  const caches = join(runtime, "builds", "caches")
  if (existsSync(caches)) for (const key of readdirSync(caches)) await promisify(execFile)("umount", ["-l", join(caches, key, "mnt")]).catch(() => undefined)
  return running.map((box) => box.id)
}
