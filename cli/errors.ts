/**
 * Exit codes scripts can rely on, and the one mapping from what went wrong to them.
 *
 *   0  ok
 *   1  the operation failed (a revision ended in a failed state, a conflict, a refused operation, a server error)
 *   2  usage: unknown command or flag, a malformed value, or input the server refused (422)
 *   3  not found: the deployment, revision, sandbox or database named does not exist
 *   4  authentication or authorization: the API key was refused or does not grant the tenant
 *   5  unreachable: no answer from the server (connection refused, DNS, timeout of a request)
 *   6  timed out waiting for a revision to be DEPLOYED (or a sandbox to be ready)
 *   7  not available on this server: no sandbox dataplane configured, or no log endpoints
 *
 * `sandbox exec` exits with the remote command's own exit code once the command ran.
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  auth: 4,
  unreachable: 5,
  timeout: 6,
  unavailable: 7
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

/** A failure the CLI reports as one message and an exit code. */
export class CliError extends Error {
  readonly exitCode: number
  readonly kind: string
  readonly details: unknown
  constructor(exitCode: number, kind: string, message: string, details?: unknown) {
    super(message)
    this.exitCode = exitCode
    this.kind = kind
    this.details = details
  }
}

const byTag: Record<string, number> = {
  ValidationError: ExitCode.usage,
  SandboxValidationError: ExitCode.usage,
  InvalidInputs: ExitCode.usage,
  NotFound: ExitCode.notFound,
  SandboxNotFound: ExitCode.notFound,
  TemplateNotFound: ExitCode.notFound,
  Unauthorized: ExitCode.auth,
  Forbidden: ExitCode.auth,
  TransportError: ExitCode.unreachable,
  RevisionTimeout: ExitCode.timeout,
  SandboxTimeout: ExitCode.timeout
}

/** The exit code for an error tag (a client error's `_tag`, or a DeployFailure's `kind`). */
export const exitCodeFor = (tag: string): number => byTag[tag] ?? ExitCode.failure

interface TaggedError {
  readonly _tag: string
  readonly message?: string
  readonly issues?: ReadonlyArray<{ readonly loc: ReadonlyArray<string | number>; readonly msg: string }>
}

/** A client error (ApiError, TransportError, DecodeError) as a CliError, with the server's own message. */
export const fromClientError = (error: TaggedError, during: string): CliError => {
  const text =
    error._tag === "ValidationError" && error.issues && error.issues.length > 0
      ? error.issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("\n")
      : (error.message ?? error._tag)
  const hint =
    error._tag === "Unauthorized"
      ? " (check --api-key / SLIPWAY_API_KEY)"
      : error._tag === "Forbidden"
        ? " (the key does not grant this tenant: check --tenant / SLIPWAY_TENANT_ID)"
        : error._tag === "TransportError"
          ? " (check --url / SLIPWAY_URL)"
          : ""
  return new CliError(exitCodeFor(error._tag), error._tag, `${during}: ${text}${hint}`, error.issues)
}
