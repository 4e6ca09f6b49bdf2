/**
 * Contract with the real LangSmith control plane (its published OpenAPI documents, in
 * shared/reference/): every request the typed client can send toward it validates against the
 * real document (strictly: no field it does not know), and the real document's answers (instances
 * of its response schemas, with every enum value, every field set or only the required ones) and
 * error examples decode with the core's schemas. See docs/real-api.md.
 */
import { Effect, Exit, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Api, fromErrorResponse, makeClient, makeOpenApiDocument, type Endpoint } from "../../core/index.ts"
import { generate, loadDocument, makeValidators, operationsOf, requestChecker, resolveRef, type Sent, successOf, variantCount } from "./reference.ts"

type Json = any

const real = loadDocument("2026-08")
const older = loadDocument("2025-11")
const validators = makeValidators(real)
const { realOperations, findOperation, problemsOf } = requestChecker(real, validators)

/**
 * A client toward the real API whose fetch records each request and answers it with an instance
 * of the real operation's success schema, so one call checks the request and decodes an answer.
 */
const recordingClient = (mode: "full" | "minimal" = "full", variant = 0) => {
  const sent: Array<Sent> = []
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const request: Sent = {
      method: init.method!,
      url,
      headers: init.headers as Record<string, string>,
      body: init.body === undefined ? undefined : JSON.parse(String(init.body))
    }
    sent.push(request)
    const match = findOperation(request.method, new URL(url).pathname)
    if (!match) return new Response(JSON.stringify({ detail: "Not Found" }), { status: 404 })
    const success = successOf(match.operation)
    const body = success.schema === undefined || success.status === 204 ? null : JSON.stringify(generate(real, success.schema, { mode, variant }))
    return new Response(body, { status: success.status, headers: { "content-type": "application/json" } })
  }
  const client = makeClient(Api, {
    baseUrl: "https://api.host.langchain.com",
    apiKey: "lsv2_pt_test",
    tenantId: "6f1c2d7e-0b5a-4c8e-9d3f-1a2b3c4d5e6f",
    dialect: "langsmith",
    retry: { maxAttempts: 1 },
    fetch
  })
  return { client, sent }
}

const D = "0f8e3b2a-5c4d-4e6f-8a9b-1c2d3e4f5a6b"
const R = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
const L = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
const I = "3c90c3cc-0d44-4b50-8888-8dd25736052a"

const fullResourceSpec = {
  min_scale: 1,
  max_scale: 3,
  cpu: 0.5,
  cpu_limit: 1.5,
  memory_mb: 1024,
  memory_limit_mb: 2048,
  queue_cpu: 0.25,
  redis_cpu: 0.1,
  redis_cpu_limit: 0.2,
  redis_memory_mb: 256,
  redis_memory_limit_mb: 512,
  labels: { team: "agents" },
  volumes: [{ name: "data", emptyDir: {} }],
  volume_mounts: [{ name: "data", mountPath: "/data" }],
  sidecars: [{ name: "proxy", image: "envoy:1", env: [{ name: "MODE", value: "edge" }] }]
}

