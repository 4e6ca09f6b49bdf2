/**
 * Every error the API can answer, as tagged errors, with the one table that maps them to
 * HTTP status and body (used by the server) and back (used by the client).
 * Bodies follow the spec: string `detail` in the control plane, `{error, message}` objects in
 * the sandbox area, the FastAPI list for validation.
 */
import { Schema } from "effect"
import { ValidationIssue } from "./validation.ts"

const message = { message: Schema.String }

/** 422: a body, path or query failed validation. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  issues: Schema.Array(ValidationIssue)
}) {
  override get message() {
    return this.issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; ")
  }
  static single(loc: ReadonlyArray<string | number>, msg: string, type = "value_error") {
    return new ValidationError({ issues: [new ValidationIssue({ loc: [...loc], msg, type })] })
  }
}

/** 404 with a string detail (control plane and unknown routes). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", message) {}
/** 400 with a string detail, e.g. a revision that cannot be redeployed. */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", message) {}
/** 409 with a string detail, e.g. a deployment name already taken. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", message) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", message) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", message) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", message) {}
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", message) {}
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", message) {}

/** Sandbox area: 404 `{"error":"NotFound"}`. */
export class SandboxNotFound extends Schema.TaggedError<SandboxNotFound>()("SandboxNotFound", message) {}
/** Sandbox area: 409 `{"error":"Conflict"}` (name taken on create or rename). */
export class SandboxConflict extends Schema.TaggedError<SandboxConflict>()("SandboxConflict", message) {}
/** Sandbox area: 409 `{"error":"ResourceInUse"}` (template or volume still used). */
export class ResourceInUse extends Schema.TaggedError<ResourceInUse>()("ResourceInUse", message) {}
/** Sandbox area: 400 `{"error":"ResizeError"}` (volume shrink). */
export class ResizeError extends Schema.TaggedError<ResizeError>()("ResizeError", message) {}
/** Sandbox area: 400 `{"error":"TemplateNotFound"}` (pool or box on an unknown template). */
export class TemplateNotFound extends Schema.TaggedError<TemplateNotFound>()("TemplateNotFound", message) {}
/** Sandbox area: 400 `{"error":"ValidationError"}` (a rule across resources, not a body shape). */
export class SandboxValidationError extends Schema.TaggedError<SandboxValidationError>()("SandboxValidationError", message) {}

/** Sandbox area: 400 `{"error":"Unsupported"}`, a feature of the real API that Slipway does not offer (capturing a box as a snapshot). */
export class SandboxUnsupported extends Schema.TaggedError<SandboxUnsupported>()("SandboxUnsupported", message) {}

/**
 * Sandbox area: 422 `{"error": <reason>, "message"}`: a box created with `wait_for_ready` failed
 * (its image could not be pulled, it exited, it could not start). `reason` is the official
 * clients' `LangSmithSandboxCreationError.errorType`: `ImagePull`, `CrashLoop` or `SandboxConfig`.
 */
export class SandboxCreationFailed extends Schema.TaggedError<SandboxCreationFailed>()("SandboxCreationFailed", {
  reason: Schema.String,
  message: Schema.String
}) {}

/** Sandbox area: 408 `{"error":"Timeout"}`: a box created with `wait_for_ready` was not ready within its `timeout` (it goes on starting). */
export class SandboxTimeout extends Schema.TaggedError<SandboxTimeout>()("SandboxTimeout", message) {}

/** 429: volume create or resize over the organization's storage quota. Sizes are canonical quantities. */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  limit: Schema.String,
  usage: Schema.String,
  requested: Schema.String
}) {
  override get message() {
    return `Storage quota exceeded: limit ${this.limit}, current usage ${this.usage}, requested increase ${this.requested}`
  }
}

/** Any other status (5xx, rate limiting, ...) with whatever detail the server gave. */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", {
  status: Schema.Number,
  message: Schema.String
}) {}

export type ApiError =
  | ValidationError
  | NotFound
  | BadRequest
  | Conflict
  | Unauthorized
  | Forbidden
  | PayloadTooLarge
  | MethodNotAllowed
  | UnsupportedMediaType
  | SandboxNotFound
  | SandboxConflict
  | ResourceInUse
  | ResizeError
  | TemplateNotFound
  | SandboxValidationError
  | SandboxUnsupported
  | SandboxCreationFailed
  | SandboxTimeout
  | QuotaExceeded
  | ServerError

