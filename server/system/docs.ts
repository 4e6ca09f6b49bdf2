/**
 * `/docs`: the interactive API reference, Swagger UI (npm `swagger-ui-dist`) over /openapi.json,
 * served from node_modules by Slipway itself, so it works on a machine without internet access
 * (docs/api-docs.md says why Swagger UI). `GET /docs` answers a small page of our own that loads
 * the package's bundle and style sheet from `GET /docs/{file}` and starts it with
 * `/docs/slipway-docs.js`: Authorize takes the API key (X-Api-Key or a bearer token) and a tenant
 * (X-Tenant-Id), and every operation can be tried at once against this server.
 *
 * Files are read on first use and kept (the bundle is ~1.5 MB; a server that never shows /docs
 * never reads it). A request can only name one of a fixed set of files, so no path it sends
 * reaches the file system. The page's Content-Security-Policy allows scripts from this origin
 * only; nothing is fetched from elsewhere (Swagger UI's online validator badge is turned off).
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { Effect, Schema } from "effect"
import { Api, endpoint } from "../../core/index.ts"
import { RawResponse, type Route } from "../http/app.ts"
import { implement } from "../module.ts"

export const docsEndpoints = {
  docsAsset: endpoint({
    name: "docsAsset",
    method: "GET",
    path: "/docs/{file}",
    area: "system",
    tag: "system",
    auth: false,
    summary: "A file of the API reference page (Swagger UI's script and style sheet)",
    params: Schema.Struct({ file: Schema.String })
  })
} as const

/** Where swagger-ui-dist is installed (resolved as Node resolves the package, from this file). */
export const swaggerUiDir = (): string => dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))

/** The files of swagger-ui-dist the page uses, and their types. */
const packageFiles: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png"
}

/**
 * Starts Swagger UI. The document's `servers` are replaced by this page's own origin, so "Try it
 * out" calls the server that served the page whatever name it was reached by (SLIPWAY_PUBLIC_URL
 * may name another); the API key stays in the page's memory (not persisted).
 */
const initializer = `"use strict";
(function () {
  var base = window.location.origin;
  fetch(base + "/openapi.json").then(function (response) { return response.json(); }).then(function (spec) {
    spec.servers = [{ url: base, description: "this server" }];
    window.ui = SwaggerUIBundle({
      spec: spec,
      dom_id: "#swagger-ui",
      deepLinking: true,
      tryItOutEnabled: true,
      displayRequestDuration: true,
      displayOperationId: true,
      filter: true,
      showExtensions: true,
      showCommonExtensions: true,
      defaultModelsExpandDepth: 0,
      persistAuthorization: false,
      validatorUrl: null,
      presets: [SwaggerUIBundle.presets.apis],
      layout: "BaseLayout"
    });
  }).catch(function (error) {
    document.getElementById("swagger-ui").textContent = "Could not load /openapi.json: " + error;
  });
})();
`

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Slipway API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
<noscript>This reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/slipway-docs.js"></script>
</body>
</html>
`

const pageHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache"
}

interface Asset {
  readonly contentType: string
  readonly body: Uint8Array
  readonly etag: string
}

const asset = (contentType: string, body: Uint8Array): Asset => ({
  contentType,
  body,
  etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`
})

let cache: Map<string, Asset> | undefined

/** Reads the package's files (once): a missing package is a 503 naming it, not a crash. */
const loadAssets = (): Map<string, Asset> | string => {
  if (cache) return cache
  let dir: string
  try {
    dir = swaggerUiDir()
  } catch {
    return "swagger-ui-dist is not installed: run npm install"
  }
  const loaded = new Map<string, Asset>()
  for (const [name, contentType] of Object.entries(packageFiles)) loaded.set(name, asset(contentType, readFileSync(join(dir, name))))
  loaded.set("slipway-docs.js", asset("text/javascript; charset=utf-8", Buffer.from(initializer)))
  cache = loaded
  return loaded
}

const notFound = new RawResponse("text/plain; charset=utf-8", "Not Found", { status: 404, headers: { "x-content-type-options": "nosniff" } })

const serveAsset = (name: string, headers: Record<string, string | string[] | undefined>): RawResponse => {
  const assets = loadAssets()
  if (typeof assets === "string") return new RawResponse("text/plain; charset=utf-8", assets, { status: 503, headers: { "cache-control": "no-store" } })
  const file = assets.get(name)
  if (!file) return notFound
  // The package's file names carry no version: revalidate (cheap with the ETag) rather than cache blindly.
  const common = { etag: file.etag, "cache-control": "no-cache", "x-content-type-options": "nosniff" }
  const match = headers["if-none-match"]
  if (typeof match === "string" && match.split(/\s*,\s*/).includes(file.etag)) return new RawResponse(file.contentType, "", { status: 304, headers: common })
  return new RawResponse(file.contentType, file.body, { headers: common })
}

/** `GET /docs` (the page, described in the API as `Api.docs`) and `GET /docs/{file}` (its files). */
export const docsRoutes = (): ReadonlyArray<Route> => {
  const html = new RawResponse("text/html; charset=utf-8", page, { headers: pageHeaders })
  return [
    implement(Api.docs, () => Effect.succeed(html)),
    implement(docsEndpoints.docsAsset, ({ params }, context) => Effect.succeed(serveAsset(params.file, context.headers)))
  ]
}
