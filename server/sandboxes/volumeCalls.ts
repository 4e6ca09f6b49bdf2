/**
 * A volume lives on the disk of the replica that created it (docs/replicas.md): growing or
 * deleting it is that replica's work. `onHolder` runs a volume operation there, whichever
 * replica received the request: here when this replica holds it (or there is only one), else as
 * a call to the holder (`POST|DELETE /internal/replicas/volumes/{id}`, with the replicas' shared
 * secret), which `volumeCallsHttp` answers by running the same driver operation.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Effect } from "effect"
import type { RawHttp } from "../module.ts"
import { INTERNAL_PREFIX, Replicas } from "../replicas/Replicas.ts"
import { ClusterStore } from "../store/ClusterStore.ts"
import { SandboxDriver, VolumeError } from "./Driver.ts"

const PATH = `${INTERNAL_PREFIX}volumes/`

export type VolumeOperation = { readonly _tag: "resize"; readonly sizeBytes: bigint } | { readonly _tag: "delete" }

/** Runs a volume operation on the replica that holds the volume. */
export const makeVolumeOperations = Effect.gen(function* () {
  const driver = yield* SandboxDriver
  const replicas = yield* Replicas
  const cluster = yield* ClusterStore
  const here = (volumeId: string, operation: VolumeOperation) =>
    operation._tag === "resize" ? driver.resizeVolume(volumeId, operation.sizeBytes) : driver.deleteVolume(volumeId)
  /** `holderId`: the holder read before the volume's row went (a delete); else read now. */
  return (volumeId: string, operation: VolumeOperation, holderId?: string | null): Effect.Effect<void, VolumeError> =>
    Effect.gen(function* () {
      if (!replicas.shared) return yield* here(volumeId, operation)
      const holder =
        holderId !== undefined ? holderId : (yield* Effect.mapError(cluster.volumeHolders([volumeId]), (error) => new VolumeError({ message: error.message })))[0]?.replica_id
      if (!holder || holder === replicas.self.id) return yield* here(volumeId, operation)
      const answer = yield* replicas
        .call(holder, operation._tag === "resize" ? "POST" : "DELETE", `volumes/${volumeId}`, operation._tag === "resize" ? { size_bytes: String(operation.sizeBytes) } : undefined)
        .pipe(Effect.mapError((error) => new VolumeError({ message: `the volume lives on another replica: ${error.message}` })))
      if (answer.status !== 204) {
        const detail = (answer.body as { detail?: unknown } | undefined)?.detail
        return yield* new VolumeError({ message: typeof detail === "string" ? detail : `the replica that holds the volume answered ${answer.status}` })
      }
    })
})

/** The holder's side: answers calls of other replicas (only requests they forwarded, secret checked). */
export const volumeCallsHttp = Effect.gen(function* () {
  const driver = yield* SandboxDriver
  const replicas = yield* Replicas
  const runFork = Effect.runForkWith(yield* Effect.context<never>())
  const answer = (response: ServerResponse, status: number, detail?: string) => {
    if (detail === undefined) return void response.writeHead(status).end()
    const body = JSON.stringify({ detail })
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
  }
  const readJson = (request: IncomingMessage) =>
    new Promise<unknown>((resolve) => {
      const chunks: Array<Buffer> = []
      let size = 0
      request.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size <= 4096) chunks.push(chunk)
      })
      request.on("end", () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")))
        } catch {
          resolve(undefined)
        }
      })
    })
  return {
    request: (request: IncomingMessage, response: ServerResponse) => {
      const url = request.url ?? "/"
      if (!url.startsWith(PATH) || !replicas.isForwarded(request)) return false
      const volumeId = url.slice(PATH.length)
      const run = (operation: Effect.Effect<void, VolumeError>) =>
        runFork(operation).addObserver((exit) => (exit._tag === "Success" ? answer(response, 204) : answer(response, 503, String((Cause.squash(exit.cause) as Error)?.message ?? "the volume operation failed"))))
      if (!/^[0-9a-f-]{36}$/.test(volumeId)) answer(response, 404, "no such volume")
      else if (request.method === "DELETE") {
        request.resume()
        run(driver.deleteVolume(volumeId))
      } else if (request.method === "POST") {
        void readJson(request).then((body) => {
          const size = (body as { size_bytes?: unknown } | undefined)?.size_bytes
          if (typeof size !== "string" || !/^\d{1,20}$/.test(size)) answer(response, 400, "size_bytes: a whole number of bytes, as a string")
          else run(driver.resizeVolume(volumeId, BigInt(size)))
        })
      } else answer(response, 405, "POST or DELETE")
      return true
    }
  } satisfies RawHttp
})
