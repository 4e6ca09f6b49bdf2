// @ts-nocheck
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parse as parseYaml } from "yaml"
import {
  defaults,
  inputNames,
  nameFromRepository,
  parseDuration,
  parseInputs,
  parseResourceSpec,
  parseSecrets,
  refFromContext,
  type RunContext
} from "../../action/inputs.ts"

const context: RunContext = { repository: "Acme/My_Service.js", ref: "refs/heads/main", headRef: undefined }
const base = { "api-url": "https://slipway.example.com", "api-key": "slw_key", "image-uri": "registry.example.com/app:1" }

const parse = (values: Record<string, string>, ctx: RunContext = context) => parseInputs((name) => values[name] ?? "", ctx)
const errorsOf = (values: Record<string, string>, ctx?: RunContext) => {
  const result = parse(values, ctx)
  if (result.ok) throw new Error("expected input errors")
  return result.errors
}
const inputsOf = (values: Record<string, string>, ctx?: RunContext) => {
  const result = parse(values, ctx)
  if (!result.ok) throw new Error(JSON.stringify(result.errors))
  return result.inputs
}

describe("action.yml", () => {
  const manifest = parseYaml(readFileSync(join(import.meta.dirname, "../../action.yml"), "utf8"))

  it("declares exactly the inputs the code reads, each with a description", () => {
    expect(Object.keys(manifest.inputs)).toEqual([...inputNames])
    for (const name of inputNames) expect(manifest.inputs[name].description.length).toBeGreaterThan(10)
  })

  it("states the defaults the code applies, and runs dist/index.js on node24", () => {
    expect(manifest.inputs.wait.default).toBe(defaults.wait)
    expect(manifest.inputs.timeout.default).toBe(defaults.timeout)
    expect(manifest.inputs["poll-interval"].default).toBe(defaults.pollInterval)
    expect(manifest.runs).toEqual({ using: "node24", main: "dist/index.js" })
    expect(Object.keys(manifest.outputs)).toEqual(["deployment-id", "revision-id", "status", "url", "created"])
  })
})

describe("defaults from the workflow context", () => {
  it("derives a valid name from the repository", () => {
    expect(nameFromRepository("Acme/My_Service.js")).toBe("my-service-js")
    expect(nameFromRepository("acme/--Weird__Name--")).toBe("weird-name")
    expect(nameFromRepository(`acme/${"a".repeat(62)}_b`)).toBe("a".repeat(62))
    expect(inputsOf(base).name).toBe("my-service-js")
  })

  it("fails when no valid name can be derived", () => {
    expect(errorsOf(base, { ...context, repository: "acme/___" })).toEqual([expect.objectContaining({ input: "name" })])
  })

  it("uses the pushed branch, the tag ref, or the PR's source branch as repo-ref", () => {
    expect(refFromContext({ ...context, ref: "refs/heads/feature/x" })).toBe("feature/x")
    expect(refFromContext({ ...context, ref: "refs/tags/v1.2.0" })).toBe("refs/tags/v1.2.0")
    expect(refFromContext({ ...context, ref: "refs/pull/7/merge", headRef: "fix-it" })).toBe("fix-it")
    expect(refFromContext({ ...context, ref: "refs/pull/7/merge" })).toBeUndefined()
  })

  it("applies repo-ref only to gitrepo", () => {
    const git = { "api-url": base["api-url"], "api-key": "k", "repo-url": "https://github.com/acme/app", "graph-config-path": "langgraph.json" }
    expect(inputsOf(git).repoRef).toBe("main")
    expect(inputsOf(git).source).toBe("gitrepo")
    expect(inputsOf({ ...git, "repo-ref": "release" }).repoRef).toBe("release")
    expect(inputsOf(base).repoRef).toBeUndefined()
  })
})

