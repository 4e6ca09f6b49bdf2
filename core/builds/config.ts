/**
 * langgraph.json validation, as the langgraph CLI's `validate_config` and `validate_config_file`
 * do it (langchain-ai/langgraph `libs/cli/langgraph_cli/config.py`): the same defaults, the same
 * checks in the same order, the same messages. Before those, every field is checked for its JSON
 * type, where the CLI would crash with a Python traceback; `null` and `""` read as "not set".
 */
import type { Result } from "effect"
import { attempt, type LanggraphConfigError, refuse } from "./errors.ts"
import { closestMatch, truthy } from "./python.ts"
import { parentOf, type SourceTree, TreeIndex } from "./sourceTree.ts"

export const MIN_PYTHON_VERSION = "3.11"
export const DEFAULT_PYTHON_VERSION = "3.11"
export const MIN_NODE_VERSION = "20"
export const DEFAULT_NODE_VERSION = "20"
export const DEFAULT_IMAGE_DISTRO = "debian"

export const imageDistros = ["debian", "wolfi", "bookworm"] as const
export type ImageDistro = (typeof imageDistros)[number]

export const pipInstallers = ["auto", "pip", "uv"] as const
export type PipInstaller = (typeof pipInstallers)[number]

/** The packaging tools the CLI removes from the image unless `keep_pkg_tools` keeps them. */
export const buildTools = ["pip", "setuptools", "wheel"] as const
export type BuildTool = (typeof buildTools)[number]

/** A graph: `"./path/to/file.py:attribute"`, or an object with that `path` and more (a description). */
export type GraphSpec = string | { readonly path: string; readonly [key: string]: unknown }

/** `source`: the uv-project mode (`{"kind": "uv", "root": "..", "package": "agent"}`). */
export interface UvSource {
  readonly kind: "uv"
  readonly root?: unknown
  readonly package?: unknown
  readonly [key: string]: unknown
}

/** A validated langgraph.json with the CLI's defaults filled in (its `validate_config` answer). */
export interface LanggraphConfig {
  readonly python_version: string | null
  readonly node_version: string | null
  readonly api_version: string | null
  readonly _INTERNAL_docker_tag: string | null
  readonly base_image: string | null
  readonly image_distro: ImageDistro
  readonly pip_config_file: string | null
  readonly pip_installer: PipInstaller
  readonly source: UvSource | null
  readonly dependencies: ReadonlyArray<string>
  readonly dockerfile_lines: ReadonlyArray<string>
  readonly graphs: Readonly<Record<string, GraphSpec>>
  /** Never baked into the image (the CLI uses it for `langgraph up` only). */
  readonly env: Readonly<Record<string, unknown>> | string
  readonly store: unknown
  readonly auth: Readonly<Record<string, unknown>> | null
  readonly encryption: Readonly<Record<string, unknown>> | null
  readonly http: Readonly<Record<string, unknown>> | null
  readonly webhooks: unknown
  readonly checkpointer: unknown
  readonly ui: unknown
  readonly ui_config: unknown
  readonly keep_pkg_tools: boolean | ReadonlyArray<BuildTool> | null
}

/** Top-level keys the CLI recognises (`_KNOWN_CONFIG_KEYS`). */
export const knownConfigKeys: ReadonlyArray<string> = [
  "python_version",
  "node_version",
  "api_version",
  "base_image",
  "image_distro",
  "pip_config_file",
  "pip_installer",
  "source",
  "dependencies",
  "dockerfile_lines",
  "graphs",
  "env",
  "store",
  "auth",
  "encryption",
  "http",
  "webhooks",
  "checkpointer",
  "ui",
  "ui_config",
  "keep_pkg_tools",
  "_INTERNAL_docker_tag",
  "project_root",
  "package"
]

const uvSourceExample = '  "source": {"kind": "uv", "root": ".."}'

// ---------------------------------------------------------------------------------------------
// Small helpers

type Json = Record<string, unknown>

