/**
 * Secret values never leak: a child server at LOG_LEVEL=debug handles deployments with secrets
 * (create, PATCH, new revisions, failed validations, the runtime advancing revisions, a signed
 * push through a git-host integration) and its whole output never contains a secret value or the
 * integration's webhook secret; answers show "********"; and with SLIPWAY_SECRETS_KEY
 * set, neither the database file nor its WAL holds a value in plaintext.
 */
// @ts-nocheck

import { execFile } from "node:child_process"
import { createHmac } from "node:crypto"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"
import { DEFAULT_TENANT_ID } from "../../server/index.ts"
import { type ChildServer, eventually, spawnServer, tempDatabasePath } from "../support/server.ts"
import { databaseBytes, stopChild } from "./support.ts"

const database = tempDatabasePath("slipway-secrets")
let child: ChildServer | undefined
afterAll(async () => {
  await stopChild(child)
  database.remove()
})

const run = crypto.randomUUID().slice(0, 8)
let webhookSecret = ""
const secretValues = [
  `sv-plain-${run}-0123456789`,
  `sv-quote"d-${run}\\slash`,
  `sv-unicode-${run}-pässwörd-秘密`,
  `sv-json-${run}-{"nested":"x"}`,
  `sv-patch-${run}-abcdef`,
  `sv-revision-${run}-ghijkl`,
  `sv-invalid-${run}-mnopqr`
]

/** Every form a value could take in a JSON log line or response. */
const forms = (value: string) => [value, JSON.stringify(value).slice(1, -1), Buffer.from(value).toString("base64")]

describe("secret values", () => {
  it("never appear in debug logs or answers, and are not stored in plaintext when a secrets key is set", async () => {
    child = await spawnServer({ databasePath: database.path, env: { LOG_LEVEL: "debug", SLIPWAY_SECRETS_KEY: "reliability-suite-secrets-key" } })
    const answers: Array<unknown> = []
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await child!.request(method, path, body === undefined ? {} : { body })
      answers.push(response.body)
      return response
    }

    const ids: Array<string> = []
    for (const [i, source] of (["external_container", "external_container", "gitrepo"] as const).entries()) {
      const created = await call("POST", "/v2/deployments", {
        name: `secret-${run}-${i}`,
        source,
        ...(source === "gitrepo"
          ? { source_config: { repo_url: "https://github.com/o/r", deployment_type: "dev", build_on_push: false }, source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" } }
          : { source_revision_config: { image_uri: `registry.example.com/app:${i}` } }),
        secrets: secretValues.slice(0, 4).map((value, j) => ({ name: `SECRET_${j}`, value }))
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body.secrets.every((secret: { value: string }) => secret.value === "********")).toBe(true)
      ids.push(created.body.id)
    }
    const id = ids[0]!
    expect((await call("PATCH", `/v2/deployments/${id}`, { secrets: [{ name: "PATCHED", value: secretValues[4] }] })).status).toBe(200)
    expect((await call("POST", `/v2/deployments/${id}/revisions`, { secrets: [{ name: "REV", value: secretValues[5] }] })).status).toBe(201)
    // Refused requests carrying secrets: bad body, unknown deployment, duplicate name.
    const invalid = await call("POST", "/v2/deployments", { name: "Not Valid!", source: "external_container", secrets: [{ name: "X", value: secretValues[6] }, { name: 7, value: secretValues[6] }] })
    expect(invalid.status).toBe(422)
    expect((await call("PATCH", `/v2/deployments/${crypto.randomUUID()}`, { secrets: [{ name: "X", value: secretValues[6] }] })).status).toBe(404)
    expect((await call("POST", "/v2/deployments", { name: `secret-${run}-0`, source: "external_container", source_revision_config: { image_uri: "x/y:1" }, secrets: [{ name: "X", value: secretValues[6] }] })).status).toBe(409)
    const malformed = await child.request("POST", "/v2/deployments", { raw: `{"name":"m","secrets":[{"name":"X","value":"${secretValues[6]}"}`, headers: { "content-type": "application/json" } })
    expect(malformed.status).toBe(422)
    answers.push(malformed.body)

    // A git-host integration (its webhook secret is a secret too) and a signed push through it.
    const { stdout } = await promisify(execFile)(process.execPath, ["server/keys.ts", "integration", "add", "--tenant", DEFAULT_TENANT_ID, "--owner", "o"], {
      cwd: join(import.meta.dirname, "../.."),
      env: { ...process.env, DATABASE_PATH: database.path, SLIPWAY_SECRETS_KEY: "reliability-suite-secrets-key" },
      encoding: "utf8"
    })
    webhookSecret = JSON.parse(stdout.trim()).webhook_secret
    expect(webhookSecret).toMatch(/^[0-9a-f]{32,}$/)
    const push = JSON.stringify({ ref: "refs/heads/main", after: "a".repeat(40), repository: { clone_url: "https://github.com/o/r.git", html_url: "https://github.com/o/r", full_name: "o/r" } })
    const pushed = await child.request("POST", "/v1/integrations/gitrepo/webhook", {
      key: null,
      raw: push,
      headers: { "content-type": "application/json", "x-github-event": "push", "x-hub-signature-256": `sha256=${createHmac("sha256", webhookSecret).update(push).digest("hex")}` }
    })
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(202)
    answers.push(pushed.body)
    answers.push((await call("GET", "/v1/integrations/gitrepo/install")).body)

    // Reads, and the runtime working through the revisions (it logs at debug).
    await call("GET", "/v2/deployments?limit=100")
    for (const deploymentId of ids) {
      await call("GET", `/v2/deployments/${deploymentId}`)
      await call("GET", `/v2/deployments/${deploymentId}/revisions`)
    }
    await eventually(async () => {
      const revisions = await child!.request("GET", `/v2/deployments/${id}/revisions`)
      return revisions.body.resources.every((revision: { status: string }) => !["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING"].includes(revision.status)) ? true : undefined
    }, 15_000)
    expect(child.output()).toContain('"level":"debug"')

    // Killed, so the WAL keeps whatever was written; then the output is complete too.
    await stopChild(child, "SIGKILL")
    const output = child.output()
    child = undefined
    const bytes = databaseBytes(database.path)
    const answerText = JSON.stringify(answers)
    for (const value of [...secretValues, webhookSecret]) {
      for (const form of forms(value)) {
        expect(output.includes(form), `log output contains ${form}`).toBe(false)
        expect(answerText.includes(form), `an answer contains ${form}`).toBe(false)
        expect(bytes.includes(Buffer.from(form, "utf8")), `database contains ${form}`).toBe(false)
      }
    }
    // The names are stored (the scan sees the right bytes).
    expect(bytes.includes(Buffer.from("SECRET_0", "utf8"))).toBe(true)
  })
})
