/**
 * A replica's identity: a new id per process (`host:pid:random`, also its revision leases'
 * owner), and what the data directory says of the process that used it before. The data
 * directory (beside the database file) keeps `replica.json`: the id, pid and start time of the
 * last process that ran on it. When that process is gone (a crash, a SIGKILL, a clean stop),
 * it is this process's predecessor: what it ran (boxes, deployments, volumes, leases) is this
 * process's to adopt at once, without waiting for its lease to expire. When it still runs,
 * another live server shares the directory (`sharedWith`): with the local runtime that is
 * refused (both would run the same boxes).
 */
import { randomBytes } from "node:crypto"
import { readFileSync, renameSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { isFileDatabase, stateDir } from "../dataDir.ts"
import { makeDirectory } from "../directories.ts"
import { processAlive, processStartTicks } from "../runtime/local/host.ts"

export interface ReplicaIdentity {
  readonly id: string
  /** The id of the dead process that used this data directory last. */
  readonly predecessor: string | undefined
  /** The pid of a live process that uses this data directory too. */
  readonly sharedWith: number | undefined
}

interface Record_ {
  readonly id: string
  readonly pid: number
  readonly startTicks: string
}

/** The file naming the last process on a data directory. */
export const replicaFile = (databasePath: string): string => join(stateDir(databasePath, "."), "replica.json")

const readRecord = (file: string): Record_ | undefined => {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<Record_>
    return typeof parsed.id === "string" && typeof parsed.pid === "number" && typeof parsed.startTicks === "string" ? (parsed as Record_) : undefined
  } catch {
    return undefined
  }
}

/** This process's identity on the data directory of `databasePath` (recorded there for the next process). */
export const resolveReplicaIdentity = (databasePath: string): ReplicaIdentity => {
  const id = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`
  if (!isFileDatabase(databasePath)) return { id, predecessor: undefined, sharedWith: undefined }
  const file = replicaFile(databasePath)
  makeDirectory(stateDir(databasePath, "."))
  const previous = readRecord(file)
  const alive = previous !== undefined && previous.pid !== process.pid && processAlive(previous.pid, previous.startTicks)
  const record: Record_ = { id, pid: process.pid, startTicks: processStartTicks(process.pid) ?? "" }
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600 })
  renameSync(temporary, file)
  return { id, predecessor: previous !== undefined && !alive ? previous.id : undefined, sharedWith: alive ? previous.pid : undefined }
}
