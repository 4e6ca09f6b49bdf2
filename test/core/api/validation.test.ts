import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { controlPage, decodeWithIssues, Int, loneSurrogateIssues, pageQueryFields, Uuid } from "../../../core/api/index.ts"
import { ResourceSpec } from "../../../core/deployments/model.ts"

const issuesOf = (result: Result.Result<unknown, ReadonlyArray<{ loc: ReadonlyArray<string | number>; type: string; msg: string }>>) =>
  Result.getOrThrow(Result.flip(result)).map(({ loc, type }) => ({ loc: [...loc], type }))

describe("Uuid: case-insensitive", () => {
  it("decodes any case to lowercase, and refuses what is not a uuid", () => {
    expect(Result.getOrThrow(decodeWithIssues(Uuid)("6F1C7A34-8F0E-4B8E-9B5E-2B1F0A3C4D5E"))).toBe("6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e")
    expect(issuesOf(decodeWithIssues(Uuid, ["path", "id"])("6F1C7A34"))).toStrictEqual([{ loc: ["path", "id"], type: "uuid_parsing" }])
  })

  it("still documents itself as format uuid", () => {
    expect(Schema.toJsonSchemaDocument(Uuid).schema).toMatchObject({ type: "string", format: "uuid" })
  })
})

describe("Int: only exact integers", () => {
  it("refuses integers beyond 2^53 - 1, once, before any bound", () => {
    const decode = decodeWithIssues(ResourceSpec, ["body"])
    expect(issuesOf(decode({ min_scale: 9007199254740993, cpu: 1e300 }))).toStrictEqual([
      { loc: ["body", "min_scale"], type: "int_parsing_size" },
      // CPU is a fraction of cores (the real API's number, 0.1-8): 1e300 is out of range, not an integer issue.
      { loc: ["body", "cpu"], type: "less_than_equal" }
    ])
    expect(Result.isSuccess(decodeWithIssues(Int)(Number.MAX_SAFE_INTEGER))).toBe(true)
    expect(Result.isFailure(decodeWithIssues(Int)(-Number.MAX_SAFE_INTEGER - 1))).toBe(true)
    expect(issuesOf(decodeWithIssues(Int)(1.5))).toStrictEqual([{ loc: [], type: "int_from_float" }])
  })

  it("bounds show in the JSON schema", () => {
    const document: any = Schema.toJsonSchemaDocument(ResourceSpec)
    expect(document.definitions.ResourceSpec.properties.cpu.anyOf[0]).toMatchObject({ type: "number", minimum: 0.1, maximum: 8 })
    expect(document.definitions.ResourceSpec.properties.memory_mb.anyOf[0]).toMatchObject({ type: "integer", minimum: 1, maximum: 262144 })
    expect(document.definitions.ResourceSpec.properties.db_cpu.anyOf[0]).toMatchObject({ type: "number", exclusiveMinimum: 0, maximum: 64 })
  })

  it("offset: a value past 2^53 - 1 is a 422 entry, not a rounded number", () => {
    const decode = decodeWithIssues(Schema.Struct(pageQueryFields(controlPage)), ["query"], { excess: "ignore" })
    expect(issuesOf(decode({ offset: "9200000000000000000" }))).toStrictEqual([{ loc: ["query", "offset"], type: "int_parsing_size" }])
    expect(Result.getOrThrow(decode({ offset: "9007199254740991" }))).toStrictEqual({ offset: 9007199254740991 })
  })
})

describe("lone surrogates", () => {
  it("are found in strings and keys at any depth, with their path", () => {
    expect(loneSurrogateIssues({ a: ["ok", "\ud800"], b: { "\udc00": 1 }, c: "\ud83d\ude00" }, ["body"]).map(({ loc, type }) => ({ loc: [...loc], type }))).toStrictEqual([
      { loc: ["body", "a", 1], type: "string_unicode" },
      { loc: ["body", "b", "\udc00"], type: "string_unicode" }
    ])
  })

  it("refuse a decode wherever a string is accepted, even by an open schema", () => {
    const open = Schema.Record(Schema.String, Schema.Unknown)
    expect(issuesOf(decodeWithIssues(open, ["body"])({ x: { y: "a\udfffb" } }))).toStrictEqual([{ loc: ["body", "x", "y"], type: "string_unicode" }])
    expect(Result.isSuccess(decodeWithIssues(open)({ x: "emoji \ud83d\ude00" }))).toBe(true)
  })

  it("walks deep input without recursion", () => {
    let deep: unknown = "\ud800"
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(loneSurrogateIssues(deep)).toHaveLength(1)
  })
})
