/**
 * The quick path-parameter checks (server/http/params.ts) answer exactly what the schema decode
 * answers, for every endpoint with path parameters: the same decoded values on good input, and
 * the schema's own 422 issues (the quick check steps aside) on bad input.
 */
import { Result, type Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Api, decodeWithIssues, type Endpoint } from "../../core/index.ts"
import { fastParams } from "../../server/http/params.ts"

const withParams = (Object.values(Api) as ReadonlyArray<Endpoint>).filter((endpoint) => endpoint.params !== undefined) as ReadonlyArray<Endpoint & { readonly params: Schema.Top }>

const samples = [
  "3a491404-967e-433a-b9be-3c9140d7e92c",
  "3A491404-967E-433A-B9BE-3C9140D7E92C",
  "3a491404-967e-433a-b9be-3c9140d7e92",
  "not-a-uuid",
  "my-volume",
  "",
  "caf\u00e9",
  "bad\ud800",
  "x".repeat(300)
]

describe("quick path parameters", () => {
  it("covers the API's path parameters (uuids and plain names)", () => {
    expect(withParams.length).toBeGreaterThan(20)
    for (const endpoint of withParams) {
      const slow = decodeWithIssues(endpoint.params, ["path"])
      expect(fastParams(endpoint, slow), endpoint.name).not.toBe(slow)
    }
  })

  it("decodes every sample exactly as the schema does, on every endpoint", () => {
    let slowCalls = 0
    for (const endpoint of withParams) {
      const schema = decodeWithIssues(endpoint.params, ["path"])
      const counted = (input: Record<string, string>) => {
        slowCalls++
        return schema(input)
      }
      const quick = fastParams(endpoint, counted)
      const names = Object.keys((endpoint.params as unknown as { fields: Record<string, unknown> }).fields)
      for (const sample of samples) {
        for (const other of samples.slice(0, 2)) {
          const input = Object.fromEntries(names.map((name, index) => [name, index === 0 ? sample : other]))
          const expected = schema({ ...input })
          const actual = quick({ ...input })
          expect(Result.isSuccess(actual), `${endpoint.name} ${JSON.stringify(input)}`).toBe(Result.isSuccess(expected))
          if (Result.isSuccess(expected)) expect(Result.getOrThrow(actual)).toStrictEqual(Result.getOrThrow(expected))
          else expect(Result.isFailure(actual) && actual.failure).toStrictEqual(expected.failure)
        }
      }
    }
    // Refusals were answered by the schema decode (the quick check only accepts).
    expect(slowCalls).toBeGreaterThan(0)
  })

  it("answers a uuid lowercase and a name as sent, without the schema", () => {
    const slow = () => {
      throw new Error("the schema decode should not run")
    }
    expect(Result.getOrThrow(fastParams(Api.getRevision, slow)({ deployment_id: "3A491404-967E-433A-B9BE-3C9140D7E92C", revision_id: "d2924373-aacd-4e12-a016-06309e73bbfd" }))).toStrictEqual({
      deployment_id: "3a491404-967e-433a-b9be-3c9140d7e92c",
      revision_id: "d2924373-aacd-4e12-a016-06309e73bbfd"
    })
    expect(Result.getOrThrow(fastParams(Api.updateVolume, slow)({ name: "Data-1" }))).toStrictEqual({ name: "Data-1" })
  })
})
