/** Small schemas shared by every area of the API: ids, timestamps, query integers, pagination. */
import { Schema, SchemaTransformation } from "effect"
import { atLeast, atMost, Int, rule } from "./validation.ts"

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True for a uuid in its canonical 8-4-4-4-12 hex form (any case). */
export const isUuid = (text: string): boolean => uuidPattern.test(text)

/**
 * A uuid, in any case on the way in and lowercase once decoded: uuids are case-insensitive
 * (RFC 9562), and every id the server stores and answers is lowercase, so an uppercase id in a
 * path, query or body finds the same row.
 */
export const Uuid = Schema.String.annotate({ format: "uuid", description: "A uuid (any case in a request; answered lowercase)" })
  .check(rule(isUuid, "Input should be a valid UUID", "uuid_parsing"))
  .pipe(Schema.decode(SchemaTransformation.toLowerCase()))

/** ISO 8601 UTC timestamp with milliseconds, as the server writes them. */
export const Timestamp = Schema.String.annotate({ format: "date-time", description: "ISO 8601 UTC timestamp with milliseconds", examples: ["2026-01-01T12:00:00.000Z"] })

/**
 * A field's text in /openapi.json (and examples where its constraints suggest none): the
 * annotation the generator reads, kept beside the schema it describes.
 */
export const doc = <S extends Schema.Top>(schema: S, description: string, examples?: ReadonlyArray<unknown>): S =>
  schema.annotate({ description, ...(examples ? { examples } : {}) } as any) as unknown as S

/** A query-string integer: `"20"` decodes to 20; `"x"` is an `int_parsing` issue. */
export const IntFromQuery = Schema.String.check(
  rule((s: string) => /^-?\d+$/.test(s.trim()), "Input should be a valid integer, unable to parse string as an integer", "int_parsing")
).pipe(Schema.decodeTo(Int, SchemaTransformation.transform({ decode: (s: string) => globalThis.Number(s.trim()), encode: (n: number) => String(n) })))

const bounded = (min: number, max?: number) =>
  max === undefined ? IntFromQuery.check(atLeast(min)) : IntFromQuery.check(atLeast(min)).check(atMost(max))

export interface PageBounds {
  readonly maxLimit: number
  readonly defaultLimit: number
}

/** Control-plane lists: limit 1–100, default 20. Sandbox lists: limit 1–500, default 100. */
export const controlPage: PageBounds = { maxLimit: 100, defaultLimit: 20 }
export const sandboxPage: PageBounds = { maxLimit: 500, defaultLimit: 100 }

/** The `limit`/`offset` query fields of a list endpoint. */
export const pageQueryFields = (bounds: PageBounds) => ({
  limit: Schema.optionalKey(doc(bounded(1, bounds.maxLimit), `Most items to answer (default ${bounds.defaultLimit})`, [bounds.defaultLimit])),
  // Bounded so that every accepted offset is an exact integer SQLite can bind (9.2e18 is not).
  offset: Schema.optionalKey(bounded(0, Number.MAX_SAFE_INTEGER))
})

export interface Page {
  readonly limit: number
  readonly offset: number
}

/** The one pagination helper: resolves defaults, and builds `{[key]: items, offset: next}`. */
export const Pagination = {
  resolve: (query: { readonly limit?: number; readonly offset?: number }, bounds: PageBounds): Page => ({
    limit: query.limit ?? bounds.defaultLimit,
    offset: query.offset ?? 0
  }),
  response: <K extends string, A>(key: K, items: ReadonlyArray<A>, page: Page) =>
    ({ [key]: items, offset: page.offset + items.length }) as { [P in K]: ReadonlyArray<A> } & { offset: number }
}