export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** Python's `repr` of a str, as the CLI's `!r` and list reprs print it. */
export const pythonRepr = (value: string): string =>
  value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`

/** A JavaScript or TypeScript graph, by its file's extension (`_is_node_graph`). */
export const isNodeGraph = (spec: GraphSpec): boolean => {
  const path = typeof spec === "string" ? spec : spec.path
  const file = path.split(":")[0]!
  const base = file.slice(file.lastIndexOf("/") + 1)
  const dot = base.lastIndexOf(".")
  // os.path.splitext: a leading dot (".ts") is a name, not an extension.
  const extension = dot > 0 && base.slice(0, dot).replace(/\./g, "") !== "" ? base.slice(dot) : ""
  return [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"].includes(extension)
}

/** Python's `int()` of a Node.js major version: digits with an optional sign, surrounding blanks and '_' between digits. */
const pythonInt = (text: string): number | undefined => (/^\s*[+-]?\d+(?:_\d+)*\s*$/.test(text) ? Number(text.replace(/_/g, "")) : undefined)

/** `_parse_node_version`: the major version, or the CLI's message. */
export const parseNodeVersion = (version: string): number => {
  const major = version.includes(".") ? undefined : pythonInt(version)
  return major ?? refuse(`Invalid Node.js version format: ${version}. Use major version only (e.g., '20').`)
}

/** `_parse_version`: (major, minor) of a Python version such as `3.12` or `3.12-slim`. */
const parsePythonVersion = (version: string): [number, number] => {
  const parts = version.split("-")[0]!.split(".")
  const numbers = parts.map(pythonInt)
  if (parts.length !== 2 || numbers.some((n) => n === undefined)) refuse(`Invalid version format: ${version}`)
  return numbers as [number, number]
}

const compareVersions = (a: [number, number], b: [number, number]): number => a[0] - b[0] || a[1] - b[1]

const API_VERSION_PATTERN = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.?[A-Za-z][0-9A-Za-z]*)?$/
/** `~=X` (compatible release) or `>~=X` (compatible, then any later stable release). */
export const API_VERSION_RANGE_PATTERN = /^(~=|>~=)\s*(.+)$/

// ---------------------------------------------------------------------------------------------
// JSON types (where the CLI would crash)

const example: Record<string, string> = {
  python_version: '"3.11"',
  node_version: '"20"',
  api_version: '"0.4"',
  base_image: '"langchain/langgraph-api"',
  image_distro: '"wolfi"',
  pip_config_file: '"pip.conf"',
  pip_installer: '"uv"',
  _INTERNAL_docker_tag: '"tag"'
}

/** An optional string field: null and "" are "not set". */
const optionalString = (raw: Json, key: string): string | null => {
  const value = raw[key]
  if (value === undefined || value === null || value === "") return null
  if (typeof value !== "string") return refuse(`${key} must be a string, e.g.:\n  "${key}": ${example[key] ?? '"…"'}`)
  return value
}

const stringList = (raw: Json, key: string, sample: string): ReadonlyArray<string> => {
  const value = raw[key]
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) return refuse(`${key} must be a list of strings, e.g.:\n  "${key}": [${sample}]`)
  return value as ReadonlyArray<string>
}

const optionalObject = (raw: Json, key: string, sample: string): Json | null => {
  const value = raw[key]
  if (value === undefined || value === null) return null
  if (!isObject(value)) return refuse(`${key} must be an object, e.g.:\n  "${key}": ${sample}`)
  return value
}

/** A `path`-like member of an object section must be a string when present. */
const stringMember = (section: Json | null, key: string, member: string): void => {
  if (section && member in section && typeof section[member] !== "string") {
    refuse(`${key}.${member} must be a string in the format './path/to/file.py:attribute_name'`)
  }
}

const graphsOf = (raw: Json): Record<string, GraphSpec> => {
  const value = raw.graphs
  if (value === undefined || value === null) return {}
  if (!isObject(value)) return refuse('graphs must be an object mapping graph IDs to import paths, e.g.:\n  "graphs": {\n    "agent": "./my_agent/graph.py:graph"\n  }')
  for (const [id, spec] of Object.entries(value)) {
    if (isObject(spec)) {
      if (!("path" in spec)) refuse(`Graph '${id}' must contain a 'path' key if it is a dictionary.`)
      if (typeof spec.path !== "string") refuse(`Graph '${id}' must have a string 'path' such as "./my_agent/graph.py:graph".`)
    } else if (typeof spec !== "string") refuse(`Graph '${id}' must be a string or a dictionary with a 'path' key.`)
  }
  return value as Record<string, GraphSpec>
}

// ---------------------------------------------------------------------------------------------
// validate_config

const validate = (raw: unknown): LanggraphConfig => {
  if (!isObject(raw)) return refuse("langgraph.json must be a JSON object, e.g.:\n  {\n    \"dependencies\": [\".\"],\n    \"graphs\": {\"agent\": \"./my_agent/graph.py:graph\"}\n  }")

  // The JSON types first, field by field.
  const graphs = graphsOf(raw)
  const rawPython = optionalString(raw, "python_version")
  const rawNode = optionalString(raw, "node_version")
  const apiVersion = optionalString(raw, "api_version")
  const internalTag = optionalString(raw, "_INTERNAL_docker_tag")
  const baseImage = optionalString(raw, "base_image")
  const imageDistro = optionalString(raw, "image_distro") ?? DEFAULT_IMAGE_DISTRO
  const pipConfigFile = optionalString(raw, "pip_config_file")
  const pipInstaller = optionalString(raw, "pip_installer") ?? "auto"
  const dependencies = stringList(raw, "dependencies", '".", "langchain-openai"')
  const dockerfileLines = stringList(raw, "dockerfile_lines", '"RUN apt-get update && apt-get install -y libpq-dev"')
  const auth = optionalObject(raw, "auth", '{"path": "./auth.py:auth"}')
  const encryption = optionalObject(raw, "encryption", '{"path": "./encryption.py:encryption"}')
  const http = optionalObject(raw, "http", '{"app": "./webapp.py:app"}')
  stringMember(auth, "auth", "path")
  stringMember(encryption, "encryption", "path")
  stringMember(http, "http", "app")
  stringMember(isObject(raw.checkpointer) ? raw.checkpointer : null, "checkpointer", "path")
  const env = raw.env ?? {}
  if (!isObject(env) && typeof env !== "string") refuse('env must be an object of variables or the path of a .env file, e.g.:\n  "env": ".env"')

  const specs = Object.values(graphs)
  const someNode = specs.some(isNodeGraph)
  const somePython = specs.some((spec) => !isNodeGraph(spec))
  const nodeVersion = rawNode ?? (someNode ? DEFAULT_NODE_VERSION : null)
  const pythonVersion = rawPython ?? (somePython ? DEFAULT_PYTHON_VERSION : null)
  const source = raw.source ?? null
  const sourceKind = isObject(source) && typeof source.kind === "string" ? source.kind : null

  // Then the CLI's checks, in its order.
  if (internalTag && apiVersion) refuse("Cannot specify both _INTERNAL_docker_tag and api_version.")
  if (apiVersion) {
    const range = API_VERSION_RANGE_PATTERN.exec(apiVersion)
    const version = range ? range[2]!.trim() : apiVersion
    if (!API_VERSION_PATTERN.test(version.split("-")[0]!)) {
      refuse(`Invalid version format: ${apiVersion}.\n\nPin to a minor version, e.g.:\n  "api_version": "0.8"`)
    }
  }
  if (nodeVersion) {
    if (parseNodeVersion(nodeVersion) < Number(MIN_NODE_VERSION)) {
      refuse(
        `Node.js version ${nodeVersion} is not supported. Minimum required version is ${MIN_NODE_VERSION}.\n\n` +
          `Set node_version to ${MIN_NODE_VERSION} or higher:\n  "node_version": "${MIN_NODE_VERSION}"`
      )
    }
  }
  if (!(pipInstallers as ReadonlyArray<string>).includes(pipInstaller)) {
    refuse(`Invalid pip_installer: '${pipInstaller}'. Consider using uv-based source management instead:\n\n${uvSourceExample}`)
  }
  if (source !== null && !isObject(source)) refuse(`\`source\` must be an object, e.g.:\n${uvSourceExample}`)
  if (source !== null && sourceKind !== "uv") refuse(`Invalid source.kind. The only supported value is 'uv':\n${uvSourceExample}`)

  if (pythonVersion) {
    const parts = pythonVersion.split("-")[0]!.split(".")
    if (pythonVersion.split(".").length - 1 !== 1 || !parts.every((part) => /^[0-9]+$/.test(part))) {
      const fix = parts.length >= 2 ? `${parts[0]}.${parts[1]}` : MIN_PYTHON_VERSION
      refuse(`Invalid Python version format: ${pythonVersion}. Use 'major.minor' format — patch version cannot be specified.\n\n  "python_version": "${fix}"`)
    }
    if (compareVersions(parsePythonVersion(pythonVersion), parsePythonVersion(MIN_PYTHON_VERSION)) < 0) {
      refuse(`Python version ${pythonVersion} is not supported. Minimum required version is ${MIN_PYTHON_VERSION}.\n\n  "python_version": "${MIN_PYTHON_VERSION}"`)
    }
    if (pythonVersion.includes("bullseye")) refuse("Bullseye images were deprecated in version 0.4.13. Please use 'bookworm' or 'debian' instead.")
    if (sourceKind !== "uv" && dependencies.length === 0) {
      refuse(`No dependencies found in config. Consider using uv-based source management:\n\n${uvSourceExample}`)
    }
  }

  if (Object.keys(graphs).length === 0) {
    refuse('No graphs found in config. Add at least one graph, e.g.:\n  "graphs": {\n    "agent": "./my_agent/graph.py:graph"\n  }')
  }

  if (imageDistro === "bullseye") refuse("Bullseye images were deprecated in version 0.4.13. Please use 'bookworm' or 'debian' instead.")
  if (!(imageDistros as ReadonlyArray<string>).includes(imageDistro)) {
    refuse(`Invalid image_distro: '${imageDistro}'. Must be one of: ${imageDistros.map((d) => `'${d}'`).join(", ")}.\n\n  "image_distro": "wolfi"  (recommended)`)
  }

  if (sourceKind === "uv" && isObject(source)) {
    const errors: Array<string> = []
    if (!pythonVersion) errors.push("source.kind 'uv' requires `python_version` — it is a Python-only deployment mode. Node.js-only graphs are not supported.")
    if (dependencies.length > 0) {
      errors.push('Remove `dependencies` from your config. With `source.kind = "uv"`, all dependencies are read from your pyproject.toml and uv.lock instead.')
    }
    const root = "root" in source ? source.root : "."
    if (typeof root !== "string") errors.push(`\`source.root\` must be a string, got ${pythonTypeName(root)}.`)
    else if (root.trim() === "") errors.push('`source.root` must be a non-empty string. Use `"."`.')
    const packageName = source.package
    if (packageName !== undefined && packageName !== null && (typeof packageName !== "string" || packageName.trim() === "")) {
      errors.push("`source.package` must be a non-empty string.")
    }
    if (errors.length > 0) {
      refuse(`source.kind 'uv' requires a different config shape than dependency-based installs:\n${errors.map((e) => `  - ${e}`).join("\n")}`)
    }
  }

  if (truthy(raw.project_root) || truthy(raw.package)) {
    refuse("Top-level `project_root` and `package` are no longer supported. Use `source.root` and `source.package` instead.")
  }

  for (const [section, key, member] of [
    [auth, "auth", "path"],
    [encryption, "encryption", "path"],
    [http, "http", "app"]
  ] as const) {
    const value = section?.[member]
    if (typeof value === "string" && !value.includes(":")) {
      refuse(`Invalid ${key}.${member} format: '${value}'. Must be in format './path/to/file.py:attribute_name'`)
    }
  }

  const keep = raw.keep_pkg_tools ?? null
  if (truthy(keep) && keep !== true) {
    if (!Array.isArray(keep)) {
      refuse(`Invalid keep_pkg_tools: '${typeof keep === "string" ? keep : JSON.stringify(keep)}'. Must be bool or list[str] (with values 'pip', 'setuptools', and/or 'wheel').`)
    }
    for (const tool of keep as Array<unknown>) {
      if (!(buildTools as ReadonlyArray<unknown>).includes(tool)) {
        refuse(`Invalid keep_pkg_tools: '${typeof tool === "string" ? tool : JSON.stringify(tool)}'. Must be one of 'pip', 'setuptools', 'wheel'.`)
      }
    }
  }

  return {
    python_version: pythonVersion,
    node_version: nodeVersion,
    api_version: apiVersion,
    _INTERNAL_docker_tag: internalTag,
    base_image: baseImage,
    image_distro: imageDistro as ImageDistro,
    pip_config_file: pipConfigFile,
    pip_installer: pipInstaller as PipInstaller,
    source: isObject(source) ? (source as UvSource) : null,
    dependencies,
    dockerfile_lines: dockerfileLines,
    graphs,
    env: env as LanggraphConfig["env"],
    store: raw.store ?? null,
    auth,
    encryption,
    http,
    webhooks: raw.webhooks ?? null,
    checkpointer: raw.checkpointer ?? null,
    ui: raw.ui ?? null,
    ui_config: raw.ui_config ?? null,
    keep_pkg_tools: keep as LanggraphConfig["keep_pkg_tools"]
  }
}