export interface ErrorResponse {
  readonly status: number
  readonly body: { readonly detail: unknown }
}

const sandboxBody = (error: string, text: string) => ({ detail: { error, message: text } })

/** The one error mapper: tagged error → status and spec-shaped body. */
export const toErrorResponse = (error: ApiError): ErrorResponse => {
  switch (error._tag) {
    case "ValidationError":
      return { status: 422, body: { detail: error.issues.map(({ loc, msg, type }) => ({ loc, msg, type })) } }
    case "NotFound":
      return { status: 404, body: { detail: error.message } }
    case "BadRequest":
      return { status: 400, body: { detail: error.message } }
    case "Conflict":
      return { status: 409, body: { detail: error.message } }
    case "Unauthorized":
      return { status: 401, body: { detail: error.message } }
    case "Forbidden":
      return { status: 403, body: { detail: error.message } }
    case "PayloadTooLarge":
      return { status: 413, body: { detail: error.message } }
    case "MethodNotAllowed":
      return { status: 405, body: { detail: error.message } }
    case "UnsupportedMediaType":
      return { status: 415, body: { detail: error.message } }
    case "SandboxNotFound":
      return { status: 404, body: sandboxBody("NotFound", error.message) }
    case "SandboxConflict":
      return { status: 409, body: sandboxBody("Conflict", error.message) }
    case "ResourceInUse":
      return { status: 409, body: sandboxBody("ResourceInUse", error.message) }
    case "ResizeError":
      return { status: 400, body: sandboxBody("ResizeError", error.message) }
    case "TemplateNotFound":
      return { status: 400, body: sandboxBody("TemplateNotFound", error.message) }
    case "SandboxValidationError":
      return { status: 400, body: sandboxBody("ValidationError", error.message) }
    case "SandboxUnsupported":
      return { status: 400, body: sandboxBody("Unsupported", error.message) }
    case "SandboxCreationFailed":
      return { status: 422, body: sandboxBody(error.reason, error.message) }
    case "SandboxTimeout":
      return { status: 408, body: sandboxBody("Timeout", error.message) }
    case "QuotaExceeded":
      return { status: 429, body: { detail: error.message } }
    case "ServerError":
      return { status: error.status, body: { detail: error.message } }
  }
}

const quotaPattern = /^Storage quota exceeded: limit (\S+), current usage (\S+), requested increase (\S+)$/

const sandboxErrors = {
  NotFound: SandboxNotFound,
  Conflict: SandboxConflict,
  ResourceInUse,
  ResizeError,
  TemplateNotFound,
  ValidationError: SandboxValidationError,
  Unsupported: SandboxUnsupported
} as const

const stringErrors: Record<number, new (args: { message: string }) => ApiError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  405: MethodNotAllowed,
  409: Conflict,
  413: PayloadTooLarge,
  415: UnsupportedMediaType
}

const describe = (detail: unknown): string => (typeof detail === "string" ? detail : JSON.stringify(detail ?? null))

/** The inverse of `toErrorResponse`: what a client makes of a non-2xx answer. */
export const fromErrorResponse = (status: number, body: unknown): ApiError => {
  const detail = (body as { detail?: unknown } | null)?.detail
  if (status === 422 && Array.isArray(detail)) {
    return new ValidationError({
      issues: detail.map(
        (entry: any) =>
          new ValidationIssue({ loc: Array.isArray(entry?.loc) ? entry.loc : [], msg: String(entry?.msg ?? ""), type: String(entry?.type ?? "") })
      )
    })
  }
  if (detail !== null && typeof detail === "object" && "error" in detail) {
    const { error, message: text } = detail as { error: unknown; message?: unknown }
    // A box that failed or was not ready in time, answered to a create with wait_for_ready.
    if (status === 422 && typeof error === "string") return new SandboxCreationFailed({ reason: error, message: String(text ?? "") })
    if (status === 408) return new SandboxTimeout({ message: String(text ?? "") })
    const ErrorClass = sandboxErrors[error as keyof typeof sandboxErrors]
    if (ErrorClass) return new ErrorClass({ message: String(text ?? "") })
  }
  if (status === 429 && typeof detail === "string") {
    const match = quotaPattern.exec(detail)
    if (match) return new QuotaExceeded({ limit: match[1]!, usage: match[2]!, requested: match[3]! })
  }
  const StringError = stringErrors[status]
  if (StringError) return new StringError({ message: describe(detail) })
  return new ServerError({ status, message: describe(detail) })
}
