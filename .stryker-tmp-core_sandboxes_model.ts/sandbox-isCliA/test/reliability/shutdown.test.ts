/**
 * Graceful shutdown of `node server/main.ts`: on SIGTERM (and SIGINT) the server stops accepting
 * connections, finishes the requests already in flight (their bodies still arriving when the
 * signal lands), closes the database cleanly (the WAL checkpointed into the main file: the -wal
 * file is empty or gone) and exits 0. Idle keep-alive connections do not hold it up.
 */
// @ts-nocheck

import { Agent, request as httpRequest } from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import { type ChildServer, eventually, spawnServer, tempDatabasePath, TEST_KEY } from "../support/server.ts"
import { integrityCheck, refusesConnections, sleep, slowRequest, stopChild, walSize, withDatabase } from "./support.ts"

let child: ChildServer | undefined
let database: ReturnType<typeof tempDatabasePath> | undefined
afterEach(async () => {
  await stopChild(child)
  child = undefined
  database?.remove()
  database = undefined
})

const jsonHeaders = { "content-type": "application/json", "x-api-key": TEST_KEY }

const timed = async <A>(promise: Promise<A>): Promise<{ value: A; ms: number }> => {
  const started = performance.now()
  const value = await promise
  return { value, ms: performance.now() - started }
}

describe("SIGTERM", () => {
  it("stops accepting, finishes in-flight requests, checkpoints the WAL and exits 0", async () => {
    database = tempDatabasePath("slipway-shutdown")
    child = await spawnServer({ databasePath: database.path })
    const server = child
    // Committed work that is still only in the WAL.
    for (let i = 0; i < 20; i++) {
      const response = await server.request("POST", "/v2/sandboxes/volumes", { body: { name: `before-${i}`, size: "1Gi" } })
      expect(response.status).toBe(201)
    }
    expect(walSize(database.path)).toBeGreaterThan(0)

    // Requests in flight when the signal lands: headers and half of the body are sent.
    const inFlight = [0, 1, 2].map((i) =>
      slowRequest(server.url, "POST", "/v2/sandboxes/volumes", JSON.stringify({ name: `in-flight-${i}`, size: "2Gi" }), jsonHeaders)
    )
    const slowTemplate = slowRequest(server.url, "POST", "/v2/sandboxes/templates", JSON.stringify({ name: "in-flight-template", image: "python:3.12" }), jsonHeaders)
    await Promise.all([...inFlight, slowTemplate].map((request) => request.started))
    await sleep(100)

    server.process.kill("SIGTERM")
    await eventually(async () => ((await refusesConnections(server.url)) ? true : undefined), 5_000)
    // Still draining: the server waits for the bodies it is reading.
    expect(server.process.exitCode).toBe(null)
    await sleep(200)
    expect(server.process.exitCode).toBe(null)

    const answers = await Promise.all([...inFlight, slowTemplate].map((request) => request.finish()))
    for (const answer of answers) expect(answer.status, answer.body).toBe(201)
    const { value: code, ms } = await timed(server.exited)
    expect(code).toBe(0)
    expect(ms).toBeLessThan(3_000)
    expect(server.output()).not.toMatch(/shutdown failed|unhandled/i)

    // Closed cleanly: nothing left in the WAL, the file is whole and holds every acknowledged write.
    expect(walSize(database.path)).toBe(0)
    expect(integrityCheck(database.path)).toEqual(["ok"])
    child = await spawnServer({ databasePath: database.path })
    for (const name of ["before-0", "before-19", "in-flight-0", "in-flight-1", "in-flight-2"]) {
      const response = await child.request("GET", `/v2/sandboxes/volumes/${name}`)
      expect(response.status, name).toBe(200)
    }
    expect((await child.request("GET", "/v2/sandboxes/templates/in-flight-template")).status).toBe(200)
  })

  it("is not held up by idle keep-alive connections", async () => {
    database = tempDatabasePath("slipway-shutdown")
    child = await spawnServer({ databasePath: database.path })
    const agent = new Agent({ keepAlive: true, maxSockets: 4 })
    const url = new URL(child.url)
    const get = () =>
      new Promise<number>((resolve, reject) => {
        const request = httpRequest({ host: url.hostname, port: url.port, path: "/v2/sandboxes/volumes", agent, headers: { "x-api-key": TEST_KEY } }, (response) => {
          response.resume()
          response.on("end", () => resolve(response.statusCode ?? 0))
        })
        request.on("error", reject)
        request.end()
      })
    expect(await Promise.all([get(), get(), get()])).toEqual([200, 200, 200])
    child.process.kill("SIGTERM")
    const { value: code, ms } = await timed(child.exited)
    agent.destroy()
    expect(code).toBe(0)
    // The server's keep-alive timeout is 5 s: leaving early shows idle connections were closed.
    expect(ms).toBeLessThan(2_000)
    expect(walSize(database.path)).toBe(0)
  })

  it("SIGINT drains and exits 0 the same way", async () => {
    database = tempDatabasePath("slipway-shutdown")
    child = await spawnServer({ databasePath: database.path })
    const server = child
    const slow = slowRequest(server.url, "POST", "/v2/sandboxes/volumes", JSON.stringify({ name: "sigint", size: "1Gi" }), jsonHeaders)
    await slow.started
    await sleep(50)
    server.process.kill("SIGINT")
    await eventually(async () => ((await refusesConnections(server.url)) ? true : undefined), 5_000)
    expect((await slow.finish()).status).toBe(201)
    expect(await server.exited).toBe(0)
    expect(walSize(database.path)).toBe(0)
    const names = withDatabase(database.path, (db) => db.prepare("SELECT name FROM sandbox_volumes").pluck().all())
    expect(names).toEqual(["sigint"])
  })

  it("a second signal while draining does not cut in-flight requests short", async () => {
    database = tempDatabasePath("slipway-shutdown")
    child = await spawnServer({ databasePath: database.path })
    const server = child
    const slow = slowRequest(server.url, "POST", "/v2/sandboxes/volumes", JSON.stringify({ name: "twice", size: "1Gi" }), jsonHeaders)
    await slow.started
    await sleep(50)
    server.process.kill("SIGTERM")
    await sleep(100)
    server.process.kill("SIGTERM")
    server.process.kill("SIGINT")
    await sleep(100)
    expect((await slow.finish()).status).toBe(201)
    expect(await server.exited).toBe(0)
    expect(walSize(database.path)).toBe(0)
  })
})

