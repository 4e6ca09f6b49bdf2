/**
 * The langgraph CLI's own unit tests (libs/cli/tests/unit_tests/test_config.py at f09cfe8), ported:
 * the same configs, over the same files (fixtures/langgraphCliTree.ts: the config is
 * tests/unit_tests/test_config.json, so "." is the `unit_tests` folder and ../../examples holds
 * a pyproject.toml), the same expected Dockerfiles compared as upstream compares them (blank
 * lines dropped). Where Slipway fixes an upstream quirk, the test says so and expects the fix.
 * Not ported: the uv-source (`source.kind = "uv"`) Dockerfiles (Slipway refuses that mode, see
 * builds.test.ts), compose files, and `engine_runtime_mode = "distributed"`.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { type DockerBuild, dockerTag, langgraphDockerfile, type LanggraphConfig, type SourceTree, validateConfig, validateConfigFile } from "../../../core/index.ts"
import { langgraphCliFiles } from "./fixtures/langgraphCliTree.ts"

const CONFIG_PATH = "tests/unit_tests/test_config.json"
const cliTree: SourceTree = { files: langgraphCliFiles }

/** `clean_empty_lines` of the upstream tests. */
const cleanEmptyLines = (text: string) =>
  text
    .split("\n")
    .filter((line) => line !== "")
    .join("\n")

const build = (config: unknown, options: { baseImage?: string; apiVersion?: string; tree?: SourceTree; configPath?: string; rootName?: string } = {}): DockerBuild => {
  const result = langgraphDockerfile({
    config,
    configPath: options.configPath ?? CONFIG_PATH,
    rootName: options.rootName ?? "cli",
    tree: options.tree ?? cliTree,
    baseImage: options.baseImage ?? "langchain/langgraph-api",
    apiVersion: options.apiVersion
  })
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message}`)
  return result.success
}

const refusal = (result: Result.Result<unknown, { readonly message: string }>): string => {
  if (Result.isSuccess(result)) throw new Error("accepted, expected a refusal")
  return result.failure.message
}

const valid = (raw: unknown): LanggraphConfig => {
  const result = validateConfig(raw)
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message}`)
  return result.success
}

const CLEANUP_UV = `# -- Ensure user deps didn't inadvertently overwrite langgraph-api
RUN mkdir -p /api/langgraph_api /api/langgraph_runtime /api/langgraph_license && touch /api/langgraph_api/__init__.py /api/langgraph_runtime/__init__.py /api/langgraph_license/__init__.py
RUN PYTHONDONTWRITEBYTECODE=1 uv pip install --system --no-cache-dir --no-deps -e /api
# -- End of ensuring user deps didn't inadvertently overwrite langgraph-api --
# -- Removing build deps from the final image ~<:===~~~ --
RUN pip uninstall -y pip setuptools wheel
RUN rm -rf /usr/local/lib/python*/site-packages/pip* /usr/local/lib/python*/site-packages/setuptools* /usr/local/lib/python*/site-packages/wheel* && find /usr/local/bin -name "pip*" -delete || true
RUN rm -rf /usr/lib/python*/site-packages/pip* /usr/lib/python*/site-packages/setuptools* /usr/lib/python*/site-packages/wheel* && find /usr/bin -name "pip*" -delete || true
RUN uv pip uninstall --system pip setuptools wheel && rm /usr/bin/uv /usr/bin/uvx`

const installAll = (prefix = "") =>
  `# -- Installing all local dependencies --
RUN for dep in /deps/*; do             echo "Installing $dep";             if [ -d "$dep" ]; then                 echo "Installing $dep";                 (cd "$dep" && ${prefix}PYTHONDONTWRITEBYTECODE=1 uv pip install --system --no-cache-dir -c /api/constraints.txt -e .);             fi;         done
# -- End of local dependencies install --`

/** The faux-package block, as test_config.py spells it out for each package. */
const faux = (name: string, add: string, pyproject = `/deps/outer-${name}/pyproject.toml`) => `# -- Adding non-package dependency ${name} --
${add}
RUN set -ex && \\
    for line in '[project]' \\
                'name = "${name}"' \\
                'version = "0.1"' \\
                '[tool.setuptools.package-data]' \\
                '"*" = ["**/*"]' \\
                '[build-system]' \\
                'requires = ["setuptools>=61"]' \\
                'build-backend = "setuptools.build_meta"'; do \\
        echo "$line" >> ${pyproject}; \\
    done
# -- End of non-package dependency ${name} --`

const PREBUILD = 'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts'

