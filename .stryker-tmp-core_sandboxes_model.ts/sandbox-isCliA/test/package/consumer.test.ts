/**
 * The package as another tool sees it: `import ... from "slipway"` and "slipway/server" resolve
 * through package.json "exports" to the built output in lib/ (built by `npm test`'s pretest),
 * and its type declarations type-check a consumer.
 */
// @ts-nocheck

import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "slipway-consumer-"))
  mkdirSync(join(dir, "node_modules"))
  symlinkSync(root, join(dir, "node_modules", "slipway"), "dir")
  symlinkSync(join(root, "node_modules", "effect"), join(dir, "node_modules", "effect"), "dir")
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the published entry points", () => {
  it("are built", () => {
    expect(existsSync(join(root, "lib/core/index.js"))).toBe(true)
    expect(existsSync(join(root, "lib/core/index.d.ts"))).toBe(true)
    expect(existsSync(join(root, "lib/server/index.js"))).toBe(true)
  })

  it("import and work from the built output", () => {
    writeFileSync(
      join(dir, "consumer.mjs"),
      `import { Api, decodeWithIssues, toErrorResponse, NotFound } from "slipway"
import { startServer } from "slipway/server"
import { Schema, Result } from "effect"
import { tmpdir } from "node:os"
import { join } from "node:path"
const resolved = import.meta.resolve("slipway")
const decoded = decodeWithIssues(Schema.Struct({ n: Schema.Number }), ["body"])({ n: "x" })
const server = await startServer({ port: 0, databasePath: join(tmpdir(), "consumer-" + process.pid + ".db"), apiKey: "k", logLevel: "silent" })
const health = await (await fetch(server.url + "/health")).json()
await server.close()
console.log(JSON.stringify({
  resolved,
  endpoints: Object.keys(Api),
  issues: Result.isFailure(decoded) ? decoded.failure.map((i) => ({ loc: i.loc, type: i.type })) : null,
  notFound: toErrorResponse(new NotFound({ message: "Deployment x not found" })),
  health
}))
`
    )
    const output = JSON.parse(execFileSync(process.execPath, ["consumer.mjs"], { cwd: dir, encoding: "utf8" }))
    expect(output.resolved).toContain("/lib/core/index.js")
    expect(output.endpoints).toContain("health")
    expect(output.issues).toEqual([{ loc: ["body", "n"], type: "float_type" }])
    expect(output.notFound).toEqual({ status: 404, body: { detail: "Deployment x not found" } })
    expect(output.health).toEqual({ status: "ok" })
  })

  it("ship type declarations a TypeScript consumer can compile against", () => {
    writeFileSync(
      join(dir, "consumer.ts"),
      `import { Api, type ApiError, toErrorResponse } from "slipway"
import { startServer, type SlipwayServer } from "slipway/server"
const name: string = Api.health.path
const status: number = toErrorResponse({} as ApiError).status
const start: (options?: { port?: number }) => Promise<SlipwayServer> = startServer
export { name, status, start }
`
    )
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: true, types: [] }, files: ["consumer.ts"] })
    )
    const tsc = join(root, "node_modules/typescript/bin/tsc")
    expect(() => execFileSync(process.execPath, [tsc, "-p", dir], { cwd: dir, encoding: "utf8" })).not.toThrow()
    // The check must be able to fail: a wrong type is reported.
    writeFileSync(join(dir, "consumer.ts"), `import { Api } from "slipway"\nconst wrong: number = Api.health.path\nexport { wrong }\n`)
    let report = ""
    try {
      execFileSync(process.execPath, [tsc, "-p", dir], { cwd: dir, encoding: "utf8", stdio: "pipe" })
    } catch (error) {
      report = String((error as { stdout?: string }).stdout)
    }
    expect(report).toMatch(/not assignable to type 'number'/)
  })
})
