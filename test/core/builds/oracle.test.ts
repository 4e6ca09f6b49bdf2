/**
 * The generator against the real langgraph CLI: fixtures/oracle-cases.json holds small projects,
 * fixtures/oracle-goldens.json what `config_to_docker` (or `validate_config_file`) of the CLI at
 * the recorded commit answered for each, byte for byte (fixtures/oracle.py regenerates it).
 * Every case must give the same Dockerfile and contexts, or the same refusal.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { langgraphDockerfile } from "../../../core/index.ts"

interface OracleCase {
  readonly name: string
  readonly root: string
  readonly configPath: string
  readonly config: unknown
  readonly files: Record<string, string>
  readonly options?: { baseImage?: string; apiVersion?: string; installCommand?: string; buildCommand?: string }
}
type Golden = { readonly dockerfile: string; readonly additionalContexts: ReadonlyArray<{ name: string; path: string }> } | { readonly error: string }

const fixtures = join(import.meta.dirname, "fixtures")
const cases: ReadonlyArray<OracleCase> = JSON.parse(readFileSync(join(fixtures, "oracle-cases.json"), "utf8"))
const { langgraph, goldens }: { langgraph: string; goldens: Record<string, Golden> } = JSON.parse(readFileSync(join(fixtures, "oracle-goldens.json"), "utf8"))

/** Refusals where Slipway's message goes on after the CLI's (it says what was found). */
const extendedMessages = new Set(["refused: install_command with a pipe", "refused: build_command with a lone ampersand"])

describe(`langgraphDockerfile matches the langgraph CLI (${langgraph})`, () => {
  it("has a golden for every case", () => {
    expect(Object.keys(goldens).sort()).toEqual(cases.map((c) => c.name).sort())
  })

  for (const oracle of cases) {
    it(oracle.name, () => {
      const golden = goldens[oracle.name]!
      const result = langgraphDockerfile({
        config: oracle.config,
        configPath: oracle.configPath,
        rootName: oracle.root,
        tree: { files: [...Object.keys(oracle.files), oracle.configPath], contents: oracle.files },
        ...oracle.options
      })
      if ("error" in golden) {
        expect(Result.isFailure(result), "the CLI refuses this config").toBe(true)
        const message = Result.isFailure(result) ? result.failure.message : ""
        if (extendedMessages.has(oracle.name)) expect(message.startsWith(golden.error)).toBe(true)
        else expect(message).toBe(golden.error)
        return
      }
      if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message}`)
      expect(result.success.dockerfile).toBe(golden.dockerfile)
      expect(result.success.additionalContexts).toEqual(golden.additionalContexts)
    })
  }
})
