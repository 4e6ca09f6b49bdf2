/**
 * Snapshots, the current sandbox model (docs/sandboxes.md, "Snapshots"), under /v2/sandboxes
 * (and /api/v2/sandboxes, the real API's prefix): create (the image is pulled asynchronously:
 * `building` → `ready` or `failed`), get by id or name, list with `name_contains`, delete
 * (refused with 409 ResourceInUse while a sandbox made from it exists), and capture: a running
 * box's filesystem becomes a snapshot.
 */
import { NameParams } from "../sandboxes/model.ts"
import { CaptureSnapshot, CreateSnapshot, ListSnapshotsQuery, Snapshot, SnapshotList, SnapshotParams } from "../sandboxes/snapshots.ts"
import { endpoint } from "./endpoint.ts"

const area = "sandbox"
const tag = "sandboxes"
const base = "/v2/sandboxes"

export const snapshotEndpoints = {
  createSnapshot: endpoint({
    name: "createSnapshot",
    method: "POST",
    path: `${base}/snapshots`,
    area,
    tag,
    summary: "Create a snapshot from an image reference (built asynchronously: poll until status is ready or failed)",
    description:
      "The image is pulled into the server's image store (the one templates use); the snapshot answers `building` until then, then `ready` with `image_digest`, or `failed` with the reason in `status_message`.",
    status: 201,
    body: CreateSnapshot,
    success: Snapshot,
    errors: [409]
  }),
  listSnapshots: endpoint({
    name: "listSnapshots",
    method: "GET",
    path: `${base}/snapshots`,
    area,
    tag,
    summary: "List snapshots, oldest first; name_contains filters by a case-insensitive substring of the name",
    query: ListSnapshotsQuery,
    success: SnapshotList
  }),
  getSnapshot: endpoint({
    name: "getSnapshot",
    method: "GET",
    path: `${base}/snapshots/{snapshot_id}`,
    area,
    tag,
    summary: "Get a snapshot by id or by name (a bare name also finds name:latest)",
    params: SnapshotParams,
    success: Snapshot,
    errors: [404]
  }),
  deleteSnapshot: endpoint({
    name: "deleteSnapshot",
    method: "DELETE",
    path: `${base}/snapshots/{snapshot_id}`,
    area,
    tag,
    summary: "Delete a snapshot by id or name; refused (409 ResourceInUse) while a sandbox made from it exists",
    status: 204,
    params: SnapshotParams,
    errors: [404, 409]
  }),
  captureSnapshot: endpoint({
    name: "captureSnapshot",
    method: "POST",
    path: `${base}/boxes/{name}/snapshot`,
    area,
    tag,
    summary: "Capture a running sandbox's filesystem as a snapshot (built asynchronously, like a create)",
    description:
      "The box's files as it sees them (its image and everything it wrote or deleted) become a local image in the server's image store; boxes made from the snapshot start with them. 400 while the box is not ready; 400 `Unsupported` with `docker_image` (no Docker daemon in boxes).",
    status: 201,
    params: NameParams,
    body: CaptureSnapshot,
    success: Snapshot,
    errors: [400, 404, 409]
  })
} as const
