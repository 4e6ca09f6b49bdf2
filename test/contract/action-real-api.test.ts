/**
 * The same action deploys to the real LangSmith control plane: run.ts with the core's client
 * (`dialect: "langsmith"`) against a stand-in of the real service that checks every request
 * against the real 2026-08 document (strictly) and answers in the real API's shapes and names,
 * which it also checks against the document. See docs/real-api.md.
 */
import { randomUUID } from "node:crypto"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { deploymentEndpoints } from "../../core/api/deployments.ts"
import { makeClient } from "../../core/client/client.ts"
import type { Inputs } from "../../core/deploy/inputs.ts"
import { run } from "../../core/deploy/run.ts"
import { externalInputs } from "../action/fixtures.ts"
import { loadDocument, makeValidators, requestChecker, type Sent, successOf } from "./reference.ts"

type Json = any

const real = loadDocument("2026-08")
const validators = makeValidators(real)
const { findOperation, problemsOf } = requestChecker(real, validators)
const TENANT = "6f1c2d7e-0b5a-4c8e-9d3f-1a2b3c4d5e6f"

/** An in-memory LangSmith control plane, for the calls the action makes. */
const fakeLangSmith = () => {
  const deployments = new Map<string, Json>()
  const revisions = new Map<string, Json & { polls: number }>()
  const problems: Array<string> = []
  const requests: Array<Sent> = []
  const now = () => new Date().toISOString()

  const newRevision = (deployment: Json) => {
    const revision = { id: randomUUID(), created_at: now(), updated_at: now(), status: "QUEUED", source: deployment.source, source_revision_config: { ...deployment.source_revision_config }, polls: 0 }
    revisions.set(revision.id, revision)
    deployment.latest_revision_id = revision.id
    return revision
  }
  const revisionView = ({ polls: _, ...revision }: Json) => revision

  const answer = (sent: Sent): { status: number; body?: unknown } => {
    const url = new URL(sent.url)
    const parts = url.pathname.split("/").filter(Boolean)
    const body = sent.body as Json
    if (sent.method === "GET" && url.pathname === "/v2/deployments") {
      const name = url.searchParams.get("name_contains") ?? ""
      const offset = Number(url.searchParams.get("offset") ?? 0)
      const resources = [...deployments.values()].filter((d) => d.name.includes(name)).slice(offset)
      return { status: 200, body: { resources, offset: offset + resources.length } }
    }
    if (sent.method === "POST" && url.pathname === "/v2/deployments") {
      const deployment: Json = {
        name: body.name,
        source: body.source,
        source_config: { integration_id: null, repo_url: null, deployment_type: null, build_on_push: null, custom_url: null, resource_spec: null, listener_id: null, listener_config: null, install_command: null, build_command: null, ...body.source_config },
        source_revision_config: { repo_ref: null, langgraph_config_path: null, image_uri: null, source_tarball_path: null, repo_commit_sha: null, ...body.source_revision_config },
        secrets: body.secrets,
        secret_references: null,
        id: randomUUID(),
        tenant_id: TENANT,
        created_at: now(),
        updated_at: now(),
        status: "AWAITING_DATABASE",
        latest_revision_id: null,
        active_revision_id: null,
        image_version: null
      }
      deployments.set(deployment.id, deployment)
      newRevision(deployment)
      return { status: 201, body: deployment }
    }
    const deployment = deployments.get(parts[2] ?? "")
    if (!deployment) return { status: 404, body: { detail: `Deployment ID ${parts[2]} not found.` } }
    if (sent.method === "GET" && parts.length === 3) return { status: 200, body: deployment }
    if (sent.method === "PATCH" && parts.length === 3) {
      if (body.source_config) deployment.source_config = { ...deployment.source_config, ...body.source_config }
      if (body.secrets) deployment.secrets = body.secrets
      if (body.source_revision_config || body.secrets || body.source_config?.resource_spec) {
        deployment.source_revision_config = { ...deployment.source_revision_config, ...body.source_revision_config }
        newRevision(deployment)
      }
      return { status: 200, body: deployment }
    }
    if (sent.method === "GET" && parts[3] === "revisions" && parts[4]) {
      const revision = revisions.get(parts[4])
      if (!revision) return { status: 404, body: { detail: `Revision ID ${parts[4]} not found.` } }
      // Two polls in progress, then deployed.
      revision.status = ++revision.polls >= 3 ? "DEPLOYED" : "BUILDING"
      if (revision.status === "DEPLOYED") Object.assign(deployment, { active_revision_id: revision.id, status: "READY" })
      return { status: 200, body: revisionView(revision) }
    }
    return { status: 404, body: { detail: "Not Found" } }
  }

  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const sent: Sent = { method: init.method!, url, headers: init.headers as Record<string, string>, body: init.body === undefined ? undefined : JSON.parse(String(init.body)) }
    requests.push(sent)
    problems.push(...problemsOf(sent).map((problem) => `${sent.method} ${url}: ${problem}`))
    const { status, body } = answer(sent)
    // The stand-in answers what the real document says it answers.
    const operation = findOperation(sent.method, new URL(url).pathname)
    const success = operation && successOf(operation.operation)
    if (success?.schema && status === success.status) problems.push(...validators.check(success.schema, body).map((problem) => `answer of ${sent.method} ${url}: ${problem}`))
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
  }
  return { fetch, deployments, problems, requests }
}

