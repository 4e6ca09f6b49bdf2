// @ts-nocheck
import { describe, expect, it } from "vitest"
import { fromErrorResponse } from "../../core/api/errors.ts"
import { TransportError } from "../../core/client/errors.ts"
import { describeError, inputForLoc } from "../../action/errors.ts"
import { formatElapsed, renderSummary } from "../../action/summary.ts"

const inputs = {
  name: "web",
  tenantId: undefined,
  apiUrl: "https://slipway.example.com",
  secrets: [
    { name: "DB_URL", value: "postgres://secret" },
    { name: "TOKEN", value: "t0ps3cret" }
  ]
}

describe("inputForLoc", () => {
  it("maps API locations back to the inputs that set them", () => {
    expect(inputForLoc(["body", "source_revision_config", "image_uri"])).toEqual({ input: "image-uri", within: undefined })
    expect(inputForLoc(["body", "source_revision_config", "repo_ref"]).input).toBe("repo-ref")
    expect(inputForLoc(["body", "source_config", "listener_config", "k8s_namespace"])).toEqual({ input: "k8s-namespace", within: undefined })
    expect(inputForLoc(["body", "source_config", "resource_spec", "sidecars", 0, "image"])).toEqual({ input: "resource-spec", within: "sidecars[0].image" })
    expect(inputForLoc(["body", "secrets", 1, "name"], inputs)).toEqual({ input: "secrets", within: "secret #2 (TOKEN) name" })
    expect(inputForLoc(["path", "revision_id"]).input).toBe("redeploy-revision-id")
    expect(inputForLoc(["body", "name"]).input).toBe("name")
    expect(inputForLoc(["body", "image_version"]).input).toBeUndefined()
  })
})

describe("describeError", () => {
  it("turns a 422 list into one annotation per issue, naming the input", () => {
    const error = fromErrorResponse(422, {
      detail: [
        { loc: ["body", "source_revision_config", "image_uri"], msg: "String should have at least 1 character", type: "string_too_short" },
        { loc: ["body", "source_config", "resource_spec", "cpu"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" },
        { loc: ["body", "image_version"], msg: "Input should be a valid string", type: "string_type" }
      ]
    })
    expect(describeError(error, "create", inputs)).toEqual([
      {
        input: "image-uri",
        title: "Slipway: input image-uri",
        message: "image-uri: String should have at least 1 character [API: body.source_revision_config.image_uri, string_too_short]"
      },
      {
        input: "resource-spec",
        title: "Slipway: input resource-spec",
        message: "resource-spec (at cpu): Input should be greater than or equal to 1 [API: body.source_config.resource_spec.cpu, greater_than_equal]"
      },
      {
        input: undefined,
        title: "Slipway: validation error",
        message: "Input should be a valid string [API: body.image_version, string_type] while creating the deployment"
      }
    ])
  })

  it("names secrets by position and name, never by value", () => {
    const error = fromErrorResponse(422, { detail: [{ loc: ["body", "secrets", 0, "value"], msg: "bad", type: "value_error" }] })
    const [annotation] = describeError(error, "update", inputs)
    expect(annotation!.message).toBe("secrets (at secret #1 (DB_URL) value): bad [API: body.secrets.0.value, value_error]")
    expect(annotation!.message).not.toContain("postgres://secret")
  })

  it("reads 404 and 400 on redeploy as problems of redeploy-revision-id", () => {
    expect(describeError(fromErrorResponse(400, { detail: "Revision x never reached DEPLOYED" }), "redeploy", inputs)).toEqual([
      { input: "redeploy-revision-id", title: "Slipway: input redeploy-revision-id", message: "redeploy-revision-id: cannot be redeployed: Revision x never reached DEPLOYED" }
    ])
    expect(describeError(fromErrorResponse(404, { detail: "Revision x not found" }), "redeploy", inputs)[0]!.input).toBe("redeploy-revision-id")
    expect(describeError(fromErrorResponse(404, { detail: "Deployment d not found" }), "update", inputs)[0]).toMatchObject({
      input: undefined,
      message: expect.stringContaining("deleted meanwhile")
    })
  })

  it("reads a 409 on create as the name being taken, auth errors as api-key / tenant-id, transport as api-url", () => {
    expect(describeError(fromErrorResponse(409, { detail: "Deployment name web is taken" }), "create", inputs)[0]!.input).toBe("name")
    expect(describeError(fromErrorResponse(401, { detail: "Invalid API key" }), "find", inputs)[0]!.input).toBe("api-key")
    expect(describeError(fromErrorResponse(403, { detail: "Forbidden" }), "find", { ...inputs, tenantId: "t" })[0]!.input).toBe("tenant-id")
    const transport = new TransportError({ reason: "network", method: "GET", url: "u", message: "connect ECONNREFUSED" })
    expect(describeError(transport, "find", inputs)).toEqual([
      {
        input: "api-url",
        title: "Slipway: input api-url",
        message: "api-url: no answer from https://slipway.example.com while looking up the deployment: connect ECONNREFUSED"
      }
    ])
    expect(describeError(fromErrorResponse(503, { detail: "busy" }), "update", inputs)[0]).toMatchObject({
      input: undefined,
      message: "busy (while updating the deployment, HTTP 503)"
    })
  })
})

describe("summary", () => {
  it("formats elapsed times", () => {
    expect(formatElapsed(860)).toBe("0.9s")
    expect(formatElapsed(65_000)).toBe("1m 05s")
    expect(formatElapsed(3_725_000)).toBe("1h 02m 05s")
  })

  it("renders a table with deployment, revision link, status, url and elapsed time", () => {
    const markdown = renderSummary({
      outcome: "updated",
      deploymentName: "web",
      deploymentId: "d-1",
      revisionId: "r-2",
      status: "DEPLOYED",
      url: "http://x/d/web",
      elapsedMs: 4200,
      revisionLink: "https://api/v2/deployments/d-1/revisions/r-2",
      changes: ["image-uri: a → b|c"]
    })
    expect(markdown).toBe(
      [
        "### Slipway deployment web: updated",
        "",
        "| Field | Value |",
        "| --- | --- |",
        "| Deployment | web (`d-1`) |",
        "| Revision | [r-2](https://api/v2/deployments/d-1/revisions/r-2) |",
        "| Status | ✅ DEPLOYED |",
        "| URL | [http://x/d/web](http://x/d/web) |",
        "| Elapsed | 4.2s |",
        "",
        "**Changes**",
        "",
        "- image-uri: a → b\\|c",
        ""
      ].join("\n")
    )
  })

  it("shows the error of a failed run", () => {
    const markdown = renderSummary({
      outcome: "failed",
      deploymentName: "web",
      deploymentId: undefined,
      revisionId: undefined,
      status: "DEPLOY_FAILED",
      url: undefined,
      elapsedMs: 0,
      revisionLink: undefined,
      changes: [],
      error: "Revision r ended in DEPLOY_FAILED"
    })
    expect(markdown).toContain("| Status | ❌ DEPLOY_FAILED |")
    expect(markdown).toContain("| URL | — |")
    expect(markdown).toContain("**Error**\n\n```\nRevision r ended in DEPLOY_FAILED\n```")
  })
})
