/**
 * Both areas run on one local runtime: the server chooses its runtime once (`RuntimeChoice`, a
 * base service) and builds `LocalRuntimeLive` (the box runner, the image store, ...) once, though
 * the deployment and the sandbox areas each provide it to their drivers.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let t: TestServer
const logs: Array<{ readonly msg: string }> = []

beforeAll(async () => {
  t = await startTestServer({ runtime: "local", logger: makeLogger("info", (line) => void logs.push(JSON.parse(line))) })
}, 120_000)

afterAll(async () => {
  await t?.close()
}, 60_000)

it("chooses the runtime once and builds one box runner for both areas' drivers", () => {
  expect(logs.filter((line) => line.msg === "runtime")).toHaveLength(1)
  expect(logs.filter((line) => line.msg === "local runtime")).toHaveLength(1)
})
