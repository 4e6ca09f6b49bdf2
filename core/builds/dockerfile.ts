/**
 * langgraph.json → Dockerfile, exactly as the langgraph CLI's `config_to_docker` writes it
 * (langchain-ai/langgraph `libs/cli/langgraph_cli/config.py`, CLI 0.4.31), as a pure function:
 * the repository is described by a `SourceTree` (its file list and the text of the package.json
 * files it reads) instead of being read from disk. The answer is the Dockerfile text, the build
 * context and the extra named build contexts (`--build-context name=dir`) that dependencies
 * outside the config's folder need, all as directories of the repository.
 *
 * Differences from the CLI are deliberate and few; docs/builds.md lists them (quirks fixed:
 * a second tag appended to a tagged base image, `COPY --from=outer-requirements.txt`,
 * unescaped single quotes in the `ENV` JSON, graph paths of same-named packages).
 */
import type { Result } from "effect"
import { type BaseImageOptions, defaultBaseImage, imageReference, imageSupportsUv, isNodeOnly } from "./baseImage.ts"
import { buildCommandProblem } from "./commands.ts"
import {
  type BuildTool,
  buildTools,
  checkPackageJson,
  DEFAULT_NODE_VERSION,
  type GraphSpec,
  isObject,
  type LanggraphConfig,
  pythonRepr,
  unknownKeyWarnings,
  validateConfig
} from "./config.ts"
import { attempt, type LanggraphConfigError, orRefuse, refuse } from "./errors.ts"
import { pythonJsonDumps, shellQuote, truthy } from "./python.ts"
import { isWithin, joinPath, nameOf, parentOf, relativeTo, resolveIn, type SourceTree, TreeIndex } from "./sourceTree.ts"

export interface DockerfileRequest extends BaseImageOptions {
  /** The parsed langgraph.json (any JSON value: it is validated first). */
  readonly config: unknown
  /** Where langgraph.json is, relative to the repository root: `langgraph.json`, `apps/agent/langgraph.json`. */
  readonly configPath: string
  /**
   * The name of the repository's root directory. The CLI names `/deps/<dir>` after the directory
   * the config (or the build context) sits in; for a config at the root that is the checkout's
   * directory, which a `git clone` names after the repository (`agent` for `…/acme/agent.git`).
   */
  readonly rootName: string
  /** The repository's files, and the text of the files `filesToRead` names. */
  readonly tree: SourceTree
  /** `source_config.install_command` (JavaScript projects; the CLI's `--install-command`). */
  readonly installCommand?: string | null | undefined
  /** `source_config.build_command` (JavaScript projects; the CLI's `--build-command`). */
  readonly buildCommand?: string | null | undefined
}

/** A named build context: `--build-context <name>=<path>` with `path` a directory of the repository. */
export interface BuildContext {
  readonly name: string
  readonly path: string
}

export interface DockerBuild {
  /** The Dockerfile, as the CLI pipes it to `docker build -f -`. */
  readonly dockerfile: string
  /** The build context: a directory of the repository ("." for its root). */
  readonly context: string
  /** Extra named contexts the Dockerfile's `COPY --from=<name>` lines read, in the CLI's order. */
  readonly additionalContexts: ReadonlyArray<BuildContext>
  /** The image the Dockerfile builds `FROM`. */
  readonly baseImage: string
  /** The validated config (the CLI's defaults filled in; graph paths as written). */
  readonly config: LanggraphConfig
  /** Things worth a line in the build log: unknown keys, options that do not apply. */
  readonly warnings: ReadonlyArray<string>
}

/** The files whose text the generator may read, relative to the repository root: the package.json next to the config and the root one. */
export const filesToRead = (configPath: string): Array<string> => [...new Set([joinPath(parentOf(resolveIn("", configPath) ?? ""), "package.json"), "package.json"])]

/** A repository path as messages show it. */
const shown = (path: string): string => (path === "" ? "." : path)

// ---------------------------------------------------------------------------------------------
// Node.js package manager (`_get_node_pm_install_cmd`)

