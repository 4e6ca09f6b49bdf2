/**
 * A small JavaScript LangGraph agent, as a user's repository holds it: `@langchain/langgraph` from
 * npm (with a package-lock.json, so the CLI's Dockerfile installs it with `npm ci`), a
 * `langgraph.json` naming the test's base image (`base_image`) and one graph whose answer says
 * which version of the source it runs:
 *
 *   input { question: "hello" }  ->  { answer: "slipway <version> answers: HELLO" }
 *
 * `agentFiles(baseImage, version)` gives the files; `agentDockerfile(baseImage)` the Dockerfile the
 * langgraph CLI writes for that config (JavaScript format, its example C; written by hand here).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import { join } from "node:path"
import { Effect } from "effect"
import { HOST_ENV, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { cacheRoot, LANGGRAPH_VERSION } from "./langgraphBase.ts"

export const AGENT_PACKAGE_JSON =
  JSON.stringify({ name: "slipway-test-agent", version: "1.0.0", private: true, type: "module", dependencies: { "@langchain/langgraph": LANGGRAPH_VERSION, "@langchain/core": "^1.1.48" } }, null, 2) + "\n"

export const agentSource = (version: string) => `import { Annotation, END, START, StateGraph } from "@langchain/langgraph"

const State = Annotation.Root({
  question: Annotation<string>(),
  answer: Annotation<string>()
})

const respond = (state: { question: string }) => ({ answer: \`slipway ${version} answers: \${state.question.toUpperCase()}\` })

export const graph = new StateGraph(State).addNode("respond", respond).addEdge(START, "respond").addEdge("respond", END).compile()
`

/** What the CLI puts before `ADD .` (the config's `dockerfile_lines`): a layer a source change must not rebuild. */
export const DOCKERFILE_LINES = ["RUN mkdir -p /opt/agent && echo prepared > /opt/agent/prepared"]

export const langgraphJson = (baseImage: string) =>
  JSON.stringify({ node_version: "24", base_image: baseImage, graphs: { agent: "./src/agent.ts:graph" }, dockerfile_lines: DOCKERFILE_LINES }, null, 2) + "\n"

/** package-lock.json for the agent (made once with npm, cached with the test images). */
export const agentLockfile = async (): Promise<string> => {
  const key = createHash("sha256").update(`${AGENT_PACKAGE_JSON}resolved`).digest("hex").slice(0, 16)
  const cached = join(cacheRoot(), `agent-lock-${key}.json`)
  if (existsSync(cached)) return readFileSync(cached, "utf8")
  mkdirSync(cacheRoot(), { recursive: true })
  const dir = mkdtempSync(join(cacheRoot(), "agent-lock-"))
  try {
    writeFileSync(join(dir, "package.json"), AGENT_PACKAGE_JSON)
    await Effect.runPromise(
      // With the tarballs' URLs (a user's npm may be set to leave them out): `npm ci` then needs no metadata.
      processRunner.run(["npm", "install", "--package-lock-only", "--no-audit", "--no-fund", "--ignore-scripts", "--omit-lockfile-registry-resolved=false"], {
        cleanEnv: true,
        env: { ...HOST_ENV, HOME: "/root", npm_config_cache: join(cacheRoot(), "npm") },
        cwd: dir,
        timeout: "5 minutes"
      })
    )
    const lock = readFileSync(join(dir, "package-lock.json"), "utf8")
    writeFileSync(`${cached}.tmp`, lock)
    renameSync(`${cached}.tmp`, cached)
    return lock
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The agent repository's files at `version`. `baseImage` is without its tag (`host/langchain/langgraphjs-api`). */
export const agentFiles = async (baseImage: string, version: string): Promise<Record<string, string>> => ({
  "package.json": AGENT_PACKAGE_JSON,
  "package-lock.json": await agentLockfile(),
  "langgraph.json": langgraphJson(baseImage),
  "src/agent.ts": agentSource(version),
  ".gitignore": "node_modules\n"
})

/**
 * The langgraph CLI's Dockerfile for the agent's config (node_version 24, base_image, a lockfile:
 * `npm ci`), the project directory named `agent`.
 */
export const agentDockerfile = (baseImage: string) =>
  [
    `FROM ${baseImage}:24`,
    ...DOCKERFILE_LINES,
    "ADD . /deps/agent",
    "WORKDIR /deps/agent",
    "RUN npm ci",
    `ENV LANGSERVE_GRAPHS='{"agent": "./src/agent.ts:graph"}'`,
    "WORKDIR /deps/agent",
    `RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts`
  ].join("\n") + "\n"