describe("SIGTERM while the revision runtime is busy", () => {
  it("stops the runtime between steps, exits 0 promptly with the WAL checkpointed, and the next start carries on", async () => {
    database = tempDatabasePath("slipway-shutdown")
    child = await spawnServer({ databasePath: database.path, env: { SLIPWAY_REVISION_STEP_MS: "150" } })
    const server = child
    const ids: Array<string> = []
    for (let i = 0; i < 15; i++) {
      const created = await server.request("POST", "/v2/deployments", {
        body: { name: `busy-${i}`, source: "external_container", source_revision_config: { image_uri: `registry.example.com/app:${i}` } }
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      ids.push(created.body.id)
    }
    const inFlight = slowRequest(server.url, "PATCH", `/v2/deployments/${ids[0]}`, JSON.stringify({ source_revision_config: { image_uri: "registry.example.com/app:patched" } }), jsonHeaders)
    await inFlight.started
    await sleep(200)
    // Revisions are part-way through their states.
    const midway = await Promise.all(ids.map((id) => server.request("GET", `/v2/deployments/${id}`)))
    expect(midway.some((deployment) => deployment.body.status !== "READY")).toBe(true)

    server.process.kill("SIGTERM")
    await eventually(async () => ((await refusesConnections(server.url)) ? true : undefined), 5_000)
    const patched = await inFlight.finish()
    expect(patched.status, patched.body).toBe(200)
    const { value: code, ms } = await timed(server.exited)
    expect(code).toBe(0)
    expect(ms).toBeLessThan(3_000)
    expect(server.output()).not.toMatch(/runtime step failed|unhandled/i)
    expect(walSize(database.path)).toBe(0)
    expect(integrityCheck(database.path)).toEqual(["ok"])

    child = await spawnServer({ databasePath: database.path })
    const next = child
    await eventually(async () => {
      const deployments = await Promise.all(ids.map((id) => next.request("GET", `/v2/deployments/${id}`)))
      return deployments.every((deployment) => deployment.body.status === "READY" && deployment.body.active_revision_id === deployment.body.latest_revision_id) ? true : undefined
    }, 15_000)
    const first = await next.request("GET", `/v2/deployments/${ids[0]}`)
    expect(first.body.source_revision_config.image_uri).toBe("registry.example.com/app:patched")
  })
})