/** package.json's `packageManager` (`pnpm@9` → pnpm) or `devEngines.packageManager.name`; nothing when absent or not JSON. */
const packageManagerName = (dir: string, index: TreeIndex): string | undefined => {
  const packageJson = index.packageJson(dir)
  const pkg = packageJson.state === "parsed" ? packageJson.value : undefined
  if (!isObject(pkg)) return undefined
  if (typeof pkg.packageManager === "string" && pkg.packageManager !== "") return pkg.packageManager.replace(/^\^+/, "").split("@")[0]
  const devEngines = pkg.devEngines
  const manager = isObject(devEngines) ? devEngines.packageManager : undefined
  return isObject(manager) && typeof manager.name === "string" && manager.name !== "" ? manager.name : undefined
}

/** The install command for a JavaScript project in `dir`: by lock file, else by package.json's `packageManager` / `devEngines`, else `npm i`. */
const packageManagerInstallCommand = (dir: string, index: TreeIndex): string => {
  const has = (file: string) => index.isFile(joinPath(dir, file))
  if (has("yarn.lock")) return "yarn install --frozen-lockfile"
  if (has("pnpm-lock.yaml")) return "pnpm i --frozen-lockfile"
  if (has("package-lock.json")) return "npm ci"
  if (has("bun.lockb")) return "bun i"
  switch (packageManagerName(dir, index)) {
    case "yarn":
      return "yarn install"
    case "pnpm":
      return "pnpm i"
    case "bun":
      return "bun i"
    default:
      return "npm i"
  }
}

// ---------------------------------------------------------------------------------------------
// Runtime environment (`_build_runtime_env_vars`)

