/**
 * The containers/image configuration of a build, generated per build into its private work
 * directory and bound read-only at /etc/containers inside the sandbox: the same registry settings
 * deployments use (SLIPWAY_REGISTRY_MIRROR for Docker Hub, SLIPWAY_INSECURE_REGISTRIES), buildah's
 * storage (overlay, in the deployment's cache), no signature checks (as the image store's pulls).
 * Credentials go in a separate auth file, only for the pulls, removed when they are done.
 */
import { readFileSync } from "node:fs"
import { parseMirror, parseRegistryHost } from "../runtime/local/reference.ts"

/** TOML basic strings accept JSON's escapes. */
const toml = (s: string) => JSON.stringify(s)

export const registriesConf = (registries: { readonly mirror?: string | undefined; readonly insecureRegistries?: ReadonlyArray<string> | undefined }): string => {
  const lines = ['unqualified-search-registries = ["docker.io"]', 'short-name-mode = "permissive"', ""]
  const mirror = registries.mirror !== undefined && registries.mirror.trim() !== "" ? parseMirror(registries.mirror) : undefined
  const insecure = new Set((registries.insecureRegistries ?? []).map(parseRegistryHost))
  if (mirror) {
    lines.push("[[registry]]", `prefix = "docker.io"`, `location = "docker.io"`, "[[registry.mirror]]")
    lines.push(`location = ${toml(mirror.prefix ? `${mirror.domain}/${mirror.prefix}` : mirror.domain)}`)
    lines.push(`insecure = ${mirror.insecure || insecure.has(mirror.domain)}`, "")
  }
  for (const host of insecure) lines.push("[[registry]]", `location = ${toml(host)}`, "insecure = true", "")
  return lines.join("\n")
}

export const POLICY_JSON = JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] }) + "\n"

export const storageConf = (graphroot: string, runroot: string): string =>
  ["[storage]", 'driver = "overlay"', `graphroot = ${toml(graphroot)}`, `runroot = ${toml(runroot)}`, "", "[storage.options.overlay]", 'mountopt = "nodev"', ""].join("\n")

/** Keeps the sandbox's buildah off the host's defaults (its runtime, its network backends). */
export const CONTAINERS_CONF = ["[engine]", 'cgroup_manager = "cgroupfs"', 'events_logger = "none"', "", "[network]", 'network_backend = "cni"', ""].join("\n")

export interface RegistryCredential {
  /** `host[:port]` as in image references (`ghcr.io`, `127.0.0.1:5000`, `docker.io`). */
  readonly registry: string
  readonly username: string
  readonly password: string
}

/**
 * A docker-config auth file (`{"auths":{…}}`) for the pulls: the server's SLIPWAY_REGISTRY_AUTH_FILE
 * entries with the build's own credentials on top; undefined when there are none.
 */
export const authFileContent = (serverAuthFile: string | undefined, credentials: ReadonlyArray<RegistryCredential>): string | undefined => {
  const auths: Record<string, unknown> = {}
  if (serverAuthFile !== undefined) {
    const parsed = JSON.parse(readFileSync(serverAuthFile, "utf8")) as { auths?: Record<string, unknown> }
    Object.assign(auths, parsed.auths ?? {})
  }
  for (const c of credentials) {
    const key = c.registry === "docker.io" ? "docker.io" : parseRegistryHost(c.registry)
    auths[key] = { auth: Buffer.from(`${c.username}:${c.password}`).toString("base64") }
  }
  return Object.keys(auths).length === 0 ? undefined : JSON.stringify({ auths }) + "\n"
}
