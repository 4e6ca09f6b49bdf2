/**
 * The server decodes request bodies and queries with effect's JIT-compiled decoders
 * (`server/http/app.ts`, `compiled`), through `decodeWithIssues`, which takes effect's fast path
 * first. This suite checks that they answer exactly what the interpreter answered before, in one
 * pass collecting every issue: the same decoded value, or the same issues with the same `loc`,
 * `msg` and `type`, in the same order. The inputs are the fuzz suite's: valid
 * bodies with one or two fields bent, bodies of the wrong JSON type, arbitrary JSON, and query
 * strings built from the names each query schema describes.
 *
 * Every interpreted answer is taken before any schema is compiled: schemas share parts (a
 * deployment's source config is in POST and PATCH), and compiling one endpoint's schema swaps
 * the shared parts for every decoder built afterwards.
 */
import fc from "fast-check"
import { Result, Schema } from "effect"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import { describe, expect, it } from "vitest"
import { Api, type Endpoint } from "../../core/index.ts"
import { decodedOrIssues, decodeWithIssues, loneSurrogateIssues } from "../../core/api/validation.ts"
import { queryObject } from "../../server/http/app.ts"
import { bodyArbitrary, queryArbitrary, validBodies } from "../reliability/fuzz-support.ts"

const seed = Number(process.env.FUZZ_SEED ?? 20_261_127)
const runs = Number(process.env.FUZZ_RUNS ?? 100)

const endpoints = Object.values(Api) as ReadonlyArray<Endpoint>

/** What a decode answered, as comparable text (success value or issues; sizes decode to bigints). */
const answer = (result: unknown): string => JSON.stringify(result, (_key, value) => (typeof value === "bigint" ? `${value}n` : value))

/**
 * The reference: request decoding as it was before the server compiled it, interpreted, every
 * issue collected in one pass (`errors: "all"`), unknown keys ignored. `decodeWithIssues` now
 * tries effect's fast path first and decodes again only what it refuses: its answers must not
 * differ from these.
 */
const reference = (schema: NonNullable<Endpoint["body"]>, prefix: "body" | "query") => {
  const decode = Schema.decodeUnknownExit(schema as any, { errors: "all", onExcessProperty: "ignore" })
  return (input: unknown) => {
    const surrogates = loneSurrogateIssues(input, [prefix])
    return surrogates.length > 0 ? Result.fail(surrogates) : decodedOrIssues(decode(input), [prefix])
  }
}

interface Case {
  readonly label: string
  readonly schema: NonNullable<Endpoint["body"]>
  readonly prefix: "body" | "query"
  readonly inputs: ReadonlyArray<unknown>
  readonly interpreted: ReadonlyArray<string>
}

const cases: Array<Case> = []
for (const endpoint of endpoints) {
  const label = `${endpoint.method} ${endpoint.path}`
  if (endpoint.body) {
    const valid = validBodies[endpoint.name]
    if (!valid) throw new Error(`${endpoint.name}: no valid body in test/reliability/fuzz-support.ts`)
    const inputs = [valid(), ...fc.sample(bodyArbitrary(endpoint, valid), { seed, numRuns: runs })]
    const decode = reference(endpoint.body, "body")
    // structuredClone: a decode must not see an input another decode may have touched.
    cases.push({ label: `${label} body`, schema: endpoint.body, prefix: "body", inputs, interpreted: inputs.map((input) => answer(decode(structuredClone(input)))) })
  }
  if (endpoint.query) {
    const inputs = [{}, ...fc.sample(queryArbitrary(endpoint), { seed, numRuns: runs }).map((search) => queryObject(search, endpoint.queryArrays))]
    const decode = reference(endpoint.query, "query")
    cases.push({ label: `${label} query`, schema: endpoint.query, prefix: "query", inputs, interpreted: inputs.map((input) => answer(decode(structuredClone(input)))) })
  }
}
// Only now: from here on the shared parts of every schema are compiled.
for (const { schema } of cases) SchemaJITCompiler.enable(schema.ast)

describe("compiled request decoders answer what the interpreted one-pass decode answers", () => {
  it("covers every endpoint that takes a body or a query", () => {
    expect(cases.filter((c) => c.prefix === "body").length).toBe(endpoints.filter((e) => e.body).length)
    expect(cases.filter((c) => c.prefix === "query").length).toBe(endpoints.filter((e) => e.query).length)
  })

  it("the inputs exercise both outcomes: decoded values and 422 issues", () => {
    const all = cases.flatMap((c) => c.interpreted)
    expect(all.filter((text) => text.includes('"_tag":"Success"')).length).toBeGreaterThan(100)
    expect(all.filter((text) => text.includes('"_tag":"Failure"')).length).toBeGreaterThan(100)
  })

  for (const { label, schema, prefix, inputs, interpreted } of cases) {
    it(label, () => {
      const decode = decodeWithIssues(schema, [prefix], { excess: "ignore" })
      const compiled = inputs.map((input) => answer(decode(structuredClone(input))))
      for (let i = 0; i < inputs.length; i++) {
        expect(compiled[i], `input ${JSON.stringify(inputs[i]).slice(0, 300)}`).toBe(interpreted[i])
      }
    })
  }
})
