/**
 * A box's state directory (`<root>/<id>/`): `box.json` (its spec and host uid, kept while the box
 * exists), `run.json` (its init while it runs: pid, start time, limits mode), `layer.img` and the
 * mount points of its filesystem. Host uids are allocated here, never shared between boxes.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import path from "node:path"
import type { LimitsMode } from "../cgroups.ts"
import { BoxError, type BoxSpec, type Isolation } from "./model.ts"
import { ID } from "./spec.ts"

const UID_BASE = 1_000_000_000
const UID_STEP = 65_536
const UID_SLOTS = 17_000

export interface BoxRecord {
  readonly spec: BoxSpec
  readonly hostUid: number
  /** The isolation the box last ran under (its layer's owners are that isolation's); absent: bwrap. */
  readonly isolation?: Isolation
}

export interface RunRecord {
  readonly pid: number
  readonly startTicks: string
  readonly limitsMode: LimitsMode
  /** The box has the exec helper bound at EXEC_HELPER (boxes started before it existed have not). */
  readonly execHelper?: boolean
  /** gvisor: `pid` is the sandbox's sentry, runsc keeps state of it; absent: bwrap. */
  readonly isolation?: Isolation
}

const readJson = <A>(file: string): A | undefined => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as A
  } catch {
    return undefined
  }
}

export const makeBoxState = (root: string) => {
  const dirOf = (id: string) => path.join(root, id)
  const recordPath = (id: string) => path.join(dirOf(id), "box.json")
  const runPath = (id: string) => path.join(dirOf(id), "run.json")
  const boxIds = () =>
    existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((e) => e.isDirectory() && ID.test(e.name))
          .map((e) => e.name)
      : []
  const readRecord = (id: string) => readJson<BoxRecord>(recordPath(id))

  /** Host uids that own a running process (boxes of another runner on this host included). */
  const uidsInUse = (): Set<number> => {
    const uids = new Set<number>()
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const uid = statSync(`/proc/${entry}`).uid
        if (uid >= UID_BASE) uids.add(uid)
      } catch {
        /* exited meanwhile */
      }
    }
    return uids
  }

  return {
    root,
    dirOf,
    boxIds,
    readRecord,
    writeRecord: (record: BoxRecord) => writeFileSync(recordPath(record.spec.id), JSON.stringify(record, null, 2), { mode: 0o600 }),
    readRun: (id: string) => readJson<RunRecord>(runPath(id)),
    writeRun: (id: string, run: RunRecord) => writeFileSync(runPath(id), JSON.stringify(run), { mode: 0o600 }),
    removeRun: (id: string) => {
      rmSync(runPath(id), { force: true })
      rmSync(path.join(dirOf(id), "ports"), { recursive: true, force: true })
    },
    /** A host uid of the box's own: never one of another box, of this runner (its records) or another (its processes). */
    allocateUid: (id: string): number => {
      const used = new Set<number | undefined>([...boxIds().filter((b) => b !== id).map((b) => readRecord(b)?.hostUid), ...uidsInUse()])
      let h = 0
      for (const c of id) h = (h * 31 + c.charCodeAt(0)) >>> 0
      for (let i = 0; i < UID_SLOTS; i++) {
        const uid = UID_BASE + ((h + i) % UID_SLOTS) * UID_STEP
        if (!used.has(uid)) return uid
      }
      throw new BoxError({ message: "no free box uid" })
    }
  }
}

export type BoxState = ReturnType<typeof makeBoxState>
