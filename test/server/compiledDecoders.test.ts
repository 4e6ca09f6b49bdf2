/**
 * The server decodes request bodies, queries and path parameters with effect's JIT-compiled
 * decoders (`server/http/app.ts`, `compiled`). This suite checks that they answer exactly what
 * the interpreter answers for the same schema: the same decoded value, or the same issues with
 * the same `loc`, `msg` and `type`, in the same order. The inputs are the fuzz suite's: valid
 * bodies with one or two fields bent, bodies of the wrong JSON type, arbitrary JSON, and query
 * strings built from the names each query schema describes.
 *
 * Every interpreted answer is taken before any schema is compiled: schemas share parts (a
 * deployment's source config is in POST and PATCH), and compiling one endpoint's schema swaps
 * the shared parts for every decoder built afterwards.
 */
import fc from "fast-check"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import { describe, expect, it } from "vitest"
import { Api, type Endpoint } from "../../core/index.ts"
import { decodeWithIssues } from "../../core/api/validation.ts"
import { bodyArbitrary, queryArbitrary, validBodies } from "../reliability/fuzz-support.ts"

const seed = Number(process.env.FUZZ_SEED ?? 20_261_127)
const runs = Number(process.env.FUZZ_RUNS ?? 100)

const endpoints = Object.values(Api) as ReadonlyArray<Endpoint>

/** What a decode answered, as comparable text (success value or issues; sizes decode to bigints). */
const answer = (result: unknown): string => JSON.stringify(result, (_key, value) => (typeof value === "bigint" ? `${value}n` : value))

/** `a=1&b=x&a=2` as the server reads it: the first value of each key, every value of a list parameter. */
const queryObject = (search: string, arrays: ReadonlyArray<string> = []): Record<string, unknown> => {
  const out: Record<string, string | Array<string>> = {}
  for (const [key, value] of new URLSearchParams(search)) {
    if (arrays.includes(key)) ((out[key] ??= []) as Array<string>).push(value)
    else if (!(key in out)) out[key] = value
  }
  return out
}

interface Case {
  readonly label: string
  readonly schema: Endpoint["body"]
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
    const decode = decodeWithIssues(endpoint.body, ["body"], { excess: "ignore" })
    // structuredClone: a decode must not see an input another decode may have touched.
    cases.push({ label: `${label} body`, schema: endpoint.body, prefix: "body", inputs, interpreted: inputs.map((input) => answer(decode(structuredClone(input)))) })
  }
  if (endpoint.query) {
    const inputs = [{}, ...fc.sample(queryArbitrary(endpoint), { seed, numRuns: runs }).map((search) => queryObject(search, endpoint.queryArrays))]
    const decode = decodeWithIssues(endpoint.query, ["query"], { excess: "ignore" })
    cases.push({ label: `${label} query`, schema: endpoint.query, prefix: "query", inputs, interpreted: inputs.map((input) => answer(decode(structuredClone(input)))) })
  }
}
// Only now: from here on the shared parts of every schema are compiled.
for (const { schema } of cases) SchemaJITCompiler.enable(schema!.ast)

describe("compiled request decoders answer what the interpreter answers", () => {
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
      const decode = decodeWithIssues(schema!, [prefix], { excess: "ignore" })
      const compiled = inputs.map((input) => answer(decode(structuredClone(input))))
      for (let i = 0; i < inputs.length; i++) {
        expect(compiled[i], `input ${JSON.stringify(inputs[i]).slice(0, 300)}`).toBe(interpreted[i])
      }
    })
  }
})