describe("validate_config (test_validate_config*)", () => {
  it("fills the CLI's defaults in a minimal config", () => {
    expect(valid({ dependencies: ["."], graphs: { agent: "./agent.py:graph" } })).toEqual({
      base_image: null,
      python_version: "3.11",
      node_version: null,
      api_version: null,
      _INTERNAL_docker_tag: null,
      pip_config_file: null,
      pip_installer: "auto",
      source: null,
      image_distro: "debian",
      dockerfile_lines: [],
      env: {},
      store: null,
      auth: null,
      encryption: null,
      webhooks: null,
      checkpointer: null,
      http: null,
      ui: null,
      ui_config: null,
      keep_pkg_tools: null,
      dependencies: ["."],
      graphs: { agent: "./agent.py:graph" }
    })
  })

  it("keeps a full config as given", () => {
    const full = {
      python_version: "3.12",
      pip_config_file: "pipconfig.txt",
      pip_installer: "auto",
      image_distro: "debian",
      dockerfile_lines: ["ARG meow"],
      dependencies: [".", "langchain"],
      graphs: { agent: "./agent.py:graph" },
      env: ".env"
    }
    expect(valid(full)).toMatchObject(full)
    expect(valid({ ...full, python_version: "3.13" }).python_version).toBe("3.13")
  })

  it("refuses wrong Python versions and missing keys", () => {
    expect(refusal(validateConfig({ python_version: "3.9" }))).toContain("Minimum required version")
    expect(refusal(validateConfig({ python_version: "3.9", graphs: { agent: "./agent.py:graph" } }))).toContain("Minimum required version")
    expect(refusal(validateConfig({ python_version: "3.11", graphs: { agent: "./agent.py:graph" } }))).toContain("No dependencies found in config")
    expect(refusal(validateConfig({ python_version: "3.11", dependencies: ["."] }))).toContain("No graphs found in config")
    for (const version of ["3.11.0", "3", "abc.def"]) expect(refusal(validateConfig({ python_version: version }))).toContain("Invalid Python version format")
    expect(refusal(validateConfig({ python_version: "3.10" }))).toContain("Minimum required version")
    expect(refusal(validateConfig({ python_version: "3.11-bullseye", dependencies: ["."], graphs: { agent: "./agent.py:graph" } }))).toMatch(/Bullseye images were deprecated/)
    expect(valid({ python_version: "3.12-slim", dependencies: ["."], graphs: { agent: "./agent.py:graph" } }).python_version).toBe("3.12-slim")
    expect(
      refusal(validateConfig({ python_version: "3.12", dependencies: ["."], graphs: { agent: "./agent.py:graph" }, http: { app: "../../examples/my_app.py" } }))
    ).toMatch(/Invalid http.app format/)
  })

  it("image_distro: debian by default, wolfi, never bullseye or another distro", () => {
    const base = { python_version: "3.11", dependencies: ["."], graphs: { agent: "./agent.py:graph" } }
    expect(valid({ ...base, image_distro: "debian" }).image_distro).toBe("debian")
    expect(valid({ ...base, image_distro: "wolfi" }).image_distro).toBe("wolfi")
    expect(valid(base).image_distro).toBe("debian")
    expect(refusal(validateConfig({ ...base, image_distro: "bullseye" }))).toMatch(/Bullseye images were deprecated/)
    expect(refusal(validateConfig({ ...base, image_distro: "ubuntu" }))).toContain("Invalid image_distro: 'ubuntu'")
    expect(refusal(validateConfig({ ...base, image_distro: "alpine" }))).toContain("Invalid image_distro: 'alpine'")
    expect(valid({ node_version: "20", graphs: { agent: "./agent.js:graph" }, image_distro: "wolfi" }).image_distro).toBe("wolfi")
    expect(valid({ node_version: "20", graphs: { agent: "./agent.js:graph" } }).image_distro).toBe("debian")
  })

  it("pip_installer and source", () => {
    const base = { python_version: "3.11", dependencies: ["."], graphs: { agent: "./agent.py:graph" } }
    for (const installer of ["auto", "pip", "uv"]) expect(valid({ ...base, pip_installer: installer }).pip_installer).toBe(installer)
    expect(valid({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, source: { kind: "uv", root: "../.." } }).source).toEqual({ kind: "uv", root: "../.." })
    expect(valid(base).pip_installer).toBe("auto")
    const conda = refusal(validateConfig({ ...base, pip_installer: "conda" }))
    expect(conda).toContain("Invalid pip_installer: 'conda'")
    expect(conda).toContain("uv-based source management")
    expect(refusal(validateConfig({ ...base, pip_installer: "invalid" }))).toContain("Invalid pip_installer: 'invalid'")
    expect(refusal(validateConfig({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, pip_installer: "uv_lock" }))).toMatch(/Invalid pip_installer: 'uv_lock'/)
    expect(valid({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, source: { kind: "uv" } }).source).toEqual({ kind: "uv" })
    expect(refusal(validateConfig({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, source: { kind: "uv", package: 123 } }))).toMatch(
      /`source.package` must be a non-empty string/
    )
    expect(refusal(validateConfig({ ...base, source: { kind: "uv", root: "../..", package: "agent" } }))).toMatch(/Remove `dependencies`/)
    expect(refusal(validateConfig({ node_version: "20", graphs: { agent: "./agent.ts:graph" }, source: { kind: "uv", root: "../..", package: "agent" } }))).toMatch(
      /requires `python_version`/
    )
    expect(valid({ graphs: { agent: "./agent.py:graph", ui: "./agent.ts:graph" }, source: { kind: "uv", root: "../..", package: "agent" } }).python_version).not.toBeNull()
    const withNode = valid({ python_version: "3.12", node_version: "20", graphs: { agent: "./agent.py:graph" }, source: { kind: "uv", root: "../.." } })
    expect(withNode.node_version).toBe("20")
    expect(withNode.source).toEqual({ kind: "uv", root: "../.." })
    expect(refusal(validateConfig({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, source: { kind: "uv", root: 123 } }))).toMatch(/must be a string/)
    expect(refusal(validateConfig({ python_version: "3.11", graphs: { agent: "./agent.py:graph" }, source: { kind: "poetry", root: "../.." } }))).toMatch(/Invalid source.kind/)
    expect(refusal(validateConfig({ ...base, pip_installer: "uv", project_root: "../..", package: "agent" }))).toMatch(
      /Top-level `project_root` and `package` are no longer supported/
    )
    expect(refusal(validateConfig({ ...base, project_root: "../.." }))).toMatch(/Top-level `project_root` and `package` are no longer supported/)
  })

  it("validate_config_file: the package.json next to a Node.js config", () => {
    const node = { node_version: "20", graphs: { agent: "./agent.js:graph" } }
    const python = { python_version: "3.11", dependencies: ["."], graphs: { agent: "./agent.py:graph" } }
    const withPackage = (text?: string): SourceTree =>
      text === undefined ? { files: ["langgraph.json"] } : { files: ["langgraph.json", "package.json"], contents: { "package.json": text } }
    const check = (config: unknown, text?: string) => validateConfigFile(config, "langgraph.json", withPackage(text))
    expect(Result.isSuccess(check(node))).toBe(true)
    expect(Result.isSuccess(check(node, JSON.stringify({ name: "test", engines: { node: "20" } })))).toBe(true)
    expect(refusal(check(node, JSON.stringify({ name: "test", engines: { node: "20.18" } })))).toMatch(/Use major version only/)
    expect(refusal(check(node, JSON.stringify({ engines: { node: "18" } })))).toMatch(/must be >= 20/)
    expect(refusal(check(node, JSON.stringify({ engines: { node: "20", deno: "1.0" } })))).toMatch(/Only 'node' engine is supported/)
    expect(refusal(check(node, "{invalid json"))).toMatch(/Invalid package.json/)
    expect(Result.isSuccess(check(python))).toBe(true)
    for (const text of [JSON.stringify({ name: "test" }), JSON.stringify({ engines: { node: "18" } }), JSON.stringify({ engines: { node: "20", deno: "1.0" } }), "{invalid json"]) {
      expect(Result.isSuccess(check(python, text))).toBe(true)
    }
  })

  it("infers the Node.js and Python versions from the graphs (multiplatform)", () => {
    const defaultNode = valid({ dependencies: ["."], graphs: { js: "./js.mts:graph" } })
    expect([defaultNode.node_version, defaultNode.python_version]).toEqual(["20", null])
    const both = valid({ node_version: "22", python_version: "3.12", dependencies: ["."], graphs: { python: "./python.py:graph", js: "./js.mts:graph" } })
    expect([both.node_version, both.python_version]).toEqual(["22", "3.12"])
    const graphs = { python: "./python.py:graph", js: "./js.mts:graph" }
    const inferred = valid({ dependencies: ["."], graphs })
    expect([inferred.node_version, inferred.python_version]).toEqual(["20", "3.11"])
    const partialNode = valid({ node_version: "22", dependencies: ["."], graphs })
    expect([partialNode.node_version, partialNode.python_version]).toEqual(["22", "3.11"])
    const partialPython = valid({ python_version: "3.12", dependencies: ["."], graphs })
    expect([partialPython.node_version, partialPython.python_version]).toEqual(["20", "3.12"])
    const moduleGraph = valid({ dependencies: ["./local", "./shared_utils"], graphs: { agent: "local.workflow:graph" }, env: ".env" })
    expect([moduleGraph.node_version, moduleGraph.python_version]).toEqual([null, "3.11"])
  })

  it("encryption.path must name an attribute (test_config_to_docker_python_encryption*)", () => {
    const base = { python_version: "3.11", graphs: { agent: "./agent.py:graph" }, dependencies: ["."] }
    expect(valid({ ...base, encryption: { path: "./encryption.py:encryption" } }).encryption).toEqual({ path: "./encryption.py:encryption" })
    expect(refusal(validateConfig({ ...base, encryption: { path: "./encryption.py" } }))).toMatch(/Invalid encryption.path format/)
  })

  it("rejects an unrecognised api_version range operator", () => {
    expect(refusal(validateConfig({ python_version: "3.12", dependencies: ["."], graphs: { agent: "./agent.py:graph" }, api_version: "~>=0.11.0.dev5" }))).toMatch(
      /Invalid version format/
    )
  })
})

