/**
 * Hostile and careless input over real HTTP (issue 16, core parts): every case answers a 422
 * naming the rule, never a 500, and nothing a caller sends as a credential is echoed back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../core/api/index.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { containerBody, gitrepoBody, uniqueName } from "./deployments/helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

const json = { "content-type": "application/json" }
type Issue = { loc: Array<string | number>; msg: string; type: string }
const issues = (body: any): Array<Issue> => body.detail

describe("source fields are checked against their grammars", () => {
  it.each([
    [{ source_config: { repo_url: "file:///etc/passwd" } }, ["body", "source_config", "repo_url"], /transport 'file'/],
    [{ source_config: { repo_url: "ext::sh -c touch% /tmp/pwned" } }, ["body", "source_config", "repo_url"], /whitespace/],
    [{ source_config: { repo_url: "--upload-pack=touch /tmp/pwned" } }, ["body", "source_config", "repo_url"], /start with '-'/],
    [{ source_revision_config: { repo_ref: "--output=/tmp/x", graph_config_path: "langgraph.json" } }, ["body", "source_revision_config", "repo_ref"], /start with '-'/],
    [{ source_revision_config: { repo_ref: "main", graph_config_path: "../../etc/passwd" } }, ["body", "source_revision_config", "graph_config_path"], /inside the repository/]
  ])("gitrepo %j → 422", async (override, loc, rule) => {
    const base = gitrepoBody(uniqueName())
    const body = { ...base, ...override, source_config: { ...base.source_config, ...(override as any).source_config } }
    const response = await t.request("POST", "/v2/deployments", { body })
    expect(response.status, JSON.stringify(response.body)).toBe(422)
    const issue = issues(response.body).find((i) => JSON.stringify(i.loc) === JSON.stringify(loc))
    expect(issue?.type).toBe("value_error")
    expect(issue?.msg).toMatch(rule)
  })

  it.each(["--privileged", "shop:2\n--privileged", "Shop:2"])("image_uri %j → 422", async (image_uri) => {
    const response = await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_revision_config: { image_uri } }) })
    expect(response.status).toBe(422)
    expect(issues(response.body).map((i) => i.loc)).toStrictEqual([["body", "source_revision_config", "image_uri"]])
  })

  it("credentials in repo_url are refused and never echoed", async () => {
    const base = gitrepoBody(uniqueName())
    const response = await t.request("POST", "/v2/deployments", {
      body: { ...base, source_config: { ...base.source_config, repo_url: "https://x-access-token:ghs_SECRET@github.com/acme/agent" } }
    })
    expect(response.status).toBe(422)
    expect(JSON.stringify(response.body)).not.toContain("ghs_SECRET")
  })
})

describe("numbers", () => {
  it("an integer beyond 2^53 is refused, not rounded", async () => {
    const raw = JSON.stringify(containerBody(uniqueName())).replace('"min_scale":1', '"min_scale":9007199254740993')
    const response = await t.request("POST", "/v2/deployments", { raw, headers: json })
    expect(response.status).toBe(422)
    expect(issues(response.body)).toStrictEqual([expect.objectContaining({ loc: ["body", "source_config", "resource_spec", "min_scale"], type: "int_parsing_size" })])
  })

  it("cpu 1e300 is over the bound", async () => {
    const raw = JSON.stringify(containerBody(uniqueName())).replace('"cpu":1', '"cpu":1e300')
    const response = await t.request("POST", "/v2/deployments", { raw, headers: json })
    expect(response.status).toBe(422)
    expect(issues(response.body)[0]!.loc).toStrictEqual(["body", "source_config", "resource_spec", "cpu"])
  })

  it("a huge offset answers 422 on every list, never 500", async () => {
    const created = await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName()) })
    expect(created.status).toBe(201)
    const lists = Object.values(Api).filter((endpoint: any) => endpoint.method === "GET" && endpoint.query && "offset" in (endpoint.query.fields ?? {}))
    expect(lists.length).toBeGreaterThanOrEqual(8)
    for (const endpoint of lists as Array<{ path: string }>) {
      const path = endpoint.path.replace("{deployment_id}", created.body.id)
      for (const offset of ["9200000000000000000", "9007199254740992", "1e400"]) {
        const response = await t.request("GET", `${path}?offset=${offset}`)
        expect(response.status, `${path}?offset=${offset}: ${JSON.stringify(response.body)}`).toBe(422)
        expect(issues(response.body)[0]!.loc).toStrictEqual(["query", "offset"])
      }
      expect((await t.request("GET", `${path}?offset=9007199254740991`)).status, path).toBe(200)
    }
  })
})

describe("uuids are case-insensitive", () => {
  it("an uppercase id in a path finds the same deployment", async () => {
    const created = await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName()) })
    const upper = (created.body.id as string).toUpperCase()
    const found = await t.request("GET", `/v2/deployments/${upper}`)
    expect(found.status).toBe(200)
    expect(found.body.id).toBe(created.body.id)
    const revisions = await t.request("GET", `/v2/deployments/${upper}/revisions`)
    expect(revisions.status).toBe(200)
    expect(revisions.body.resources.length).toBeGreaterThan(0)
    const listed = await t.request("GET", `/v2/deployments?deployment_ids=${upper}`)
    expect(listed.body.resources.map((d: any) => d.id)).toStrictEqual([created.body.id])
  })
})

describe("text must be Unicode", () => {
  it("invalid UTF-8 in a body is a 422, not U+FFFD", async () => {
    const name = uniqueName()
    const raw = Buffer.concat([Buffer.from(`{"name":"${name}","source":"external_container","source_revision_config":{"image_uri":"a:1"},"image_version":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])
    const response = await t.request("POST", "/v2/deployments", { raw, headers: json })
    expect(response.status).toBe(422)
    expect(issues(response.body)).toStrictEqual([{ loc: ["body"], msg: "Invalid UTF-8 in the request body", type: "json_invalid" }])
    expect((await t.request("GET", `/v2/deployments?name_contains=${name}`)).body.resources).toStrictEqual([])
  })

  it("a lone surrogate in a string is a 422 at its field", async () => {
    const raw = JSON.stringify(containerBody(uniqueName(), { image_version: "x" })).replace('"image_version":"x"', '"image_version":"\\ud800"')
    const response = await t.request("POST", "/v2/deployments", { raw, headers: json })
    expect(response.status).toBe(422)
    expect(issues(response.body)).toStrictEqual([expect.objectContaining({ loc: ["body", "image_version"], type: "string_unicode" })])
  })

  it("a lone surrogate in a template image is refused, not rewritten", async () => {
    const raw = JSON.stringify({ name: "t-surrogate", image: "python" }).replace('"python"', '"python\\udc00"')
    const response = await t.request("POST", "/v2/sandboxes/templates", { raw, headers: json })
    expect(response.status).toBe(422)
    expect(issues(response.body)).toStrictEqual([expect.objectContaining({ loc: ["body", "image"], type: "string_unicode" })])
  })

  it("a quantity with a line break is a quantity error at body.size", async () => {
    const response = await t.request("POST", "/v2/sandboxes/volumes", { body: { name: "v-newline", size: "10Gi\n" } })
    expect(response.status).toBe(422)
    expect(issues(response.body).map(({ loc, type }) => ({ loc, type }))).toStrictEqual([{ loc: ["body", "size"], type: "quantity_parsing" }])
  })
})