/** `'…'` for a Dockerfile `ENV`: the CLI writes the JSON as is, which a single quote in it breaks; Slipway spells `'` as `'\''`. */
const singleQuoted = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`

interface RuntimeSections {
  readonly store: unknown
  readonly auth: unknown
  readonly encryption: unknown
  readonly http: unknown
  readonly webhooks: unknown
  readonly checkpointer: unknown
  readonly ui: unknown
  readonly ui_config: unknown
  readonly graphs: unknown
}

const envLines = (sections: RuntimeSections): Array<string> => {
  const optional: ReadonlyArray<readonly [string, unknown]> = [
    ["LANGGRAPH_STORE", sections.store],
    ["LANGGRAPH_AUTH", sections.auth],
    ["LANGGRAPH_ENCRYPTION", sections.encryption],
    ["LANGGRAPH_HTTP", sections.http],
    ["LANGGRAPH_WEBHOOKS", sections.webhooks],
    ["LANGGRAPH_CHECKPOINTER", sections.checkpointer],
    ["LANGGRAPH_UI", sections.ui],
    ["LANGGRAPH_UI_CONFIG", sections.ui_config]
  ]
  return [
    ...optional.filter(([, value]) => value !== null && value !== undefined).map(([name, value]) => `ENV ${name}=${singleQuoted(pythonJsonDumps(value))}`),
    `ENV LANGSERVE_GRAPHS=${singleQuoted(pythonJsonDumps(sections.graphs))}`
  ]
}

// ---------------------------------------------------------------------------------------------
// JavaScript projects (`node_config_to_docker`)

const PREBUILD_STEP = 'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts'

interface Rendered {
  readonly dockerfile: string
  readonly context: string
  readonly additionalContexts: ReadonlyArray<BuildContext>
  readonly baseImage: string
}

const nodeDockerfile = (config: LanggraphConfig, request: DockerfileRequest, index: TreeIndex): Rendered => {
  const configDir = parentOf(request.configPath)
  // With an install or build command the CLI builds a monorepo from where it runs (the
  // repository's root here): install at the root, build in the config's folder.
  const monorepo = !!(request.installCommand || request.buildCommand)
  const buildContext = monorepo ? "" : configDir
  const installCommand = request.installCommand || packageManagerInstallCommand(buildContext, index)
  const containerRoot = `/deps/${nameOf(buildContext, request.rootName)}`
  const relativeWorkdir = relativeTo(configDir, buildContext)
  const workdir = relativeWorkdir ? `${containerRoot}/${relativeWorkdir}` : containerRoot
  const image = imageReference(config, request)
  const dockerfile = [
    `FROM ${image}`,
    "",
    config.dockerfile_lines.join("\n"),
    "",
    `ADD . ${containerRoot}`,
    "",
    `WORKDIR ${containerRoot}`,
    "",
    `RUN ${installCommand}`,
    "",
    envLines(config).join("\n"),
    "",
    `WORKDIR ${workdir}`,
    "",
    request.buildCommand ? `RUN ${request.buildCommand}` : PREBUILD_STEP
  ].join("\n")
  return { dockerfile, context: shown(buildContext), additionalContexts: [], baseImage: image }
}

// ---------------------------------------------------------------------------------------------
// Python projects (`python_config_to_docker`)

/** Package names a flat-layout local dependency may not take (`_assemble_local_deps`). */
const reservedPackageNames: ReadonlyArray<string> = [
  "src",
  "langgraph-api",
  "langgraph_api",
  "langgraph",
  "langchain-core",
  "langchain_core",
  "pydantic",
  "orjson",
  "fastapi",
  "uvicorn",
  "psycopg",
  "httpx",
  "langsmith"
]

interface RealPackage {
  readonly ref: string
  readonly name: string
}
interface FauxPackage {
  readonly ref: string
  readonly dest: string
}

/** The local (`.`-prefixed) dependencies, sorted as the CLI sorts them (`LocalDeps`). Paths are repository paths. */
interface LocalDeps {
  readonly requirements: Array<{ readonly dir: string; readonly dest: string }>
  readonly real: Map<string, RealPackage>
  readonly faux: Map<string, FauxPackage>
  readonly workingDir: string | undefined
  /** Dependency directories outside the config's folder, in order (repeats included, as in the CLI). */
  readonly outside: Array<string>
}

const assembleLocalDeps = (config: LanggraphConfig, configDir: string, rootName: string, index: TreeIndex): LocalDeps => {
  const reserved = new Set(reservedPackageNames)
  const containerNames = new Set<string>()
  const checkReserved = (name: string, ref: string) => {
    if (reserved.has(name)) refuse(`Package name '${name}' used in local dep '${ref}' is reserved. Rename the directory.`)
    reserved.add(name)
  }
  const requirements: LocalDeps["requirements"] = []
  const real: LocalDeps["real"] = new Map()
  const faux: LocalDeps["faux"] = new Map()
  const outside: LocalDeps["outside"] = []
  let workingDir: string | undefined
  for (const ref of config.dependencies) {
    if (!ref.startsWith(".")) continue
    const path = resolveIn(configDir, ref) ?? refuse(`Local dependency '${ref}' is outside the repository: a build sees only the repository's files.`)
    if (!index.exists(path)) refuse(`Could not find local dependency: ${shown(path)}`)
    if (!index.isDirectory(path)) refuse(`Local dependency must be a directory: ${shown(path)}`)
    if (path !== configDir && !isWithin(path, configDir)) outside.push(path)

    const name = nameOf(path, rootName)
    const files = index.list(path)
    if (files.includes("pyproject.toml") || files.includes("setup.py")) {
      // A real package, under a unique folder name (`name`, `name_1`, …).
      let containerName = name
      for (let n = 1; containerNames.has(containerName); n++) containerName = `${name}_${n}`
      containerNames.add(containerName)
      real.set(path, { ref, name: containerName })
      if (ref === ".") workingDir = `/deps/${containerName}`
      continue
    }
    // A "faux" package: the CLI writes a pyproject.toml for it.
    let dest: string
    if (files.includes("__init__.py")) {
      if (name.includes("-")) refuse(`Package name '${name}' contains a hyphen. Rename the directory to use it as flat-layout package.`)
      checkReserved(name, ref)
      dest = `/deps/outer-${name}/${name}`
    } else {
      dest = `/deps/outer-${name}/src`
      for (const file of files) {
        const sub = joinPath(path, file)
        if (index.isDirectory(sub) && file !== "__pycache__" && !file.startsWith(".") && index.list(sub).some((entry) => entry.endsWith(".py"))) {
          checkReserved(file, ref)
        }
      }
    }
    // Two different folders of the same name would share /deps/outer-<name> and its pyproject.toml (a broken install in the CLI).
    for (const [other, { ref: otherRef }] of faux) {
      if (other !== path && nameOf(other, rootName) === name) {
        refuse(`Local dependencies '${otherRef}' and '${ref}' are both folders named '${name}', which would share /deps/outer-${name}. Rename one of them.`)
      }
    }
    faux.set(path, { ref, dest })
    if (ref === ".") workingDir = dest
    if (files.includes("requirements.txt")) requirements.push({ dir: path, dest: `${dest}/requirements.txt` })
  }
  return { requirements, real, faux, workingDir, outside }
}

