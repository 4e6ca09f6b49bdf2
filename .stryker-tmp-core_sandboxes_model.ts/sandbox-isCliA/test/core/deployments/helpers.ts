/** Shared helpers of the deployment domain tests. */
// @ts-nocheck

import { Result } from "effect"
import { expect } from "vitest"
import { decodeWithIssues, type ValidationError } from "../../../core/api/index.ts"
import type { Schema } from "effect"

export interface PlainIssue {
  readonly loc: ReadonlyArray<string | number>
  readonly msg: string
  readonly type: string
}

const plain = (issues: ReadonlyArray<PlainIssue>) => issues.map(({ loc, msg, type }) => ({ loc: [...loc], msg, type }))

/** Decodes a body and returns its 422 issues (fails the test if it decoded). */
export const bodyIssues = (schema: Schema.Top, input: unknown): Array<PlainIssue> => {
  const result = decodeWithIssues(schema, ["body"])(input)
  if (Result.isSuccess(result)) throw new Error(`expected a validation failure, decoded ${JSON.stringify(result.success)}`)
  return plain(result.failure)
}

/** Decodes a body that must be valid and returns its decoded value. */
export const decodeBody = <S extends Schema.Top>(schema: S, input: unknown): S["Type"] => {
  const result = decodeWithIssues(schema, ["body"])(input)
  if (Result.isFailure(result)) throw new Error(`expected a valid body: ${JSON.stringify(result.failure)}`)
  return result.success
}

/** The issues of a rule's ValidationError (fails the test when the rule succeeded). */
export const ruleIssues = <A>(result: Result.Result<A, ValidationError>): Array<PlainIssue> => {
  if (Result.isSuccess(result)) throw new Error(`expected a validation failure, got ${JSON.stringify(result.success)}`)
  expect(result.failure._tag).toBe("ValidationError")
  return plain(result.failure.issues)
}

export const ruleValue = <A, E>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error(`expected success: ${JSON.stringify(result.failure)}`)
  return result.success
}

/** Just the locs and types, for tests about where an error is reported. */
export const where = (issues: ReadonlyArray<PlainIssue>) => issues.map(({ loc, type }) => ({ loc, type }))