const pythonTypeName = (value: unknown): string =>
  value === null ? "NoneType" : Array.isArray(value) ? "list" : typeof value === "number" ? (Number.isInteger(value) ? "int" : "float") : typeof value === "boolean" ? "bool" : isObject(value) ? "dict" : typeof value

/** The CLI's `validate_config`: a parsed langgraph.json, checked and completed with its defaults. */
export const validateConfig = (raw: unknown): Result.Result<LanggraphConfig, LanggraphConfigError> => attempt(() => validate(raw))

// ---------------------------------------------------------------------------------------------
// validate_config_file: the package.json next to the config

/** The CLI's `package.json` check when the project has Node.js graphs: its `engines` may only name `node`, by a major version ≥ 20. */
export const checkPackageJson = (config: LanggraphConfig, configPath: string, index: TreeIndex): void => {
  if (!config.node_version) return
  const packageJson = index.packageJson(parentOf(configPath))
  if (packageJson.state === "absent") return
  if (packageJson.state === "invalid") return refuse(`Invalid package.json found in langgraph config directory ${packageJson.path}: file is not valid JSON`)
  const pkg = packageJson.value
  if (!isObject(pkg) || !isObject(pkg.engines)) return
  const engines = Object.keys(pkg.engines)
  if (engines.some((engine) => engine !== "node")) {
    refuse(`Only 'node' engine is supported in package.json engines. Got engines: [${engines.map(pythonRepr).join(", ")}]`)
  }
  if (engines.length === 0) return
  const declared = pkg.engines.node
  const major = parseNodeVersion(typeof declared === "string" ? declared : String(declared))
  if (major < Number(MIN_NODE_VERSION)) {
    refuse(
      `Node.js version in package.json engines must be >= ${MIN_NODE_VERSION} (major version only), got '${String(declared)}'. ` +
        "Minor/patch versions (like '20.x.y') are not supported to prevent deployment issues when new Node.js versions are released."
    )
  }
}

