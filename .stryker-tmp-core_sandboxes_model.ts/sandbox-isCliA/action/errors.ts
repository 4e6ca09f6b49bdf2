/**
 * Turns what went wrong into annotations a user can act on: API errors name the input that
 * caused them (a 422 `loc` such as `["body","source_revision_config","image_uri"]` becomes the
 * input `image-uri`), transport errors name `api-url`, auth errors `api-key` / `tenant-id`.
 * Pure: main.ts prints them with core.error.
 */
// @ts-nocheck

import type { InputError, InputName, Inputs } from "./inputs.ts"

export interface Annotation {
  /** The input the problem is about, when one is. */
  readonly input?: InputName | undefined
  readonly title: string
  readonly message: string
}

/** The operation that failed, which decides what a 404 or 409 means. */
export type Operation = "find" | "inspect" | "create" | "update" | "redeploy" | "wait"

/** Request-body and query field names → the input that sets them. */
const fieldInputs: Record<string, InputName> = {
  name: "name",
  name_contains: "name",
  source: "source",
  image_uri: "image-uri",
  repo_ref: "repo-ref",
  graph_config_path: "graph-config-path",
  repo_url: "repo-url",
  integration_id: "integration-id",
  build_on_push: "build-on-push",
  listener_id: "listener-id",
  listener_config: "k8s-namespace",
  k8s_namespace: "k8s-namespace",
  resource_spec: "resource-spec",
  secrets: "secrets",
  revision_id: "redeploy-revision-id"
}

/** Containers that never name an input themselves. */
const containers = new Set(["body", "query", "path", "source_config", "source_revision_config"])

export interface LocMapping {
  readonly input: InputName | undefined
  /** Where inside the input, e.g. `cpu` for resource-spec or `secret #2 (DB_URL) name` for secrets. */
  readonly within: string | undefined
}

/** `["body","source_revision_config","image_uri"]` → image-uri; `["body","resource_spec","sidecars",0,"image"]` → resource-spec at sidecars[0].image. */
export const inputForLoc = (loc: ReadonlyArray<string | number>, inputs?: Pick<Inputs, "secrets">): LocMapping => {
  for (let index = 0; index < loc.length; index++) {
    const key = loc[index]
    if (typeof key !== "string" || containers.has(key)) continue
    const input = fieldInputs[key]
    if (input === undefined) continue
    const rest = loc.slice(index + 1)
    if (input === "secrets" && typeof rest[0] === "number") {
      const secretName = inputs?.secrets?.[rest[0]]?.name
      const field = rest.slice(1).join(".")
      return { input, within: `secret #${rest[0] + 1}${secretName ? ` (${secretName})` : ""}${field ? ` ${field}` : ""}` }
    }
    if (input === "k8s-namespace" || rest.length === 0) return { input, within: undefined }
    return { input, within: rest.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? part : `.${part}`)).join("") }
  }
  return { input: undefined, within: undefined }
}

const inputTitle = (input: InputName | undefined, fallback: string) => (input ? `Slipway: input ${input}` : `Slipway: ${fallback}`)

export const fromInputErrors = (errors: ReadonlyArray<InputError>): Array<Annotation> =>
  errors.map((error) => ({ input: error.input as InputName, title: inputTitle(error.input as InputName, "input"), message: `${error.input}: ${error.message}` }))

interface TaggedError {
  readonly _tag: string
  readonly message?: string
  readonly issues?: ReadonlyArray<{ readonly loc: ReadonlyArray<string | number>; readonly msg: string; readonly type: string }>
  readonly url?: string
  readonly status?: number
}

const what: Record<Operation, string> = {
  find: "looking up the deployment",
  inspect: "reading the deployment's latest revision",
  create: "creating the deployment",
  update: "updating the deployment",
  redeploy: "redeploying the revision",
  wait: "polling the revision"
}

/** One or more annotations for an error of the client (ApiError, TransportError or DecodeError). */
export const describeError = (error: TaggedError, operation: Operation, inputs: Pick<Inputs, "name" | "tenantId" | "secrets" | "apiUrl">): Array<Annotation> => {
  const during = what[operation]
  const one = (input: InputName | undefined, fallback: string, message: string): Array<Annotation> => [
    { input, title: inputTitle(input, fallback), message: input ? `${input}: ${message}` : message }
  ]
  switch (error._tag) {
    case "ValidationError": {
      const issues = error.issues ?? []
      if (issues.length === 0) return one(undefined, "validation error", `The API rejected the request while ${during}`)
      return issues.map((issue) => {
        const { input, within } = inputForLoc(issue.loc, inputs)
        const where = within ? ` (at ${within})` : ""
        const api = `API: ${issue.loc.join(".")}, ${issue.type}`
        return {
          input,
          title: inputTitle(input, "validation error"),
          message: input ? `${input}${where}: ${issue.msg} [${api}]` : `${issue.msg} [${api}] while ${during}`
        }
      })
    }
    case "NotFound":
      if (operation === "redeploy") return one("redeploy-revision-id", "not found", `${error.message} (while ${during})`)
      return one(undefined, "not found", `${error.message} (while ${during}; was deployment ${inputs.name} deleted meanwhile?)`)
    case "BadRequest":
      if (operation === "redeploy") return one("redeploy-revision-id", "bad request", `cannot be redeployed: ${error.message}`)
      return one(undefined, "bad request", `${error.message} (while ${during})`)
    case "Conflict":
      if (operation === "create") return one("name", "conflict", `${error.message} (another run may have created deployment ${inputs.name} at the same time; re-run the job)`)
      return one(undefined, "conflict", `${error.message} (while ${during})`)
    case "Unauthorized":
      return one("api-key", "unauthorized", `${error.message}: the server did not accept the API key`)
    case "Forbidden":
      return inputs.tenantId
        ? one("tenant-id", "forbidden", `${error.message}: the API key does not grant tenant ${inputs.tenantId}`)
        : one("api-key", "forbidden", `${error.message} (while ${during})`)
    case "TransportError":
      return one("api-url", "unreachable", `no answer from ${inputs.apiUrl} while ${during}: ${error.message}`)
    case "DecodeError":
      return one("api-url", "unexpected answer", `the answer of ${inputs.apiUrl} could not be read while ${during} (is it a Slipway server of a compatible version?): ${error.message}`)
    default:
      return one(undefined, error._tag, `${error.message ?? error._tag} (while ${during}${error.status ? `, HTTP ${error.status}` : ""})`)
  }
}
