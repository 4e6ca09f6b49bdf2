/**
 * Bad input, property-based: every endpoint of `Api` gets random and near-valid bodies (valid
 * bodies with fields mutated along the paths its schema describes), path parameters and query
 * strings. Whatever arrives, the server never answers 5xx, every error has the spec's shape
 * (422 `detail` list of {loc, msg, type}; string `detail`; sandbox `{error, message}`), and every
 * success decodes with the endpoint's success schema. Malformed JSON is 422, a body over the
 * limit 413, a wrong content type 415.
 *
 * Runs use a fixed seed (FUZZ_SEED to change it); fast-check prints the seed and the shrunk
 * counterexample on failure.
 */
import fc from "fast-check"
import { Exit, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Endpoint } from "../../core/index.ts"
import { startTestServer, TEST_KEY, type TestServer } from "../support/server.ts"
import { bodyArbitrary, paramArbitrary, queryArbitrary, unique, uniqueCount, validBodies } from "./fuzz-support.ts"
import { DEFAULT_TENANT_ID } from "../../server/index.ts"
import { makeDeploymentRepository } from "../../server/store/sqlite/deploymentRepository.ts"
import { sign } from "../../server/deployments/webhook.ts"
import { endpoints as allEndpoints, errorShapeProblem, isWebhook, pathParamNames, rawHttp, samplePath } from "./support.ts"

/** FUZZ_AREA=sandbox|control|system narrows a run while debugging; npm test fuzzes everything. */
const area = process.env.FUZZ_AREA
const endpoints = allEndpoints.filter((endpoint) => area === undefined || endpoint.area === area)

const seed = Number(process.env.FUZZ_SEED ?? 20_250_611)
const bodyRuns = Number(process.env.FUZZ_RUNS ?? 100)
const pathRuns = Math.ceil(bodyRuns / 2)

let t: TestServer