/** The CLI's `validate_config_file`: `validateConfig`, then the package.json next to the config (`configPath` is relative to the repository root). */
export const validateConfigFile = (raw: unknown, configPath: string, tree: SourceTree): Result.Result<LanggraphConfig, LanggraphConfigError> =>
  attempt(() => {
    const config = validate(raw)
    checkPackageJson(config, configPath, new TreeIndex(tree))
    return config
  })

/** Warnings for top-level keys the CLI does not know (`get_unknown_keys`), with its "did you mean". */
export const unknownKeyWarnings = (raw: unknown): Array<string> => {
  if (!isObject(raw)) return []
  return Object.keys(raw)
    .filter((key) => !knownConfigKeys.includes(key))
    .sort()
    .map((key) => {
      const close = closestMatch(key, knownConfigKeys)
      return close ? `Unknown key '${key}' — did you mean '${close}'?` : `Unknown key '${key}' is not a recognized config field.`
    })
}

/** Parses langgraph.json's text, with a clear message when it is not JSON. */
export const parseConfigText = (text: string, configPath = "langgraph.json"): Result.Result<unknown, LanggraphConfigError> =>
  attempt(() => {
    try {
      return JSON.parse(text) as unknown
    } catch (error) {
      return refuse(`${configPath} is not valid JSON: ${(error as Error).message}`)
    }
  })