const silent = { info: () => {}, notice: () => {}, warning: () => {}, debug: () => {} }

const runAction = (fake: ReturnType<typeof fakeLangSmith>, inputs: Inputs) => {
  const client = makeClient(deploymentEndpoints, { baseUrl: "https://api.host.langchain.com", apiKey: inputs.apiKey, tenantId: TENANT, dialect: "langsmith", fetch: fake.fetch, retry: { maxAttempts: 1 } })
  return Effect.runPromiseExit(run(inputs, { client, log: silent, now: Date.now }))
}

const resultOf = <A>(exit: Exit.Exit<A, unknown>): A => {
  if (Exit.isFailure(exit)) throw new Error(String(exit.cause))
  return exit.value
}

describe("the action against the real LangSmith control plane's API", () => {
  it("creates an external_docker deployment, then updates it, waiting for DEPLOYED each time, every request a valid one", async () => {
    const fake = fakeLangSmith()
    const inputs = externalInputs({
      apiUrl: "https://api.host.langchain.com",
      source: "external_container",
      imageUri: "registry.example.com/agent:1",
      secrets: [{ name: "OPENAI_API_KEY", value: "sk-1" }],
      resourceSpec: { min_scale: 1, max_scale: 2, cpu: 0.5, memory_mb: 1024 },
      timeoutMs: 5_000,
      pollIntervalMs: 5
    })
    const created = resultOf(await runAction(fake, inputs))
    expect(created).toMatchObject({ created: true, outcome: "created", status: "DEPLOYED" })
    const stored = fake.deployments.get(created.deploymentId!)
    expect(stored.source).toBe("external_docker")
    expect(stored.source_config.resource_spec).toMatchObject({ cpu: 0.5 })

    const updated = resultOf(await runAction(fake, { ...inputs, imageUri: "registry.example.com/agent:2" }))
    expect(updated).toMatchObject({ created: false, outcome: "updated", status: "DEPLOYED" })
    expect(updated.revisionId).not.toBe(created.revisionId)
    expect(fake.deployments.get(created.deploymentId!).source_revision_config.image_uri).toBe("registry.example.com/agent:2")

    const unchanged = resultOf(await runAction(fake, { ...inputs, imageUri: "registry.example.com/agent:2" }))
    expect(unchanged.outcome).toBe("unchanged")
    expect(fake.problems).toEqual([])
    expect(fake.requests.map((request) => request.method).sort()).toContain("PATCH")
  })

  it("creates a github deployment with langgraph_config_path, and changes the graph path by PATCH", async () => {
    const fake = fakeLangSmith()
    const inputs = externalInputs({
      apiUrl: "https://api.host.langchain.com",
      name: "agent",
      source: "gitrepo",
      imageUri: undefined,
      repoUrl: "https://github.com/acme/agent",
      repoRef: "main",
      graphConfigPath: "langgraph.json",
      integrationId: "3c90c3cc-0d44-4b50-8888-8dd25736052a",
      buildOnPush: true,
      timeoutMs: 5_000,
      pollIntervalMs: 5
    })
    const created = resultOf(await runAction(fake, inputs))
    expect(created.status).toBe("DEPLOYED")
    const stored = fake.deployments.get(created.deploymentId!)
    expect(stored).toMatchObject({ source: "github", source_revision_config: { langgraph_config_path: "langgraph.json", repo_ref: "main" } })
    const moved = resultOf(await runAction(fake, { ...inputs, graphConfigPath: "agent/langgraph.json" }))
    expect(moved.outcome).toBe("updated")
    expect(fake.deployments.get(created.deploymentId!).source_revision_config.langgraph_config_path).toBe("agent/langgraph.json")
    expect(fake.problems).toEqual([])
  })
})
