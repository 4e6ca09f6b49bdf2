/** Matches a request path against the endpoint descriptions' path templates. */
import type { Endpoint } from "../../core/index.ts"

interface CompiledRoute<H> {
  readonly endpoint: Endpoint
  readonly handler: H
  /** Literal segments as strings, parameters as `{ param }`. */
  readonly segments: ReadonlyArray<string | { readonly param: string }>
}

export type RouteMatch<H> =
  | { readonly _tag: "Found"; readonly endpoint: Endpoint; readonly handler: H; readonly params: Record<string, string> }
  | { readonly _tag: "MethodNotAllowed"; readonly allowed: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }

const splitPath = (path: string) => path.split("/").filter((segment) => segment.length > 0)

/** `splitPath` in one pass, without the intermediate array (it runs on every request). */
const segmentsOf = (path: string): Array<string> => {
  const parts: Array<string> = []
  let start = 0
  for (let index = 0; index <= path.length; index++) {
    if (index === path.length || path.charCodeAt(index) === 47 /* / */) {
      if (index > start) parts.push(path.slice(start, index))
      start = index + 1
    }
  }
  return parts
}

export const makeRouter = <H>(routes: ReadonlyArray<{ endpoint: Endpoint; handler: H }>) => {
  // Grouped by segment count: a lookup only compares routes of the right length.
  const bySize = new Map<number, Array<CompiledRoute<H>>>()
  for (const { endpoint, handler } of routes) {
    const segments = splitPath(endpoint.path).map((segment) => {
      const match = /^\{(\w+)\}$/.exec(segment)
      return match ? { param: match[1]! } : segment
    })
    const group = bySize.get(segments.length) ?? []
    group.push({ endpoint, handler, segments })
    // Literal segments win over parameters (e.g. /boxes/{name}/status vs /boxes/{name}).
    group.sort((a, b) => literalScore(b) - literalScore(a))
    bySize.set(segments.length, group)
  }

  const match = (method: string, path: string): RouteMatch<H> => {
    let parts: Array<string>
    try {
      parts = segmentsOf(path)
      // Most paths have no escapes: decode only the segments that have one.
      for (let index = 0; index < parts.length; index++) if (parts[index]!.includes("%")) parts[index] = decodeURIComponent(parts[index]!)
    } catch {
      return { _tag: "NotFound" }
    }
    const allowed: Array<string> = []
    for (const route of bySize.get(parts.length) ?? []) {
      const params = matchSegments(route.segments, parts)
      if (!params) continue
      if (route.endpoint.method === method) return { _tag: "Found", endpoint: route.endpoint, handler: route.handler, params }
      allowed.push(route.endpoint.method)
    }
    return allowed.length > 0 ? { _tag: "MethodNotAllowed", allowed } : { _tag: "NotFound" }
  }
  return { match }
}

const literalScore = (route: CompiledRoute<unknown>) =>
  route.segments.reduce<number>((score, segment, index) => score + (typeof segment === "string" ? 2 ** (16 - index) : 0), 0)

/** The literal segments are compared first: a route that does not match allocates nothing. */
const matchSegments = (segments: CompiledRoute<unknown>["segments"], parts: ReadonlyArray<string>) => {
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!
    if (typeof segment === "string" && segment !== parts[index]) return undefined
  }
  const params: Record<string, string> = {}
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!
    if (typeof segment !== "string") params[segment.param] = parts[index]!
  }
  return params
}