/** A file's path inside the image: under the first real package holding it, else the first faux one (`_update_graph_paths`). */
const containerPathOf = (file: string, deps: LocalDeps, fauxFirst: boolean): string | undefined => {
  const inReal = () => {
    for (const [dir, { name }] of deps.real) if (isWithin(file, dir)) return `/deps/${name}/${relativeTo(file, dir)}`
    return undefined
  }
  const inFaux = () => {
    for (const [dir, { dest }] of deps.faux) if (isWithin(file, dir)) return `${dest}/${relativeTo(file, dir)}`
    return undefined
  }
  return fauxFirst ? (inFaux() ?? inReal()) : (inReal() ?? inFaux())
}

/** Python's `str.partition(":")`: before the first ':', and after it (undefined without one). */
const partition = (text: string): [string, string | undefined] => {
  const colon = text.indexOf(":")
  return colon === -1 ? [text, undefined] : [text.slice(0, colon), text.slice(colon + 1)]
}

/** A module file named by a path relative to the config (`./agent.py`), checked as the CLI checks it. */
const moduleFile = (configDir: string, module: string, index: TreeIndex, notFound: string, notFile: string): string => {
  const file = resolveIn(configDir, module)
  if (file === undefined) return refuse(`${notFound}: ${module} (outside the repository)`)
  if (!index.exists(file)) refuse(`${notFound}: ${shown(file)}`)
  if (!index.isFile(file)) refuse(`${notFile}: ${shown(file)}`)
  return file
}

/** Graph import strings with a path (`./src/graph.py:graph`) rewritten to where the file is in the image. */
const imageGraphs = (config: LanggraphConfig, configDir: string, deps: LocalDeps, index: TreeIndex): Record<string, GraphSpec> => {
  const graphs: Record<string, GraphSpec> = {}
  for (const [id, spec] of Object.entries(config.graphs)) {
    const importString = typeof spec === "string" ? spec : spec.path
    const [module, attribute] = partition(importString)
    if (!module || !attribute) refuse(`Import string "${importString}" must be in format "<module>:<attribute>".`)
    let path = importString
    if (module.includes("/") || module.includes("\\")) {
      const file = moduleFile(configDir, module, index, "Could not find local module", "Local module must be a file")
      const inImage =
        containerPathOf(file, deps, false) ?? refuse(`Module '${importString}' not found in 'dependencies' list. Add its containing package to 'dependencies' list.`)
      path = `${inImage}:${attribute}`
    }
    graphs[id] = typeof spec === "string" ? path : { ...spec, path }
  }
  return graphs
}