/** Requests as callers of the typed client write them: Slipway's (spec) names. */
const corpus: ReadonlyArray<readonly [keyof typeof Api, Json]> = [
  ["createDeployment", { body: { name: "agent", source: "external_container", source_revision_config: { image_uri: "registry.example.com/agent:1" }, image_version: "0.3.0" } }],
  [
    "createDeployment",
    {
      body: {
        name: "agent",
        source: "gitrepo",
        source_config: { integration_id: I, repo_url: "https://github.com/acme/agent", deployment_type: "dev", build_on_push: true, install_command: "npm ci" },
        source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" },
        secrets: [{ name: "OPENAI_API_KEY", value: "sk" }]
      }
    }
  ],
  [
    "createDeployment",
    {
      body: {
        name: "agent",
        source: "external_container",
        source_config: { listener_id: L, listener_config: { k8s_namespace: "agents" }, custom_url: "https://agent.example.com", resource_spec: fullResourceSpec },
        source_revision_config: { image_uri: "registry.example.com/agent:2" },
        secrets: [],
        secret_references: [{ name: "DB_URL", secret_name: "db", secret_key: "url" }]
      }
    }
  ],
  ["createDeployment", { body: { name: "agent", source: "github", source_revision_config: { langgraph_config_path: "langgraph.json", repo_ref: "main" } } }],
  ["listDeployments", {}],
  ["listDeployments", { query: { limit: 20, offset: 40, name_contains: "agent", status: "READY", image_version: "0.3.0", deployment_type: "prod", deployment_ids: `${D},${R}` } }],
  ["getDeployment", { params: { deployment_id: D } }],
  [
    "updateDeployment",
    { params: { deployment_id: D }, body: { revision_source: "gitrepo", source_revision_config: { repo_ref: "dev", graph_config_path: "agent/langgraph.json" }, secrets: [{ name: "K", value: "v" }], image_version: "0.4.0" } }
  ],
  ["updateDeployment", { params: { deployment_id: D }, body: { source_config: { build_on_push: false, resource_spec: fullResourceSpec }, source_revision_config: { image_uri: "r/a:3" } } }],
  ["updateDeployment", { params: { deployment_id: D }, body: {} }],
  ["deleteDeployment", { params: { deployment_id: D } }],
  ["deleteDeployment", { params: { deployment_id: D }, query: { delete_tracing_project: true } }],
  ["deleteDeployments", { query: { deployment_ids: [D, R] } }],
  ["deleteDeployments", { query: { deployment_ids: [D] } }],
  ["listRevisions", { params: { deployment_id: D } }],
  ["listRevisions", { params: { deployment_id: D }, query: { status: "DEPLOYED,BUILD_FAILED", limit: 5, offset: 5 } }],
  ["getRevision", { params: { deployment_id: D, revision_id: R } }],
  ["redeployRevision", { params: { deployment_id: D, revision_id: R } }],
  ["listListeners", { query: { limit: 100, offset: 0 } }],
  ["createListener", { body: { compute_id: "prod-cluster", compute_config: { k8s_namespaces: ["agents"] } } }],
  ["createListener", { body: { compute_type: "k8s", compute_id: "dev-cluster", version: "0.9.1", compute_config: { k8s_namespaces: null } } }],
  ["getListener", { params: { listener_id: L } }],
  ["updateListener", { params: { listener_id: L }, body: { compute_type: "k8s", version: "1.0.0", compute_config: { k8s_namespaces: ["agents", "staging"] } } }],
  ["deleteListener", { params: { listener_id: L } }],
  ["listGithubIntegrations", {}],
  ["listGithubRepositories", { params: { integration_id: I } }]
]

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromiseExit(effect)

