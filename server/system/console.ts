/**
 * Serves the web console (docs/console.md): `GET /console` answers its page, `GET /console/{file}`
 * its built assets (console/dist, made by `npm run build:console`), and `GET /` redirects to it.
 *
 * The files are read once, when the routes are built, into a map keyed by file name: a request
 * can only ever name one of those keys, so no path it sends (`..`, `%2F`, absolute paths) reaches
 * the file system. Hashed asset names are cached for a year (`immutable`); the page itself is
 * revalidated on every load (`no-cache` + ETag), so a new build is picked up at once.
 *
 * These endpoints are described here, not in `core/api`: they are not part of the API, so they
 * stay out of /openapi.json and the typed client.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { extname, join } from "node:path"
import { Effect, Schema } from "effect"
import { endpoint } from "../../core/index.ts"
import { RawResponse, type Route } from "../http/app.ts"
import type { Logger } from "../log.ts"
import { implement } from "../module.ts"

const system = { area: "system", tag: "system", auth: false } as const

export const consoleEndpoints = {
  root: endpoint({ ...system, name: "root", method: "GET", path: "/", summary: "Redirects to the web console" }),
  console: endpoint({ ...system, name: "console", method: "GET", path: "/console", summary: "The web console (HTML)" }),
  consoleAsset: endpoint({
    ...system,
    name: "consoleAsset",
    method: "GET",
    path: "/console/{file}",
    summary: "A file of the web console (script, style sheet, icon)",
    params: Schema.Struct({ file: Schema.String })
  })
} as const

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8"
}

/** esbuild's `[name]-[hash]` names: content-addressed, so they never change under a client. */
const hashedName = /-[A-Z0-9]{8}\.\w+$/

/**
 * The console talks only to its own origin, except a box's terminal, which calls the box's
 * `dataplane_url` (possibly another origin, per SLIPWAY_PUBLIC_URL).
 */
const pageSecurityHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' http: https:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer"
}

interface Asset {
  readonly contentType: string
  readonly body: Uint8Array
  readonly etag: string
  readonly cacheControl: string
}

/** Where `npm run build:console` writes, seen from the sources (server/system/) or the compiled lib/server/system/. */
export const defaultConsoleDirs = [join(import.meta.dirname, "../../console/dist"), join(import.meta.dirname, "../../../console/dist")]

export const loadConsoleAssets = (dir: string): Map<string, Asset> => {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(dir)) {
    const contentType = contentTypes[extname(name)]
    const path = join(dir, name)
    if (!contentType || !/^[\w.-]+$/.test(name) || !statSync(path).isFile()) continue
    const body = readFileSync(path)
    assets.set(name, {
      contentType,
      body,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      cacheControl: hashedName.test(name) ? "public, max-age=31536000, immutable" : "no-cache"
    })
  }
  return assets
}

const notBuilt = new RawResponse(
  "text/html; charset=utf-8",
  "<!doctype html><title>Slipway console</title><p>The console's files are not built: run <code>npm run build:console</code> and restart the server.</p>",
  { status: 503, headers: { "cache-control": "no-store" } }
)

const notFound = new RawResponse("text/plain; charset=utf-8", "Not Found", { status: 404, headers: { "x-content-type-options": "nosniff" } })

export interface ConsoleOptions {
  /** The built console (default: the first of `defaultConsoleDirs` that holds an index.html). */
  readonly dir?: string
  readonly log?: Logger
}

export const consoleRoutes = (options: ConsoleOptions = {}): ReadonlyArray<Route> => {
  const dir = options.dir ?? defaultConsoleDirs.find((candidate) => existsSync(join(candidate, "index.html")))
  const assets = dir && existsSync(join(dir, "index.html")) ? loadConsoleAssets(dir) : new Map<string, Asset>()
  if (assets.size === 0) options.log?.warn("the web console is not built (npm run build:console): /console answers 503", {})

  const serve = (name: string, headers: Record<string, string | string[] | undefined>, extra?: Record<string, string>) => {
    const asset = assets.get(name)
    if (!asset) return assets.size === 0 ? notBuilt : notFound
    const common = { etag: asset.etag, "cache-control": asset.cacheControl, "x-content-type-options": "nosniff", ...extra }
    const match = headers["if-none-match"]
    if (typeof match === "string" && match.split(/\s*,\s*/).includes(asset.etag)) {
      return new RawResponse(asset.contentType, "", { status: 304, headers: common })
    }
    return new RawResponse(asset.contentType, asset.body, { headers: common })
  }

  return [
    implement(consoleEndpoints.root, () =>
      Effect.succeed(new RawResponse("text/plain; charset=utf-8", "See /console", { status: 302, headers: { location: "/console" } }))
    ),
    implement(consoleEndpoints.console, (_input, context) => Effect.succeed(serve("index.html", context.headers, pageSecurityHeaders))),
    implement(consoleEndpoints.consoleAsset, ({ params }, context) =>
      Effect.succeed(params.file === "index.html" ? serve("index.html", context.headers, pageSecurityHeaders) : serve(params.file, context.headers))
    )
  ]
}
