#!/usr/bin/env node
// The `slipway` command (package.json "bin"). Installed from npm it runs the compiled lib/cli/main.js
// (Node does not strip types under node_modules); in a checkout without lib/ it runs cli/main.ts.
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(`slipway: Node.js ${process.versions.node} is too old; slipway needs Node.js 24 (or 22.18+)\n`)
  process.exit(1)
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const compiled = join(root, "lib", "cli", "main.js")
const entry = existsSync(compiled) && !process.env.SLIPWAY_CLI_SOURCES ? compiled : join(root, "cli", "main.ts")
const { main } = await import(pathToFileURL(entry).href)
process.exitCode = await main(process.argv.slice(2))