/** `auth.path`, `encryption.path`, `checkpointer.path` rewritten into the image (`_update_auth_path` and its twins). */
const imageSectionPath = (
  section: unknown,
  what: "Auth" | "Encryption" | "Checkpointer",
  config: LanggraphConfig,
  configDir: string,
  deps: LocalDeps,
  index: TreeIndex
): unknown => {
  if (!isObject(section) || !truthy(section.path)) return section
  const pathString = section.path as string
  const [module, attribute] = partition(pathString)
  if (attribute === undefined || !module.startsWith(".")) return section
  // The CLI keeps '..' segments here (unlike graph paths), which maps a file outside the
  // config's folder to a path that does not exist; Slipway normalises it as for graphs.
  const file = resolveIn(configDir, module)
  if (file === undefined || !index.exists(file)) return refuse(`${what} file not found: ${file === undefined ? module : shown(file)} (from ${pathString})`)
  if (!index.isFile(file)) refuse(`${what} path must be a file: ${shown(file)}`)
  const inImage =
    containerPathOf(file, deps, true) ??
    refuse(
      `${what} file '${shown(file)}' not covered by dependencies.\nAdd its parent directory to the 'dependencies' array in your config.\n` +
        `Current dependencies: [${config.dependencies.map(pythonRepr).join(", ")}]`
    )
  return { ...section, path: `${inImage}:${attribute}` }
}

/** `http.app` rewritten into the image (`_update_http_app_path`). */
const imageHttp = (config: LanggraphConfig, configDir: string, deps: LocalDeps, index: TreeIndex): unknown => {
  const http = config.http
  if (!http || !truthy(http.app)) return http
  const app = http.app as string
  const [module, attribute] = partition(app)
  if (!module || !attribute) refuse(`Import string "${app}" must be in format "<module>:<attribute>".`)
  if (!module.includes("/") && !module.includes("\\")) return http
  const file = moduleFile(configDir, module, index, "Could not find HTTP app module", "HTTP app module must be a file")
  const inImage = containerPathOf(file, deps, false) ?? refuse(`HTTP app module '${app}' not found in 'dependencies' list. Add its containing package to 'dependencies' list.`)
  return { ...http, app: `${inImage}:${attribute}` }
}

/** Which of pip, setuptools and wheel the image loses (`get_build_tools_to_uninstall`). */
const buildToolsToUninstall = (keep: LanggraphConfig["keep_pkg_tools"]): ReadonlyArray<BuildTool> => {
  if (!truthy(keep)) return buildTools
  if (keep === true) return []
  return buildTools.filter((tool) => !(keep as ReadonlyArray<BuildTool>).includes(tool))
}

/** The end of every Python Dockerfile (`_get_pip_cleanup_lines`): langgraph-api reinstalled, build tools removed. */
const pipCleanupLines = (installCommand: string, toUninstall: ReadonlyArray<BuildTool>, installer: "uv" | "pip"): string => {
  const commands = [
    `# -- Ensure user deps didn't inadvertently overwrite langgraph-api
RUN mkdir -p /api/langgraph_api /api/langgraph_runtime /api/langgraph_license && touch /api/langgraph_api/__init__.py /api/langgraph_runtime/__init__.py /api/langgraph_license/__init__.py
RUN PYTHONDONTWRITEBYTECODE=1 ${installCommand} --no-cache-dir --no-deps -e /api
# -- End of ensuring user deps didn't inadvertently overwrite langgraph-api --
# -- Removing build deps from the final image ~<:===~~~ --`
  ]
  if (toUninstall.length > 0) {
    const packages = [...toUninstall].sort().join(" ")
    commands.push(`RUN pip uninstall -y ${packages}`)
    let packagesRm = toUninstall.map((tool) => `/usr/local/lib/python*/site-packages/${tool}*`).join(" ")
    if (toUninstall.includes("pip")) packagesRm += ' && find /usr/local/bin -name "pip*" -delete || true'
    commands.push(`RUN rm -rf ${packagesRm}`)
    let wolfiRm = toUninstall.map((tool) => `/usr/lib/python*/site-packages/${tool}*`).join(" ")
    if (toUninstall.includes("pip")) wolfiRm += ' && find /usr/bin -name "pip*" -delete || true'
    commands.push(`RUN rm -rf ${wolfiRm}`)
    if (installer === "uv") commands.push(`RUN uv pip uninstall --system ${packages} && rm /usr/bin/uv /usr/bin/uvx`)
  } else if (installer === "uv") {
    commands.push("RUN rm /usr/bin/uv /usr/bin/uvx\n# -- End of build deps removal --")
  }
  return commands.join("\n")
}

