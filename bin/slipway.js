#!/usr/bin/env node
// The `slipway` command (package.json "bin"). Installed from npm it runs the compiled lib/cli/main.js
// (Node does not strip types under node_modules); in a checkout without lib/ it runs cli/main.ts.
// Started by a Node older than 22.18 (an older system Node first on PATH), it runs itself again
// with the Node 24 that `npm install` put in node_modules/.bin when there is one.
import { spawnSync } from "node:child_process"
import { existsSync, realpathSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 18)) {
  const bundled = join(root, "node_modules", ".bin", "node")
  if (existsSync(bundled) && realpathSync(bundled) !== realpathSync(process.execPath)) {
    const run = spawnSync(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" })
    if (run.error) {
      process.stderr.write(`slipway: cannot run ${bundled}: ${run.error.message}\n`)
      process.exit(1)
    }
    if (run.signal) process.kill(process.pid, run.signal)
    process.exit(run.status ?? 1)
  }
  process.stderr.write(`slipway: Node.js ${process.versions.node} is too old; slipway needs Node.js 24 (or 22.18+): run it as npx slipway, or npm run slipway -- ...\n`)
  process.exit(1)
}

const compiled = join(root, "lib", "cli", "main.js")
const entry = existsSync(compiled) && !process.env.SLIPWAY_CLI_SOURCES ? compiled : join(root, "cli", "main.ts")
const { main } = await import(pathToFileURL(entry).href)
process.exitCode = await main(process.argv.slice(2))