describe("parseInputs", () => {
  it("reads a full external_container configuration", () => {
    const inputs = inputsOf({
      ...base,
      "tenant-id": "00000000-0000-4000-8000-000000000001",
      name: "web",
      source: "external_container",
      "listener-id": "11111111-1111-4111-8111-111111111111",
      "k8s-namespace": "prod",
      secrets: "A=1\nB=two=2",
      "resource-spec": "min_scale: 1\ncpu: 2",
      wait: "false",
      timeout: "90s",
      "poll-interval": "250ms"
    })
    expect(inputs).toMatchObject({
      apiUrl: "https://slipway.example.com",
      name: "web",
      source: "external_container",
      imageUri: "registry.example.com/app:1",
      secrets: [
        { name: "A", value: "1" },
        { name: "B", value: "two=2" }
      ],
      resourceSpec: { min_scale: 1, cpu: 2 },
      wait: false,
      timeoutMs: 90_000,
      pollIntervalMs: 250
    })
  })

  it("defaults wait, timeout and poll-interval", () => {
    expect(inputsOf(base)).toMatchObject({ wait: true, timeoutMs: 15 * 60_000, pollIntervalMs: 5000, source: "external_container" })
  })

  it("reports every bad input at once, each by name", () => {
    const errors = errorsOf({
      "api-url": "slipway.example.com",
      name: "Bad_Name",
      source: "docker",
      "tenant-id": "nope",
      wait: "yes",
      timeout: "soon",
      "resource-spec": "[1, 2]",
      secrets: "not a pair"
    })
    expect(errors.map((error) => error.input).sort()).toEqual(
      ["api-key", "api-url", "name", "resource-spec", "secrets", "source", "tenant-id", "timeout", "wait"].sort()
    )
    expect(errors.find((error) => error.input === "source")!.message).toContain("external_container or gitrepo")
  })

  it("refuses inputs of the other source", () => {
    const errors = errorsOf({ ...base, source: "gitrepo", "repo-url": "https://github.com/a/b", "resource-spec": "cpu: 1" })
    expect(errors.map((error) => error.input).sort()).toEqual(["image-uri", "resource-spec"])
    expect(errors[0]!.message).toBe("applies to source external_container only, but source is gitrepo")
    expect(errorsOf({ ...base, "graph-config-path": "g.json" })).toEqual([expect.objectContaining({ input: "graph-config-path" })])
  })

  it("asks for source when both image-uri and repo-url are given", () => {
    expect(errorsOf({ ...base, "repo-url": "https://github.com/a/b" })).toEqual([expect.objectContaining({ input: "source" })])
  })

  it("refuses build-on-push with a tag ref", () => {
    const git = { "api-url": base["api-url"], "api-key": "k", "repo-url": "https://github.com/a/b", "build-on-push": "true" }
    expect(errorsOf(git, { ...context, ref: "refs/tags/v1" })).toEqual([expect.objectContaining({ input: "build-on-push" })])
    expect(inputsOf(git).buildOnPush).toBe(true)
  })

  it("never quotes a secret value or the API key in an error", () => {
    const errors = errorsOf({ ...base, "api-url": "", secrets: '{"A": "hunter2", "B": 5, "bad name": "hunter3"' })
    const text = JSON.stringify(errors)
    expect(text).not.toContain("hunter2")
    expect(text).not.toContain("hunter3")
    expect(text).not.toContain("slw_key")
  })
})

describe("parseSecrets", () => {
  it("reads NAME=value lines, skipping blanks and comments, keeping the value verbatim", () => {
    expect(parseSecrets("# db\nDB_URL=postgres://u:p@h/db?x=1\n\n  TOKEN = a b \r\n")).toEqual({
      ok: true,
      secrets: [
        { name: "DB_URL", value: "postgres://u:p@h/db?x=1" },
        { name: "TOKEN", value: " a b " }
      ]
    })
  })

  it("reads a JSON object or array", () => {
    expect(parseSecrets('{"A": "1", "B": "x\\ny"}')).toEqual({ ok: true, secrets: [{ name: "A", value: "1" }, { name: "B", value: "x\ny" }] })
    expect(parseSecrets('[{"name": "A", "value": ""}]')).toEqual({ ok: true, secrets: [{ name: "A", value: "" }] })
  })

  it("names the line or entry of each problem", () => {
    expect(parseSecrets("A=1\nno-equals\n1X=2\nA=3")).toEqual({
      ok: false,
      errors: [
        "line 2: expected NAME=value",
        "line 3: the name must be a letter or underscore followed by letters, digits or underscores",
        "line 4: A is given more than once"
      ]
    })
    expect(parseSecrets('[{"name": "A"}, 3]')).toEqual({
      ok: false,
      errors: ["entry 1 (A): the value must be a string", "entry 2: expected an object with name and value"]
    })
    expect(parseSecrets("{oops")).toMatchObject({ ok: false })
  })
})

describe("parseResourceSpec and parseDuration", () => {
  it("reads JSON and YAML mappings", () => {
    expect(parseResourceSpec('{"cpu": 1, "labels": {"team": "a"}}')).toEqual({ ok: true, spec: { cpu: 1, labels: { team: "a" } } })
    expect(parseResourceSpec("cpu: 1\nlabels:\n  team: a\n")).toEqual({ ok: true, spec: { cpu: 1, labels: { team: "a" } } })
  })

  it("rejects malformed text and non-mappings", () => {
    expect(parseResourceSpec("cpu: [1")).toMatchObject({ ok: false })
    expect(parseResourceSpec("just text")).toMatchObject({ ok: false, error: expect.stringContaining("mapping") })
  })

  it("parses durations", () => {
    expect(parseDuration("900")).toBe(900_000)
    expect(parseDuration("15m")).toBe(900_000)
    expect(parseDuration("1h30m")).toBe(5_400_000)
    expect(parseDuration("250ms")).toBe(250)
    expect(parseDuration("1.5s")).toBe(1500)
    expect(parseDuration("15 minutes")).toBeUndefined()
    expect(parseDuration("")).toBeUndefined()
  })
})