/** The faux package's pyproject.toml, written line by line in the image. */
const fauxPyproject = (name: string) => `
RUN set -ex && \\
    for line in '[project]' \\
                'name = "${name}"' \\
                'version = "0.1"' \\
                '[tool.setuptools.package-data]' \\
                '"*" = ["**/*"]' \\
                '[build-system]' \\
                'requires = ["setuptools>=61"]' \\
                'build-backend = "setuptools.build_meta"'; do \\
        echo "$line" >> ${shellQuote(`/deps/outer-${name}/pyproject.toml`)}; \\
    done
# -- End of non-package dependency ${name} --`

const pythonDockerfile = (config: LanggraphConfig, request: DockerfileRequest, index: TreeIndex): Rendered => {
  if (config.source?.kind === "uv") {
    refuse('source.kind \'uv\' (install from uv.lock) is not supported by Slipway builds yet. List the project in "dependencies" instead, e.g.:\n  "dependencies": ["."]')
  }
  const configDir = parentOf(request.configPath)
  const baseImage = request.baseImage || defaultBaseImage(config)
  const installer = config.pip_installer === "auto" ? (imageSupportsUv(baseImage) ? "uv" : "pip") : config.pip_installer
  const installCommand = installer === "uv" ? "uv pip install --system" : "pip install"
  const baseInstall = `PYTHONDONTWRITEBYTECODE=1 ${installCommand} --no-cache-dir -c /api/constraints.txt`
  const pipInstall = config.pip_config_file ? `PIP_CONFIG_FILE=/pipconfig.txt ${baseInstall}` : baseInstall

  const pypiDeps = config.dependencies.filter((dep) => !dep.startsWith("."))
  const deps = assembleLocalDeps(config, configDir, request.rootName, index)
  const sections: RuntimeSections = {
    ...config,
    graphs: imageGraphs(config, configDir, deps, index),
    auth: imageSectionPath(config.auth, "Auth", config, configDir, deps, index),
    encryption: imageSectionPath(config.encryption, "Encryption", config, configDir, deps, index),
    checkpointer: imageSectionPath(config.checkpointer, "Checkpointer", config, configDir, deps, index),
    http: imageHttp(config, configDir, deps, index)
  }

  // Named contexts for the folders outside the config's: a real package by its folder name, a faux one as outer-<name>.
  const contextNames = new Map<string, string>()
  for (const dir of deps.outside) {
    if (contextNames.has(dir)) continue
    const preferred = deps.real.get(dir)?.name ?? `outer-${nameOf(dir, request.rootName)}`
    const used = new Set(contextNames.values())
    let name = preferred
    for (let n = 1; used.has(name); n++) name = `${preferred}_${n}`
    contextNames.set(dir, name)
  }

  const pipPackages = pypiDeps.length > 0 ? `RUN ${pipInstall} ${pypiDeps.join(" ")}` : ""
  const requirements =
    deps.requirements.length === 0
      ? ""
      : `# -- Installing local requirements --
${deps.requirements
  .map(({ dir, dest }) => {
    const context = contextNames.get(dir)
    // The CLI writes `--from=outer-requirements.txt`, a context that does not exist.
    return context ? `COPY --from=${context} requirements.txt ${dest}` : `ADD ${joinPath(relativeTo(dir, configDir), "requirements.txt")} ${dest}`
  })
  .join("\n")}
RUN ${pipInstall} ${deps.requirements.map(({ dest }) => `-r ${dest}`).join(" ")}
# -- End of local requirements install --`
  const realPackages = [...deps.real]
    .map(([dir, { ref, name }]) => {
      const context = contextNames.get(dir)
      return `# -- Adding local package ${ref} --\n${context ? `COPY --from=${context} .` : `ADD ${ref}`} /deps/${name}\n# -- End of local package ${ref} --`
    })
    .join("\n")
  const fauxPackages = [...deps.faux]
    .map(([dir, { ref, dest }]) => {
      const name = nameOf(dir, request.rootName)
      const context = contextNames.get(dir)
      return `# -- Adding non-package dependency ${name} --\n${context ? `COPY --from=${context} .` : `ADD ${ref}`} ${dest}${fauxPyproject(name)}`
    })
    .join("\n\n")
  const withNode = (truthy(config.ui) || !!config.node_version) && deps.workingDir !== undefined
  const installs = [
    withNode ? "RUN /storage/install-node.sh" : "",
    config.pip_config_file ? `ADD ${config.pip_config_file} /pipconfig.txt` : "",
    pipPackages,
    requirements,
    realPackages,
    fauxPackages
  ]
    .filter((step) => step !== "")
    .join("\n\n")
  const jsInstall = withNode
    ? [
        "# -- Installing JS dependencies --",
        `ENV NODE_VERSION=${config.node_version || DEFAULT_NODE_VERSION}`,
        `WORKDIR ${deps.workingDir}`,
        `RUN ${packageManagerInstallCommand(configDir, index)} && tsx /api/langgraph_api/js/build.mts`,
        "# -- End of JS dependencies install --"
      ].join("\n")
    : ""
  const image = imageReference(config, request)
  const installEach = `RUN for dep in /deps/*; do             echo "Installing $dep";             if [ -d "$dep" ]; then                 echo "Installing $dep";                 (cd "$dep" && ${pipInstall} -e .);             fi;         done`

  const dockerfile = [
    ...(contextNames.size > 0 ? ["# syntax=docker/dockerfile:1.4", ""] : []),
    `FROM ${image}`,
    "",
    config.dockerfile_lines.join("\n"),
    "",
    installs,
    "",
    "# -- Installing all local dependencies --",
    installEach,
    "# -- End of local dependencies install --",
    envLines(sections).join("\n"),
    "",
    jsInstall,
    "",
    pipCleanupLines(installCommand, buildToolsToUninstall(config.keep_pkg_tools), installer),
    "",
    deps.workingDir ? `WORKDIR ${deps.workingDir}` : ""
  ].join("\n")
  return {
    dockerfile,
    context: shown(configDir),
    additionalContexts: [...contextNames].map(([path, name]) => ({ name, path: shown(path) })),
    baseImage: image
  }
}

