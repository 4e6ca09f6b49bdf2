/**
 * Errors the client adds to the API's own (`ApiError` from core/api/errors.ts): failures that
 * never produced an API answer (transport), answers that could not be read (decode), and the
 * outcomes of waiting for a revision. They are tagged like the API errors so callers handle
 * everything with `Effect.catchTag`.
 */
// @ts-nocheck

import { Schema } from "effect"
import type { ApiError } from "../api/errors.ts"

/**
 * The request got no HTTP answer: connection refused or reset, DNS failure, or no answer within
 * the per-request timeout. Whether the server acted on it is unknown, which is why only
 * idempotent methods are retried after one.
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  reason: Schema.Literals(["network", "timeout"]),
  method: Schema.String,
  url: Schema.String,
  message: Schema.String
}) {}

/** The server answered 2xx but the body was not JSON or did not match the endpoint's success schema. */
export class DecodeError extends Schema.TaggedError<DecodeError>()("DecodeError", {
  method: Schema.String,
  url: Schema.String,
  status: Schema.Number,
  message: Schema.String
}) {}

/** Everything a client call can fail with. */
export type ClientError = ApiError | TransportError | DecodeError

/**
 * A revision reached a state it will not leave without reaching DEPLOYED (a failure, or it was
 * superseded). `revision` is the last answer of getRevision, as decoded.
 */
export class RevisionFailed extends Schema.TaggedError<RevisionFailed>()("RevisionFailed", {
  revisionId: Schema.String,
  status: Schema.String,
  revision: Schema.Unknown
}) {
  override get message() {
    return `Revision ${this.revisionId} ended in ${this.status}`
  }
}

/** The revision was still in progress when the wait's time budget ran out. */
export class RevisionTimeout extends Schema.TaggedError<RevisionTimeout>()("RevisionTimeout", {
  revisionId: Schema.String,
  /** Undefined when not even one poll answered within the budget. */
  lastStatus: Schema.UndefinedOr(Schema.String),
  elapsedMs: Schema.Number
}) {
  override get message() {
    return `Revision ${this.revisionId} not deployed after ${this.elapsedMs} ms (last status: ${this.lastStatus ?? "none seen"})`
  }
}
