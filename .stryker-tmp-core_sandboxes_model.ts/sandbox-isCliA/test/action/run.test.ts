/** run.ts against a scripted client: the paths a real server rarely takes. */
// @ts-nocheck

import { Cause, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { fromErrorResponse } from "../../core/api/errors.ts"
import type { Inputs } from "../../action/inputs.ts"
import { externalInputs } from "./fixtures.ts"
import type { DeploymentView } from "../../action/plan.ts"
import { ActionFailure, type ActionClient, findDeployment, run } from "../../action/run.ts"

const inputs: Inputs = externalInputs({ apiUrl: "https://slipway.example.com/", apiKey: "k", timeoutMs: 5000, pollIntervalMs: 10 })

const deployment = (name: string, overrides: Partial<DeploymentView> = {}): DeploymentView => ({
  id: `id-${name}`,
  name,
  source: "external_container",
  source_config: { custom_url: `http://x/d/${name}` },
  source_revision_config: { image_uri: "registry/app:2" },
  secrets: [],
  latest_revision_id: "rev-2",
  active_revision_id: "rev-2",
  ...overrides
})

const unexpected = () => Effect.die(new Error("unexpected call"))

const fakeClient = (overrides: Partial<ActionClient>): ActionClient & { calls: Array<string> } => {
  const calls: Array<string> = []
  const track =
    <I, A>(name: string, fn: ((input: I) => Effect.Effect<A, any>) | undefined) =>
    (input: I) => {
      calls.push(name)
      return fn ? fn(input) : unexpected()
    }
  return {
    calls,
    listDeployments: track("listDeployments", overrides.listDeployments),
    getDeployment: track("getDeployment", overrides.getDeployment),
    createDeployment: track("createDeployment", overrides.createDeployment),
    updateDeployment: track("updateDeployment", overrides.updateDeployment),
    getRevision: track("getRevision", overrides.getRevision),
    redeployRevision: track("redeployRevision", overrides.redeployRevision)
  } as ActionClient & { calls: Array<string> }
}

const silent = { info: () => {}, notice: () => {}, warning: () => {}, debug: () => {} }
const runWith = (client: ActionClient, given: Inputs = inputs) => Effect.runPromiseExit(run(given, { client, log: silent, now: Date.now }))
const failureOf = (exit: Exit.Exit<unknown, ActionFailure>): ActionFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return Cause.squash(exit.cause) as ActionFailure
}

describe("findDeployment", () => {
  it("pages through name_contains matches until the exact name", async () => {
    const pages: Record<string, Array<DeploymentView>> = {
      "0": Array.from({ length: 100 }, (_, i) => deployment(`web-${i}`)),
      "100": [deployment("web-x"), deployment("web")]
    }
    const client = fakeClient({
      listDeployments: ({ query }) => Effect.succeed({ resources: pages[query.offset] ?? [], offset: Number(query.offset) + (pages[query.offset]?.length ?? 0) })
    })
    const found = await Effect.runPromise(findDeployment(client, "web"))
    expect(found?.id).toBe("id-web")
    expect(client.calls).toEqual(["listDeployments", "listDeployments"])
  })

  it("stops at a short page without a match", async () => {
    const client = fakeClient({ listDeployments: () => Effect.succeed({ resources: [deployment("web-2")], offset: 1 }) })
    expect(await Effect.runPromise(findDeployment(client, "web"))).toBeUndefined()
    expect(client.calls).toHaveLength(1)
  })
})

describe("run", () => {
  it("a no-op sends no write and reports the latest revision", async () => {
    const client = fakeClient({
      listDeployments: () => Effect.succeed({ resources: [deployment("web")], offset: 1 }),
      getRevision: () => Effect.succeed({ id: "rev-2", status: "DEPLOYED" })
    })
    const exit = await runWith(client)
    expect(Exit.isSuccess(exit) && exit.value).toMatchObject({ outcome: "unchanged", created: false, revisionId: "rev-2", status: "DEPLOYED", url: "http://x/d/web" })
    expect(client.calls).toEqual(["listDeployments", "getRevision", "getRevision"])
  })

  it("fails a redeploy whose revision is DEPLOYED but not active", async () => {
    const client = fakeClient({
      listDeployments: () => Effect.succeed({ resources: [deployment("web")], offset: 1 }),
      redeployRevision: () => Effect.succeed(deployment("web", { active_revision_id: "rev-1" })),
      getRevision: () => Effect.succeed({ id: "rev-1", status: "DEPLOYED" }),
      getDeployment: () => Effect.succeed(deployment("web", { active_revision_id: "rev-3" }))
    })
    const failure = failureOf(await runWith(client, { ...inputs, redeployRevisionId: "rev-1" }))
    expect(failure.message).toBe("Revision rev-1 is DEPLOYED but deployment web now serves rev-3 (another deploy may have run meanwhile)")
    expect(failure.partial).toMatchObject({ revisionId: "rev-1", status: "DEPLOYED", outcome: "redeployed" })
  })

  it("maps an API error of the PATCH to an annotation on the input, keeping what is known", async () => {
    const client = fakeClient({
      listDeployments: () => Effect.succeed({ resources: [deployment("web", { source_revision_config: { image_uri: "registry/app:1" } })], offset: 1 }),
      getRevision: () => Effect.succeed({ id: "rev-2", status: "DEPLOYED" }),
      updateDeployment: () =>
        Effect.fail(fromErrorResponse(422, { detail: [{ loc: ["body", "source_revision_config", "image_uri"], msg: "bad image", type: "value_error" }] }))
    })
    const failure = failureOf(await runWith(client))
    expect(failure.annotations).toEqual([
      { input: "image-uri", title: "Slipway: input image-uri", message: "image-uri: bad image [API: body.source_revision_config.image_uri, value_error]" }
    ])
    expect(failure.partial).toMatchObject({ deploymentId: "id-web", changes: ["image-uri: registry/app:1 → registry/app:2"] })
  })

  it("does not wait with wait: false, and reports the revision's current status", async () => {
    const client = fakeClient({
      listDeployments: () => Effect.succeed({ resources: [], offset: 0 }),
      createDeployment: () => Effect.succeed(deployment("web", { latest_revision_id: "rev-1", active_revision_id: null })),
      getRevision: () => Effect.succeed({ id: "rev-1", status: "QUEUED" })
    })
    const exit = await runWith(client, { ...inputs, wait: false })
    expect(Exit.isSuccess(exit) && exit.value).toMatchObject({ created: true, outcome: "created", revisionId: "rev-1", status: "QUEUED" })
    expect(client.calls).toEqual(["listDeployments", "createDeployment", "getRevision"])
  })
})