describe("requests toward the real LangSmith control plane (2026-08 document)", () => {
  it("are each a valid request of the real API, and their answers decode", async () => {
    const { client, sent } = recordingClient()
    for (const [name, input] of corpus) {
      const before = sent.length
      const exit = await run((client[name] as (input: unknown) => Effect.Effect<unknown, unknown>)(input))
      expect(sent.length, `${name} sent one request`).toBe(before + 1)
      expect(problemsOf(sent[before]!), `${name} ${JSON.stringify(input)}`).toEqual([])
      expect(Exit.isSuccess(exit), `${name}: ${Exit.isFailure(exit) ? String(exit.cause) : ""}`).toBe(true)
    }
  })

  it("cover every endpoint the real API shares with Slipway", () => {
    const shared = Object.values(Api).filter((endpoint: Endpoint) => endpoint.langsmith !== undefined)
    expect(new Set(corpus.map(([name]) => name))).toEqual(new Set(shared.map((endpoint) => endpoint.name)))
    for (const endpoint of shared) expect(findOperation(endpoint.method, endpoint.path.replace(/\{\w+\}/g, D)), endpoint.name).toBeDefined()
  })

  it("speak the real names: github / external_docker, langgraph_config_path; no image_version; the members the real create requires", async () => {
    const { client, sent } = recordingClient()
    await run(client.createDeployment(corpus[1]![1]))
    await run(client.createDeployment(corpus[0]![1]))
    expect(sent[0]!.body).toMatchObject({ source: "github", source_revision_config: { langgraph_config_path: "langgraph.json" } })
    expect((sent[0]!.body as Json).source_revision_config).not.toHaveProperty("graph_config_path")
    expect(sent[1]!.body).toEqual({ name: "agent", source: "external_docker", source_config: {}, source_revision_config: { image_uri: "registry.example.com/agent:1" }, secrets: [] })
  })

  it("refuse Slipway's own endpoints without sending anything", async () => {
    const { client, sent } = recordingClient()
    const own = Object.values(Api).filter((endpoint: Endpoint) => endpoint.langsmith === undefined)
    expect(own.map((endpoint) => endpoint.name)).toContain("createRevision")
    for (const endpoint of own) {
      const exit = await run((client as any)[endpoint.name]({ params: {}, body: {} }))
      expect(Exit.isFailure(exit) && String(exit.cause), endpoint.name).toContain("UnsupportedEndpoint")
    }
    expect(sent).toEqual([])
    const listener = await run(client.createListener({ body: { compute_config: { k8s_namespaces: ["a"] } } }))
    expect(Exit.isFailure(listener) && String(listener.cause)).toContain("compute_id")
    expect(sent).toEqual([])
  })

  /**
   * Every request body the real document describes (every field, or only the required ones;
   * every enum value): Slipway decodes it, and what the client sends for the decoded value (in
   * Slipway's names) is again a valid real request.
   */
  it("round-trip every real request body through Slipway's schemas and the client", async () => {
    const cases: ReadonlyArray<readonly [keyof typeof Api, string, Json]> = [
      ["createDeployment", "DeploymentCreateRequest", {}],
      ["updateDeployment", "DeploymentPatchRequest", { params: { deployment_id: D } }],
      ["createListener", "ListenerCreateRequest", {}],
      ["updateListener", "ListenerPatchRequest", { params: { listener_id: L } }]
    ]
    const slipwayDocument = makeOpenApiDocument(Object.values(Api), { title: "Slipway", version: "test" })
    const slipwayValidators = makeValidators(slipwayDocument)
    let checked = 0
    for (const [name, schemaName, input] of cases) {
      const endpoint = Api[name] as Endpoint
      const slipwayBodySchema = (slipwayDocument.paths[endpoint.path][endpoint.method.toLowerCase()] as Json).requestBody.content["application/json"].schema
      for (const mode of ["full", "nulls", "minimal"] as const) {
        for (let variant = 0; variant < variantCount; variant++) {
          const body = generate(real, { $ref: `#/components/schemas/${schemaName}` }, { mode, variant }) as Json
          expect(validators.check({ $ref: `#/components/schemas/${schemaName}` }, body)).toEqual([])
          // The OpenAPI document Slipway serves says it accepts the body...
          expect(slipwayValidators.check(slipwayBodySchema, body), `${schemaName} ${mode} ${variant}`).toEqual([])
          // ...and it does.
          const decoded = Schema.decodeUnknownSync(endpoint.body as Schema.Codec<unknown, unknown>)(body)
          const slipwayNames = Schema.encodeSync(endpoint.body as Schema.Codec<unknown, unknown>)(decoded)
          const { client, sent } = recordingClient()
          await run((client[name] as (input: unknown) => Effect.Effect<unknown, unknown>)({ ...input, body: slipwayNames }))
          expect(problemsOf(sent[0]!), `${schemaName} ${mode} ${variant}: ${JSON.stringify(sent[0]!.body)}`).toEqual([])
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(80)
  })
})

describe("the real API's answers decode with the core's schemas", () => {
  const shared = Object.values(Api).filter((endpoint: Endpoint) => endpoint.langsmith !== undefined && endpoint.success !== undefined)

  for (const [version, document] of [["2026-08", real], ["2025-11", older]] as const) {
    it(`every success schema of the ${version} document, every field, explicit nulls or only the required ones, every enum value`, () => {
      let decoded = 0
      for (const endpoint of shared) {
        const operation = operationsOf(document).find((op) => op.method === endpoint.method && op.template === endpoint.path)
        if (!operation) continue
        const success = successOf(operation.operation)
        if (success.schema === undefined || Object.keys(resolveRef(document, success.schema)).length === 0) continue
        for (const mode of ["full", "nulls", "minimal"] as const) {
          for (let variant = 0; variant < variantCount; variant++) {
            const answer = generate(document, success.schema, { mode, variant })
            const exit = Schema.decodeUnknownExit(endpoint.success as Schema.Codec<unknown, unknown>)(answer)
            expect(Exit.isSuccess(exit), `${endpoint.name} ${mode} ${variant}: ${Exit.isFailure(exit) ? String(exit.cause) : ""}\n${JSON.stringify(answer)}`).toBe(true)
            decoded++
          }
        }
      }
      expect(decoded).toBeGreaterThan(200)
    })
  }

  it("decodes the real names into the spec's", () => {
    const deploymentSchema = { $ref: "#/components/schemas/Deployment" }
    const sources = new Map<string, unknown>()
    for (let variant = 0; variant < 4; variant++) {
      const answer = generate(real, deploymentSchema, { mode: "full", variant }) as Json
      const decoded = Schema.decodeUnknownSync(Api.getDeployment.success)(answer)
      sources.set(answer.source, decoded.source)
      expect(decoded.source_revision_config.graph_config_path).toBe("langgraph.json")
      expect(decoded.tenant_id).toBe(answer.tenant_id)
    }
    expect(Object.fromEntries(sources)).toEqual({
      github: "gitrepo",
      external_docker: "external_container",
      internal_docker: "internal_docker",
      internal_source: "internal_source"
    })
  })

  it("maps every error example of the real document to its error, with its detail", () => {
    const tags: Record<number, string> = { 400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict" }
    let examples = 0
    for (const { operation } of realOperations) {
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        const example = response.content?.["application/json"]?.example
        if (example === undefined) continue
        const error = fromErrorResponse(Number(status), example) as { _tag: string; message: string }
        expect(error._tag).toBe(tags[Number(status)])
        expect(error.message).toBe(example.detail)
        examples++
      }
    }
    expect(examples).toBeGreaterThanOrEqual(18)
  })
})
