/**
 * Snapshots, the current sandbox model's unit (docs/sandboxes.md, "Snapshots"): a named image
 * reference plus a filesystem capacity. The server pulls the image into the same image store
 * templates use (`building` → `ready`, or `failed` with the reason in `status_message`); boxes
 * made from a snapshot run that image with a writable layer of that capacity.
 */
import { Schema } from "effect"
import { doc, pageQueryFields, type PageBounds, Timestamp, Uuid } from "../api/common.ts"
import { Int, rule, ruleOf } from "../api/validation.ts"
import { FsCapacityBytes, Image } from "./model.ts"

export const maxSnapshotNameLength = 255
/** Lists of snapshots: limit 1–500, default 50 (as the real API documents). */
export const snapshotPage: PageBounds = { maxLimit: 500, defaultLimit: 50 }

const component = "[a-z0-9]+(?:[._-][a-z0-9]+)*"
const snapshotNamePattern = new RegExp(`^${component}(?:/${component})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$`)

/** Why `name` is not a snapshot name, or undefined when it is one. */
export const snapshotNameProblem = (name: string): string | undefined => {
  if (name.length < 1 || name.length > maxSnapshotNameLength) return `must be 1 to ${maxSnapshotNameLength} characters`
  if (!snapshotNamePattern.test(name)) {
    return "must be lowercase registry-style components ([a-z0-9] separated by '.', '_' or '-') joined by '/', with an optional ':tag'"
  }
  if (name === "system" || name.startsWith("system/")) return "the system/ namespace is read-only"
  return undefined
}

export const SnapshotName = Schema.String.annotate({
  description: "Lowercase registry-style components joined by '/', with an optional ':tag' (at most 255 characters; system/ is read-only)",
  examples: ["python-tools", "team/agent:v2"]
}).check(ruleOf(snapshotNameProblem, "value_error"))

/** The names a `snapshot_name` reference may resolve to, in order: itself, then `name:latest` for a bare name. */
export const snapshotNameCandidates = (reference: string): ReadonlyArray<string> => {
  const lastSegment = reference.slice(reference.lastIndexOf("/") + 1)
  if (lastSegment.includes(":")) return reference.endsWith(":latest") ? [reference, reference.slice(0, -":latest".length)] : [reference]
  return [reference, `${reference}:latest`]
}

export const snapshotStatuses = ["building", "ready", "failed"] as const
export const SnapshotStatus = Schema.Literals(snapshotStatuses)

export const Snapshot = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The snapshot's name, unique per tenant", ["python-tools:v1"]),
  docker_image: doc(Schema.String, "The OCI image the snapshot was built from (for a capture: the image of the captured box)", ["python:3.12-slim"]),
  /** The manifest digest the image resolved to when the snapshot was built; null until then (and on the simulated runtime). */
  image_digest: doc(Schema.NullOr(Schema.String), "The manifest digest the image resolved to when built; null until ready, and on a runtime without images", [
    "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
  ]),
  fs_capacity_bytes: Int,
  status: SnapshotStatus,
  /** Why the build failed, or what it is doing; null when there is nothing to say. */
  status_message: doc(Schema.NullOr(Schema.String), "What the build is doing, or why it failed; null when there is nothing to say", ["pulling image python:3.12-slim"]),
  /** The sandbox a captured snapshot was made from (absent for one built from an image reference). */
  source_sandbox_id: Schema.optionalKey(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Snapshot" })
export type Snapshot = typeof Snapshot.Type

export const SnapshotList = Schema.Struct({ snapshots: Schema.Array(Snapshot), offset: Int }).annotate({ identifier: "SnapshotList" })

export const CreateSnapshot = Schema.Struct({
  name: SnapshotName,
  docker_image: Image,
  fs_capacity_bytes: FsCapacityBytes
}).annotate({ identifier: "CreateSnapshot" })
export type CreateSnapshot = typeof CreateSnapshot.Type

/**
 * `POST /boxes/{name}/snapshot`: captures a running box's filesystem. `fs_capacity_bytes`
 * defaults to the box's; `docker_image` (an image built by a Docker daemon inside the box) is
 * refused: Slipway's boxes have none.
 */
export const CaptureSnapshot = Schema.Struct({
  name: SnapshotName,
  fs_capacity_bytes: Schema.optionalKey(Schema.NullOr(FsCapacityBytes)),
  docker_image: Schema.optionalKey(
    doc(Schema.NullOr(Schema.String), "An image built by a Docker daemon inside the box: refused with 400 Unsupported (boxes run no Docker daemon); omit it", [null])
  )
}).annotate({ identifier: "CaptureSnapshot" })

export const ListSnapshotsQuery = Schema.Struct({
  name_contains: Schema.optionalKey(Schema.String.check(rule((text: string) => text.length <= maxSnapshotNameLength, `must be at most ${maxSnapshotNameLength} characters`, "string_too_long"))),
  status: Schema.optionalKey(SnapshotStatus),
  ...pageQueryFields(snapshotPage)
})

/** `{snapshot_id}`: a snapshot's id, or its name (a bare name also finds `name:latest`). */
export const SnapshotParams = Schema.Struct({ snapshot_id: Schema.String })
