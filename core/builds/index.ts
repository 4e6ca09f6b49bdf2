/**
 * Builds' pure part: langgraph.json → Dockerfile as the langgraph CLI writes it, the config's
 * validation, and the install/build command rules. No I/O: the repository is described by data
 * (`SourceTree`). docs/builds.md.
 */
export { type BaseImageOptions, defaultBaseImage, dockerTag, hasTagOrDigest, isNodeOnly } from "./baseImage.ts"
export { buildCommandProblem, disallowedCommandCharacters, hasDisallowedCommandContent } from "./commands.ts"
export {
  buildTools,
  type BuildTool,
  DEFAULT_IMAGE_DISTRO,
  DEFAULT_NODE_VERSION,
  DEFAULT_PYTHON_VERSION,
  type GraphSpec,
  imageDistros,
  type ImageDistro,
  isNodeGraph,
  knownConfigKeys,
  type LanggraphConfig,
  MIN_NODE_VERSION,
  MIN_PYTHON_VERSION,
  parseConfigText,
  pipInstallers,
  type PipInstaller,
  unknownKeyWarnings,
  type UvSource,
  validateConfig,
  validateConfigFile
} from "./config.ts"
export { type BuildContext, type DockerBuild, type DockerfileRequest, filesToRead, langgraphDockerfile } from "./dockerfile.ts"
export { LanggraphConfigError } from "./errors.ts"
export type { SourceTree } from "./sourceTree.ts"