/** Which kind of item a path addresses: `volumes`, `deployment_id`, ... */
const kindOf = (endpoint: Endpoint, param: string) => (param === "name" ? (/\/v2\/sandboxes\/(\w+)\//.exec(endpoint.path)?.[1] ?? "") : param)

/**
 * A fresh item for each run of a property that addresses one, so an earlier run's rename or
 * delete never leaves later runs aimed at nothing. Returns the path parameters that name it.
 */
const freshTarget = async (endpoint: Endpoint): Promise<Record<string, string>> => {
  const names = pathParamNames(endpoint)
  if (names.length === 0) return {}
  const create = async (path: string, body: unknown) => {
    const response = await t.request("POST", path, { body })
    if (response.status !== 201) throw new Error(`fresh target ${path}: ${response.status} ${JSON.stringify(response.body)}`)
    return response.body
  }
  const params: Record<string, string> = {}
  const kind = kindOf(endpoint, names[0]!)
  if (kind === "volumes") params.name = (await create("/v2/sandboxes/volumes", { name: unique("fz-vol"), size: "1Mi" })).name
  else if (kind === "templates") params.name = (await create("/v2/sandboxes/templates", { name: unique("fz-tpl"), image: "python:3.12" })).name
  else if (kind === "pools") params.name = (await create("/v2/sandboxes/pools", { name: unique("fz-pool"), template_name: "fz-template", replicas: 1 })).name
  else if (kind === "boxes") params.name = (await create("/v2/sandboxes/boxes", { name: unique("fz-box"), template_name: "fz-template" })).name
  else if (kind === "registries") params.name = (await create("/v2/sandboxes/registries", validBodies.createRegistry!())).name
  else if (kind === "snapshot_id") params.snapshot_id = (await create("/v2/sandboxes/snapshots", validBodies.createSnapshot!())).id
  else if (kind === "listener_id") params.listener_id = (await create("/v2/listeners", validBodies.createListener!())).id
  else if (kind === "deployment_id") {
    const deployment = await create(
      "/v2/deployments",
      uniqueCount() % 2 === 0
        ? { name: unique("fz-dep"), source: "external_container", source_revision_config: { image_uri: "registry.example.com/agent:1" } }
        : { name: unique("fz-dep"), source: "gitrepo", source_config: { repo_url: "https://github.com/o/r", deployment_type: "dev", build_on_push: false }, source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" } }
    )
    params.deployment_id = deployment.id
    params.revision_id = deployment.latest_revision_id
  } else if (kind === "integration_id") {
    // The real API's GET /v1/integrations/github/{integration_id}/repos: an integration of the tenant.
    params.integration_id = crypto.randomUUID()
    makeDeploymentRepository(t.server.db).insertIntegration({
      id: params.integration_id,
      tenant_id: DEFAULT_TENANT_ID,
      provider: "github",
      owner: unique("fz-owner"),
      owner_key: unique("fz-owner"),
      webhook_secret: "unused",
      installed_at: new Date().toISOString()
    })
  } else throw new Error(`no fresh target for ${endpoint.path}`)
  return params
}

const rawRequest = (method: string, path: string, body: Buffer | undefined, headers: Record<string, string>) =>
  rawHttp(t.url, method, path, body, { "x-api-key": TEST_KEY, ...headers })

const decodesAsSuccess = (endpoint: Endpoint, body: unknown): string | undefined => {
  if (!endpoint.success) return body === undefined ? undefined : `unexpected body ${JSON.stringify(body)}`
  const exit = Schema.decodeUnknownExit(endpoint.success as any)(body)
  return Exit.isSuccess(exit) ? undefined : `success body does not decode: ${JSON.stringify(body).slice(0, 300)}`
}

/** The one verdict for every answer: never 5xx, errors in the spec's shapes, successes in the endpoint's. */
const verdict = (endpoint: Endpoint, status: number, body: unknown, routeMayMiss: boolean): string | undefined => {
  if (status >= 500) return `${status} ${JSON.stringify(body)}`
  if (status >= 200 && status < 300) return status === endpoint.status ? decodesAsSuccess(endpoint, body) : `success status ${status}, expected ${endpoint.status}`
  // A bent path may no longer match this endpoint's route: then the router's own 404/405 answers.
  if (routeMayMiss && (status === 404 || status === 405) && typeof (body as any)?.detail === "string") return undefined
  return errorShapeProblem(endpoint, status, body)
}

const check = (endpoint: Endpoint, label: string, answer: { status: number; body: unknown }, routeMayMiss = false) => {
  const problem = verdict(endpoint, answer.status, answer.body, routeMayMiss)
  if (problem) throw new Error(`${endpoint.method} ${endpoint.path} (${label}) → ${answer.status}: ${problem}`)
}

const signedHeaders = (endpoint: Endpoint, text: string): Record<string, string> => ({
  "content-type": "application/json",
  ...(isWebhook(endpoint)
    ? { "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": sign(webhookSecret, Buffer.from(text, "utf8")) }
    : {})
})

const send = (endpoint: Endpoint, path: string, body?: unknown) => {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), "utf8")
  const headers: Record<string, string> = payload ? { "content-type": "application/json" } : {}
  if (payload && isWebhook(endpoint)) {
    headers["x-github-event"] = "push"
    headers["x-hub-signature-256"] = sign(webhookSecret, payload)
    headers["x-github-delivery"] = crypto.randomUUID()
  }
  return rawRequest(endpoint.method, path, payload, headers)
}

/** The webhook secret of an integration for GitHub owner "o", so fuzzed pushes get past the signature. */
const webhookSecret = "fuzz-webhook-secret"

beforeAll(async () => {
  // Unknown body fields are ignored (docs/real-api.md), so more fuzzed volume creates succeed than
  // when they were refused: the quota leaves room for them and the fresh targets.
  t = await startTestServer({ storageQuota: "64Pi" })
  const template = await t.request("POST", "/v2/sandboxes/templates", { body: { name: "fz-template", image: "python:3.12" } })
  if (template.status !== 201) throw new Error(`setup: ${template.status} ${JSON.stringify(template.body)}`)
  if (area !== undefined && area !== "control") return
  const integrationId = crypto.randomUUID()
  makeDeploymentRepository(t.server.db).insertIntegration({
    id: integrationId,
    tenant_id: DEFAULT_TENANT_ID,
    provider: "github",
    owner: "o",
    owner_key: "o",
    webhook_secret: webhookSecret,
    installed_at: new Date().toISOString()
  })
  const gitDeployment = await t.request("POST", "/v2/deployments", {
    body: { name: "fz-git", source: "gitrepo", source_config: { integration_id: integrationId, repo_url: "https://github.com/o/r", deployment_type: "dev", build_on_push: true }, source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" } }
  })
  if (gitDeployment.status !== 201) throw new Error(`setup: ${gitDeployment.status} ${JSON.stringify(gitDeployment.body)}`)
})
afterAll(() => t?.close())

describe("the fuzzing baseline", () => {
  it("has a valid body for every endpoint that takes one, and the server accepts it", async () => {
    const withBody = allEndpoints.filter((endpoint) => endpoint.body)
    expect(withBody.map((endpoint) => endpoint.name).filter((name) => !validBodies[name])).toEqual([])
    for (const endpoint of withBody) {
      if (area !== undefined && endpoint.area !== area) continue
      const decoded = Schema.decodeUnknownExit(endpoint.body as any, { onExcessProperty: "error" })(validBodies[endpoint.name]!())
      expect(Exit.isSuccess(decoded), `${endpoint.name}: ${String(Exit.isFailure(decoded) && decoded.cause)}`).toBe(true)
    }
  })
})

describe("random and near-valid input never yields a 5xx or an off-spec body", () => {
  for (const endpoint of endpoints) {
    const label = `${endpoint.method} ${endpoint.path}`

    if (endpoint.body) {
      it(`${label}: bodies`, async () => {
        const arbitrary = bodyArbitrary(endpoint, validBodies[endpoint.name]!)
        await fc.assert(
          fc.asyncProperty(arbitrary, async (body) => {
            const path = samplePath(endpoint, await freshTarget(endpoint))
            check(endpoint, `body ${JSON.stringify(body).slice(0, 200)}`, await send(endpoint, path, body))
          }),
          { seed, numRuns: bodyRuns }
        )
      })
    }

    if (pathParamNames(endpoint).length > 0) {
      it(`${label}: path parameters`, async () => {
        const names = pathParamNames(endpoint)
        const arbitrary = fc.record(Object.fromEntries(names.map((name) => [name, paramArbitrary(name)])))
        await fc.assert(
          fc.asyncProperty(arbitrary, async (bend) => {
            const target = await freshTarget(endpoint)
            const path = endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => (bend as Record<string, (real: string) => string>)[name]!(target[name]!))
            const body = validBodies[endpoint.name]?.()
            check(endpoint, `path ${path}`, await send(endpoint, path, body), true)
          }),
          { seed, numRuns: pathRuns }
        )
      })
    }

    if (endpoint.query) {
      it(`${label}: query strings`, async () => {
        await fc.assert(
          fc.asyncProperty(queryArbitrary(endpoint), async (query) => {
            const path = `${samplePath(endpoint, await freshTarget(endpoint))}?${query}`
            check(endpoint, `query ${query}`, await send(endpoint, path))
          }),
          { seed, numRuns: bodyRuns }
        )
      })
    }
  }
})

describe("request bodies that are not JSON, too large or of another type", () => {
  const withBody = endpoints.filter((endpoint) => endpoint.body)

  for (const endpoint of withBody) {
    const label = `${endpoint.method} ${endpoint.path}`
    const path = () => samplePath(endpoint)

    it(`${label}: malformed JSON is 422 json_invalid`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.constantFrom("{", "{'name': 'x'}", '{"name": }', "[1,", "nul", '{"a":1}}', "\u0000", '{"name":"x",}', "NaN", "{\"a\":\"\\x\"}"),
            fc.json().map((text) => text + "}")
          ),
          async (text) => {
            const answer = await rawRequest(endpoint.method, path(), Buffer.from(text, "utf8"), { "content-type": "application/json" })
            check(endpoint, `malformed ${text}`, answer)
            expect(answer.status, text).toBe(422)
            expect(answer.body.detail[0].type).toBe("json_invalid")
            expect(answer.body.detail[0].loc[0]).toBe("body")
          }
        ),
        { seed, numRuns: 20 }
      )
    })

    if (endpoint.bodyOptional === true) {
      it(`${label}: an empty body means the defaults (never a validation error)`, async () => {
        const answer = await rawRequest(endpoint.method, path(), undefined, { "content-type": "application/json" })
        check(endpoint, "empty body", answer)
        // The sampled ids name nothing, so the answer is the route's own 404, reached only past body decoding.
        expect(answer.status).toBe(404)
        expect(JSON.stringify(answer.body)).not.toContain("Field required")
      })
    } else {
      it(`${label}: an empty body is 422 missing`, async () => {
        const answer = await rawRequest(endpoint.method, path(), undefined, { "content-type": "application/json" })
        expect(answer.status).toBe(422)
        expect(answer.body.detail).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }])
      })
    }

    it(`${label}: a body over 1 MiB is 413, declared or streamed`, async () => {
      const big = Buffer.from(JSON.stringify({ ...validBodies[endpoint.name]!(), padding: "x".repeat(1024 * 1024) }), "utf8")
      const declared = await rawRequest(endpoint.method, path(), big, { "content-type": "application/json" })
      expect(declared.status).toBe(413)
      expect(declared.body).toEqual({ detail: "Request body too large" })
      const streamed = await rawRequest(endpoint.method, path(), big, { "content-type": "application/json", "transfer-encoding": "chunked" })
      expect(streamed.status).toBe(413)
      expect(streamed.body).toEqual({ detail: "Request body too large" })
    })

    it(`${label}: deeply nested JSON is 422, never a 5xx`, async () => {
      // Free-form objects (securityContext, webhook extras) accept any depth in the schema; the
      // server's JSON handling (JSON.stringify, SQLite's json functions) does not.
      for (const depth of [101, 1_001, 20_000, 300_000]) {
        const deep = "[".repeat(depth) + "]".repeat(depth)
        const valid = validBodies[endpoint.name]!()
        const placements = [deep, JSON.stringify(valid).replace(/\}$/, `,"deep":${deep}}`)]
        if (endpoint.name === "createDeployment") {
          placements.push(JSON.stringify(valid).replace('"sidecars":[{', `"sidecars":[{"securityContext":{"x":${deep}},`))
        }
        for (const text of placements) {
          const answer = await rawRequest(endpoint.method, path(), Buffer.from(text, "utf8"), signedHeaders(endpoint, text))
          check(endpoint, `depth ${depth}`, answer)
          // The unauthenticated webhook reads at most 256 KiB before its signature is checked.
          const expected = isWebhook(endpoint) && Buffer.byteLength(text) > 256 * 1024 ? 413 : 422
          expect(answer.status, `depth ${depth}: ${answer.text.slice(0, 200)}`).toBe(expected)
        }
      }
    })

    if (endpoint.name === "createDeployment") {
      it(`${label}: free-form objects nested 60 levels deep are still accepted`, async () => {
        const nested = "[".repeat(50) + "]".repeat(50)
        const text = JSON.stringify(validBodies.createDeployment!()).replace('"sidecars":[{', `"sidecars":[{"securityContext":{"x":${nested}},`)
        const answer = await rawRequest("POST", "/v2/deployments", Buffer.from(text, "utf8"), { "content-type": "application/json" })
        expect(answer.status, answer.text.slice(0, 300)).toBe(201)
      })
    }

    it(`${label}: a body of another content type is 415`, async () => {
      const body = Buffer.from(JSON.stringify(validBodies[endpoint.name]!()), "utf8")
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "text/json", "application/jsonp"]) {
        const answer = await rawRequest(endpoint.method, path(), body, { "content-type": type })
        expect(answer.status, type).toBe(415)
        expect(typeof answer.body.detail, type).toBe("string")
      }
    })
  }
})
