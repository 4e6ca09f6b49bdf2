/**
 * Builds the web console into console/dist (served by server/system/console.ts):
 * `app-[hash].js` (Preact + the views, one minified ES module), `app-[hash].css`, `index.html`
 * naming those two, `favicon.svg` and `licenses.txt`. Run by `npm run build:console`; takes well
 * under a second. `node console/build.ts --out DIR` writes elsewhere (the up-to-date test).
 */
import { build } from "esbuild"
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { basename, join } from "node:path"

const here = import.meta.dirname
const outIndex = process.argv.indexOf("--out")
const outDir = outIndex === -1 ? join(here, "dist") : process.argv[outIndex + 1]!

const result = await build({
  entryPoints: [
    { in: join(here, "src/main.tsx"), out: "app" },
    { in: join(here, "src/app.css"), out: "app" }
  ],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox113", "safari16.4"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  legalComments: "none",
  charset: "utf8",
  outdir: outDir,
  write: false,
  logLevel: "warning"
})

rmSync(outDir, { recursive: true, force: true })
mkdirSync(outDir, { recursive: true })
const names: Record<string, string> = {}
for (const file of result.outputFiles) {
  writeFileSync(file.path, file.contents)
  names[file.path.endsWith(".css") ? "css" : "js"] = basename(file.path)
}
const html = readFileSync(join(here, "index.html"), "utf8").replace(/\{\{(js|css)\}\}/g, (_, kind: string) => names[kind]!)
writeFileSync(join(outDir, "index.html"), html)
copyFileSync(join(here, "favicon.svg"), join(outDir, "favicon.svg"))
writeFileSync(
  join(outDir, "licenses.txt"),
  `The Slipway console bundles Preact (https://preactjs.com):\n\n${readFileSync(join(here, "../node_modules/preact/LICENSE"), "utf8")}`
)
console.log(`console built into ${outDir}: ${readdirSync(outDir).join(", ")}`)