describe("config_to_docker (test_config_to_docker_*)", () => {
  it("simple: local, faux and out-of-tree packages (fixed: the requirements are copied from the package's own context)", () => {
    const { dockerfile, additionalContexts } = build({
      dependencies: [".", "../../examples/graphs_reqs_a", "../../examples"],
      graphs: { agent: "./agent.py:graph" },
      http: { app: "../../examples/my_app.py:app" }
    })
    expect(cleanEmptyLines(dockerfile)).toBe(`# syntax=docker/dockerfile:1.4
FROM langchain/langgraph-api:3.11
# -- Installing local requirements --
COPY --from=outer-graphs_reqs_a requirements.txt /deps/outer-graphs_reqs_a/graphs_reqs_a/requirements.txt
RUN PYTHONDONTWRITEBYTECODE=1 uv pip install --system --no-cache-dir -c /api/constraints.txt -r /deps/outer-graphs_reqs_a/graphs_reqs_a/requirements.txt
# -- End of local requirements install --
# -- Adding local package ../../examples --
COPY --from=examples . /deps/examples
# -- End of local package ../../examples --
${faux("unit_tests", "ADD . /deps/outer-unit_tests/unit_tests")}
${faux("graphs_reqs_a", "COPY --from=outer-graphs_reqs_a . /deps/outer-graphs_reqs_a/graphs_reqs_a")}
${installAll()}
ENV LANGGRAPH_HTTP='{"app": "/deps/examples/my_app.py:app"}'
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-unit_tests/unit_tests/agent.py:graph"}'
${CLEANUP_UV}
WORKDIR /deps/outer-unit_tests/unit_tests`)
    // Upstream writes `COPY --from=outer-requirements.txt requirements.txt …`, naming a context that does not exist.
    expect(dockerfile).not.toContain("--from=outer-requirements.txt")
    expect(additionalContexts).toEqual([
      { name: "outer-graphs_reqs_a", path: "examples/graphs_reqs_a" },
      { name: "examples", path: "examples" }
    ])
  })

  it("outside_path: the parent folder as a faux package", () => {
    const { dockerfile, additionalContexts } = build({ dependencies: [".", ".."], graphs: { agent: "./agent.py:graph" } })
    expect(cleanEmptyLines(dockerfile)).toBe(`# syntax=docker/dockerfile:1.4
FROM langchain/langgraph-api:3.11
${faux("unit_tests", "ADD . /deps/outer-unit_tests/unit_tests")}
${faux("tests", "COPY --from=outer-tests . /deps/outer-tests/tests")}
${installAll()}
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-unit_tests/unit_tests/agent.py:graph"}'
${CLEANUP_UV}
WORKDIR /deps/outer-unit_tests/unit_tests`)
    expect(additionalContexts).toEqual([{ name: "outer-tests", path: "tests" }])
  })

  it("pipconfig", () => {
    const { dockerfile, additionalContexts } = build({ dependencies: ["."], graphs: { agent: "./agent.py:graph" }, pip_config_file: "pipconfig.txt" })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api:3.11
ADD pipconfig.txt /pipconfig.txt
${faux("unit_tests", "ADD . /deps/outer-unit_tests/unit_tests")}
${installAll("PIP_CONFIG_FILE=/pipconfig.txt ")}
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-unit_tests/unit_tests/agent.py:graph"}'
${CLEANUP_UV}
WORKDIR /deps/outer-unit_tests/unit_tests`)
    expect(additionalContexts).toEqual([])
  })

  it("invalid_inputs: a missing local dependency, a missing module", () => {
    const request = (config: unknown) => langgraphDockerfile({ config, configPath: CONFIG_PATH, rootName: "cli", tree: cliTree, baseImage: "langchain/langgraph-api" })
    expect(refusal(request({ dependencies: ["./missing"], graphs: { agent: "tests/unit_tests/agent.py:graph" } }))).toBe(
      "Could not find local dependency: tests/unit_tests/missing"
    )
    expect(refusal(request({ dependencies: ["."], graphs: { agent: "./missing_agent.py:graph" } }))).toBe("Could not find local module: tests/unit_tests/missing_agent.py")
  })

  it("local_deps: a src-layout faux package, a custom base image", () => {
    const { dockerfile, additionalContexts } = build({ dependencies: ["./graphs"], graphs: { agent: "./graphs/agent.py:graph" } }, { baseImage: "langchain/langgraph-api-custom" })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api-custom:3.11
${faux("graphs", "ADD ./graphs /deps/outer-graphs/src")}
${installAll()}
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-graphs/src/agent.py:graph"}'
${CLEANUP_UV}`)
    expect(additionalContexts).toEqual([])
  })

  it("pyproject: the config folder as a real package", () => {
    const tree = { files: [...langgraphCliFiles, "tests/unit_tests/pyproject.toml"] }
    const { dockerfile, additionalContexts } = build({ dependencies: ["."], graphs: { agent: "./graphs/agent.py:graph" } }, { tree })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api:3.11
# -- Adding local package . --
ADD . /deps/unit_tests
# -- End of local package . --
${installAll()}
ENV LANGSERVE_GRAPHS='{"agent": "/deps/unit_tests/graphs/agent.py:graph"}'
${CLEANUP_UV}
WORKDIR /deps/unit_tests`)
    expect(additionalContexts).toEqual([])
  })

  it("end_to_end: PyPI packages, pip.conf, dockerfile_lines", () => {
    const { dockerfile, additionalContexts } = build({
      python_version: "3.12",
      dependencies: ["./graphs/", "langchain", "langchain_openai"],
      graphs: { agent: "./graphs/agent.py:graph" },
      pip_config_file: "pipconfig.txt",
      dockerfile_lines: ["ARG meow", "ARG foo"]
    })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api:3.12
ARG meow
ARG foo
ADD pipconfig.txt /pipconfig.txt
RUN PIP_CONFIG_FILE=/pipconfig.txt PYTHONDONTWRITEBYTECODE=1 uv pip install --system --no-cache-dir -c /api/constraints.txt langchain langchain_openai
${faux("graphs", "ADD ./graphs/ /deps/outer-graphs/src")}
${installAll("PIP_CONFIG_FILE=/pipconfig.txt ")}
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-graphs/src/agent.py:graph"}'
${CLEANUP_UV}`)
    expect(additionalContexts).toEqual([])
  })

  const nodeSections = {
    node_version: "20",
    graphs: { agent: "./graphs/agent.js:graph" },
    dockerfile_lines: ["ARG meow", "ARG foo"],
    auth: { path: "./graphs/auth.mts:auth" },
    ui: { agent: "./graphs/agent.ui.jsx" },
    ui_config: { shared: ["nuqs"] }
  }
  const nodeDockerfile = (tag: string) => `FROM langchain/langgraphjs-api:${tag}
ARG meow
ARG foo
ADD . /deps/unit_tests
WORKDIR /deps/unit_tests
RUN npm i
ENV LANGGRAPH_AUTH='{"path": "./graphs/auth.mts:auth"}'
ENV LANGGRAPH_UI='{"agent": "./graphs/agent.ui.jsx"}'
ENV LANGGRAPH_UI_CONFIG='{"shared": ["nuqs"]}'
ENV LANGSERVE_GRAPHS='{"agent": "./graphs/agent.js:graph"}'
WORKDIR /deps/unit_tests
${PREBUILD}`

  it("nodejs: paths as written, npm without a lock file", () => {
    const { dockerfile, additionalContexts } = build(nodeSections, { baseImage: "langchain/langgraphjs-api" })
    expect(cleanEmptyLines(dockerfile)).toBe(nodeDockerfile("20"))
    expect(additionalContexts).toEqual([])
  })

  it("nodejs_internal_docker_tag", () => {
    const { dockerfile } = build({ ...nodeSections, _INTERNAL_docker_tag: "my-tag" }, { baseImage: "langchain/langgraphjs-api" })
    expect(cleanEmptyLines(dockerfile)).toBe(nodeDockerfile("my-tag"))
  })

  it("python_encryption_formatted: encryption.path rewritten into the image", () => {
    const { dockerfile } = build({ python_version: "3.11", dependencies: ["."], graphs: { agent: "./graphs/agent.py:graph" }, encryption: { path: "./agent.py:my_encryption" } })
    expect(dockerfile).toContain("LANGGRAPH_ENCRYPTION=")
    expect(dockerfile).toContain("/deps/outer-unit_tests/unit_tests/agent.py:my_encryption")
  })

  /** `_extract_env_json` of the upstream tests, reading the ENV value back as the Dockerfile parser would. */
  const envJson = (dockerfile: string, name: string): unknown => {
    const prefix = `ENV ${name}='`
    const line = dockerfile.split("\n").find((l) => l.startsWith(prefix) && l.endsWith("'"))
    if (!line) throw new Error(`${name} not found in the Dockerfile's ENV lines`)
    return JSON.parse(line.slice(prefix.length, -1).replaceAll("'\\''", "'"))
  }

  it("webhooks (Python and Node.js) round-trip through the ENV line; none without them", () => {
    const webhooks = {
      env_prefix: "LG_WEBHOOK_",
      url: { require_https: true, allowed_domains: ["hooks.example.com", "*.example.org"], allowed_ports: [443], max_url_length: 1024, disable_loopback: false },
      headers: { "x-auth": "${{ env.LG_WEBHOOK_TOKEN }}", "x-mixed": "Bearer ${{ env.LG_WEBHOOK_TOKEN }}-suffix" }
    }
    expect(envJson(build({ dependencies: ["."], graphs: { agent: "./agent.py:graph" }, webhooks }).dockerfile, "LANGGRAPH_WEBHOOKS")).toEqual(webhooks)
    const nodeWebhooks = { env_prefix: "LG_WEBHOOK_", url: { require_https: true }, headers: { "x-auth": "${{ env.LG_WEBHOOK_TOKEN }}" } }
    const node = build({ node_version: "20", graphs: { agent: "./graphs/agent.js:graph" }, webhooks: nodeWebhooks }, { baseImage: "langchain/langgraphjs-api" })
    expect(envJson(node.dockerfile, "LANGGRAPH_WEBHOOKS")).toEqual(nodeWebhooks)
    expect(build({ dependencies: ["."], graphs: { agent: "./agent.py:graph" } }).dockerfile).not.toContain("ENV LANGGRAPH_WEBHOOKS=")
  })

  it("gen_ui_python: Node.js installed for the UI", () => {
    const { dockerfile, additionalContexts } = build({
      dependencies: ["."],
      graphs: { agent: "./agent.py:graph" },
      ui: { agent: "./graphs/agent.ui.jsx" },
      ui_config: { shared: ["nuqs"] }
    })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api:3.11
RUN /storage/install-node.sh
${faux("unit_tests", "ADD . /deps/outer-unit_tests/unit_tests")}
${installAll()}
ENV LANGGRAPH_UI='{"agent": "./graphs/agent.ui.jsx"}'
ENV LANGGRAPH_UI_CONFIG='{"shared": ["nuqs"]}'
ENV LANGSERVE_GRAPHS='{"agent": "/deps/outer-unit_tests/unit_tests/agent.py:graph"}'
# -- Installing JS dependencies --
ENV NODE_VERSION=20
WORKDIR /deps/outer-unit_tests/unit_tests
RUN npm i && tsx /api/langgraph_api/js/build.mts
# -- End of JS dependencies install --
${CLEANUP_UV}
WORKDIR /deps/outer-unit_tests/unit_tests`)
    expect(additionalContexts).toEqual([])
  })

  it("multiplatform: Python and JavaScript graphs in one image", () => {
    const { dockerfile } = build({
      node_version: "22",
      dependencies: ["."],
      graphs: { python: "./multiplatform/python.py:graph", js: "./multiplatform/js.mts:graph" }
    })
    expect(cleanEmptyLines(dockerfile)).toBe(`FROM langchain/langgraph-api:3.11
RUN /storage/install-node.sh
${faux("unit_tests", "ADD . /deps/outer-unit_tests/unit_tests")}
${installAll()}
ENV LANGSERVE_GRAPHS='{"python": "/deps/outer-unit_tests/unit_tests/multiplatform/python.py:graph", "js": "/deps/outer-unit_tests/unit_tests/multiplatform/js.mts:graph"}'
# -- Installing JS dependencies --
ENV NODE_VERSION=22
WORKDIR /deps/outer-unit_tests/unit_tests
RUN npm i && tsx /api/langgraph_api/js/build.mts
# -- End of JS dependencies install --
${CLEANUP_UV}
WORKDIR /deps/outer-unit_tests/unit_tests`)
  })

  it("uses WORKDIR, never `cd`, for folders with special characters (Python with UI, Node.js)", () => {
    const pythonTree = { files: ["langgraph.json", "agent.py", "ui.jsx"] }
    const python = build(
      { dependencies: ["."], graphs: { agent: "./agent.py:graph" }, ui: { agent: "./ui.jsx" } },
      { tree: pythonTree, configPath: "langgraph.json", rootName: "proj;echo pwned" }
    ).dockerfile
    expect(python).toContain("WORKDIR /deps/outer-proj;echo pwned/src")
    expect(python).toContain("RUN npm i && tsx /api/langgraph_api/js/build.mts")
    expect(python).not.toContain("RUN cd /deps/outer-proj;echo pwned/src")
    expect(python).toContain(">> '/deps/outer-proj;echo pwned/pyproject.toml'")

    const nodeTree = { files: ["langgraph.json", "agent.js", "package.json"], contents: { "package.json": '{"name":"test"}\n' } }
    const node = build({ node_version: "20", graphs: { agent: "./agent.js:graph" } }, { tree: nodeTree, configPath: "langgraph.json", rootName: "proj;echo pwned", baseImage: "langchain/langgraphjs-api" }).dockerfile
    expect(node).toContain("WORKDIR /deps/proj;echo pwned")
    expect(node).toContain("RUN npm i")
    expect(node).not.toContain("RUN cd /deps/proj;echo pwned")
  })

  it("pip_installer: uv from langgraph-api 0.2.47, pip before, as asked otherwise", () => {
    const base = { python_version: "3.11", dependencies: ["."], graphs: { agent: "./graphs/agent.py:graph" } }
    const auto = build({ ...base, pip_installer: "auto" }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(auto).toContain("uv pip install --system ")
    expect(auto).toContain("rm /usr/bin/uv /usr/bin/uvx")
    const pip = build({ ...base, pip_installer: "pip" }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(pip).not.toContain("uv pip install --system ")
    expect(pip).toContain("pip install")
    expect(pip).not.toContain("rm /usr/bin/uv")
    const uv = build({ ...base, pip_installer: "uv" }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(uv).toContain("uv pip install --system ")
    expect(uv).toContain("rm /usr/bin/uv /usr/bin/uvx")
    const old = build({ ...base, pip_installer: "auto" }, { baseImage: "langchain/langgraph-api:0.2.46" }).dockerfile
    expect(old).not.toContain("uv pip install --system ")
    expect(old).toContain("pip install")
    expect(old).not.toContain("rm /usr/bin/uv")
    expect(build(base, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile).toContain("uv pip install --system ")
    // Fixed: upstream would build FROM langchain/langgraph-api:0.2.47:3.11, which no registry serves.
    expect(auto.split("\n")[0]).toBe("FROM langchain/langgraph-api:0.2.47")
  })

  it("retain_build_tools: keep_pkg_tools true, false or a list", () => {
    const base = { python_version: "3.11", dependencies: ["."], graphs: { agent: "./graphs/agent.py:graph" } }
    const tools = ["pip", "setuptools", "wheel"]
    const removes = (dockerfile: string, tool: string) => dockerfile.includes(`/usr/local/lib/python*/site-packages/${tool}*`)
    const kept = build({ ...base, keep_pkg_tools: true }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(tools.some((tool) => removes(kept, tool))).toBe(false)
    expect(kept).not.toContain("RUN pip uninstall -y pip setuptools wheel")
    const removed = build({ ...base, keep_pkg_tools: false }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(tools.every((tool) => removes(removed, tool))).toBe(true)
    expect(removed).toContain("RUN pip uninstall -y pip setuptools wheel")
    const list = build({ ...base, keep_pkg_tools: ["pip", "setuptools"] }, { baseImage: "langchain/langgraph-api:0.2.47" }).dockerfile
    expect(removes(list, "wheel")).toBe(true)
    expect(removes(list, "pip") || removes(list, "setuptools")).toBe(false)
    expect(list).toContain("RUN pip uninstall -y wheel")
    expect(list).not.toContain("RUN pip uninstall -y pip setuptools")
  })

  it("with_api_version: the FROM line", () => {
    expect(build({ dependencies: ["."], graphs: { agent: "./agent.py:graph" } }, { apiVersion: "0.2.74" }).dockerfile.split("\n")[0]).toBe(
      "FROM langchain/langgraph-api:0.2.74-py3.11"
    )
    expect(build({ node_version: "20", graphs: { agent: "./agent.js:graph" } }, { baseImage: "langchain/langgraphjs-api", apiVersion: "0.2.74" }).dockerfile.split("\n")[0]).toBe(
      "FROM langchain/langgraphjs-api:0.2.74-node20"
    )
  })

  it("executor_base_image: any base image gets the version tag", () => {
    const { dockerfile } = build({ dependencies: ["."], graphs: { agent: "./agent.py:graph" } }, { baseImage: "langchain/langgraph-executor" })
    expect(dockerfile).toContain("FROM langchain/langgraph-executor:3.11")
    expect(dockerfile).toContain("LANGSERVE_GRAPHS=")
  })
})

describe("docker_tag (test_docker_tag_*, test_default_base_image_*)", () => {
  const python = (extra: object = {}) => valid({ python_version: "3.11", dependencies: ["."], graphs: { agent: "./agent.py:graph" }, ...extra })
  const node = (extra: object = {}) => valid({ node_version: "20", graphs: { agent: "./agent.js:graph" }, ...extra })
  const tag = (config: LanggraphConfig, options: Parameters<typeof dockerTag>[1] = {}): string => {
    const result = attemptTag(config, options)
    if (Result.isFailure(result)) throw new Error(result.failure.message)
    return result.success
  }
  const attemptTag = (config: LanggraphConfig, options: Parameters<typeof dockerTag>[1]) => dockerTag(config, options)

  it("image_distro: a suffix for every distro but debian", () => {
    expect(tag(python())).toBe("langchain/langgraph-api:3.11")
    expect(tag(python({ image_distro: "debian" }))).toBe("langchain/langgraph-api:3.11")
    expect(tag(python({ image_distro: "wolfi" }))).toBe("langchain/langgraph-api:3.11-wolfi")
    expect(tag(node())).toBe("langchain/langgraphjs-api:20")
    expect(tag(node({ image_distro: "wolfi" }))).toBe("langchain/langgraphjs-api:20-wolfi")
    expect(tag(python({ python_version: "3.12", image_distro: "wolfi", base_image: "my-registry/custom-image" }))).toBe("my-registry/custom-image:3.12-wolfi")
  })

  it("multiplatform: Python when both, Node.js alone", () => {
    expect(tag(python({ node_version: "20", graphs: { python: "./agent.py:graph", js: "./agent.js:graph" }, image_distro: "wolfi" }))).toBe("langchain/langgraph-api:3.11-wolfi")
    expect(tag(node({ graphs: { js: "./agent.js:graph" }, image_distro: "wolfi" }))).toBe("langchain/langgraphjs-api:20-wolfi")
  })

  it("different Python and Node.js versions with a distro", () => {
    for (const version of ["3.11", "3.12", "3.13"]) expect(tag(python({ python_version: version, image_distro: "wolfi" }))).toBe(`langchain/langgraph-api:${version}-wolfi`)
    for (const version of ["20", "21", "22"]) expect(tag(node({ node_version: version, image_distro: "wolfi" }))).toBe(`langchain/langgraphjs-api:${version}-wolfi`)
  })

  for (const inConfig of [false, true]) {
    it(`api_version (${inConfig ? "in the config" : "as an option"})`, () => {
      const version = "0.2.74"
      const withVersion = (config: LanggraphConfig, options: { baseImage?: string } = {}) =>
        tag(inConfig ? { ...config, api_version: version } : config, inConfig ? options : { ...options, apiVersion: version })
      expect(withVersion(python())).toBe(`langchain/langgraph-api:${version}-py3.11`)
      expect(withVersion(python({ python_version: "3.12", image_distro: "wolfi" }))).toBe(`langchain/langgraph-api:${version}-py3.12-wolfi`)
      expect(withVersion(node())).toBe(`langchain/langgraphjs-api:${version}-node20`)
      expect(withVersion(node({ image_distro: "wolfi" }))).toBe(`langchain/langgraphjs-api:${version}-node20-wolfi`)
      expect(withVersion(python({ base_image: "my-registry/custom-image" }), { baseImage: "my-registry/custom-image" })).toBe(`my-registry/custom-image:${version}-py3.11`)
      for (const pythonVersion of ["3.11", "3.12", "3.13"]) expect(withVersion(python({ python_version: pythonVersion }))).toBe(`langchain/langgraph-api:${version}-py${pythonVersion}`)
      expect(tag(python())).toBe("langchain/langgraph-api:3.11")
      expect(withVersion(python({ node_version: "20", graphs: { python: "./agent.py:graph", js: "./agent.js:graph" } }))).toBe(`langchain/langgraph-api:${version}-py3.11`)
      expect(withVersion(python(), { baseImage: "langchain/langgraph-server" })).toBe(`langchain/langgraph-server:${version}-py3.11`)
    })
  }

  it("_INTERNAL_docker_tag wins over an api_version option", () => {
    expect(tag(python({ _INTERNAL_docker_tag: "internal-tag" }), { apiVersion: "0.2.74" })).toBe("langchain/langgraph-api:internal-tag")
  })

  for (const inConfig of [false, true]) {
    for (const version of ["0.9.0rc1", "0.9.0.dev1"]) {
      it(`prerelease api_version ${version} (${inConfig ? "in the config" : "as an option"})`, () => {
        expect(tag(inConfig ? python({ api_version: version }) : python(), inConfig ? {} : { apiVersion: version })).toBe(`langchain/langgraph-api:${version}-py3.11`)
      })
    }
  }

  it("compatible ranges resolve against the langgraph-api releases", () => {
    const promote = ["0.11.0.dev5", "0.11.0.dev6", "0.11.0rc1", "0.11.0", "0.11.1rc1", "0.11.1", "0.12.0rc1"]
    expect(tag(python({ python_version: "3.12", image_distro: "wolfi", api_version: "~=0.11.0.dev5" }), { langgraphApiReleases: promote })).toBe(
      "langchain/langgraph-api:0.11.1-py3.12-wolfi"
    )
    expect(tag(python({ python_version: "3.12", api_version: "~=0.11.0.dev5" }), { langgraphApiReleases: ["0.11.0.dev5", "0.11.0.dev6", "0.11.0.dev7"] })).toBe(
      "langchain/langgraph-api:0.11.0.dev5-py3.12"
    )
    const future = ["0.11.0.dev5", "0.11.0.dev6", "0.11.0rc1", "0.11.0", "0.11.1", "0.12.0rc1", "0.12.0", "0.13.0.dev1", "0.13.0"]
    expect(tag(python({ python_version: "3.12", image_distro: "wolfi", api_version: ">~=0.11.0.dev5" }), { langgraphApiReleases: future })).toBe(
      "langchain/langgraph-api:0.13.0-py3.12-wolfi"
    )
    expect(tag(python({ python_version: "3.12", api_version: ">~=0.11.0.dev5" }), { langgraphApiReleases: ["0.11.0.dev5", "0.11.0", "0.12.0rc1", "0.12.0.dev1"] })).toBe(
      "langchain/langgraph-api:0.11.0-py3.12"
    )
    expect(tag(node({ image_distro: "wolfi", api_version: "~=1.2.4" }), { langgraphApiReleases: ["1.2.4", "1.2.5", "1.3.0"] })).toBe("langchain/langgraphjs-api:1.2.5-node20-wolfi")
  })

  it("refuses a compatible range with a tagged base image", () => {
    expect(refusal(attemptTag(python({ api_version: "~=0.11.0.dev5" }), { baseImage: "langchain/langgraph-api:0.11.0" }))).toMatch(/tagged base_image/)
  })

  it("default base image: langgraph-api, langgraphjs-api for Node.js only, base_image when set", () => {
    expect(tag(python())).toMatch(/^langchain\/langgraph-api:/)
    expect(tag(node())).toMatch(/^langchain\/langgraphjs-api:/)
    expect(tag(python({ base_image: "my-custom-image:latest" }))).toBe("my-custom-image:latest")
  })
})