// ---------------------------------------------------------------------------------------------
// config_to_docker

/**
 * The Dockerfile of a langgraph.json, as `langgraph build` writes it: validation
 * (`validate_config_file`), the install/build command check, then the Node.js or the Python
 * Dockerfile. Fails with the CLI's message for anything the CLI refuses.
 */
export const langgraphDockerfile = (request: DockerfileRequest): Result.Result<DockerBuild, LanggraphConfigError> =>
  attempt(() => {
    const configPath = resolveIn("", request.configPath) || refuse(`The config path ${request.configPath} must name a file inside the repository.`)
    for (const [field, command] of [
      ["install_command", request.installCommand],
      ["build_command", request.buildCommand]
    ] as const) {
      const problem = command ? buildCommandProblem(field, command) : undefined
      if (problem) refuse(problem)
    }
    const index = new TreeIndex(request.tree)
    if (!index.isFile(configPath)) refuse(`Could not find the config file ${request.configPath} in the repository.`)
    const config = orRefuse(validateConfig(request.config))
    checkPackageJson(config, configPath, index)
    const normalized = { ...request, configPath }
    const nodeOnly = isNodeOnly(config)
    const rendered = nodeOnly ? nodeDockerfile(config, normalized, index) : pythonDockerfile(config, normalized, index)
    const warnings = [
      ...unknownKeyWarnings(request.config),
      ...(!nodeOnly && (request.installCommand || request.buildCommand) ? ["install_command and build_command apply to JavaScript projects only; this Python project ignores them."] : [])
    ]
    return { ...rendered, config, warnings }
  })
