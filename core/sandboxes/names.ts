/**
 * Names in the sandbox area (boxes, templates, pools, volumes) become Kubernetes object names
 * in the tenant's namespace, so they must be DNS-1123 labels: 1–63 characters of [a-z0-9-],
 * starting and ending with an alphanumeric character.
 */
import { Schema } from "effect"
import { rule } from "../api/validation.ts"

export const maxNameLength = 63

const labelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

export const dnsLabelPatternMessage =
  "must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character"

export const isDnsLabel = (name: string): boolean => name.length <= maxNameLength && labelPattern.test(name)

/**
 * One check per problem so that each 422 entry says exactly what is wrong. The pattern check
 * lets the empty string through: "at least 1 character" already says all there is to say.
 */
export const DnsLabel = Schema.String.check(
  rule((name: string) => name.length >= 1, "must be at least 1 character", "string_too_short", { minLength: 1 }),
  rule((name: string) => name.length <= maxNameLength, `must be at most ${maxNameLength} characters`, "string_too_long", { maxLength: maxNameLength }),
  rule((name: string) => name === "" || labelPattern.test(name), dnsLabelPatternMessage, "string_pattern_mismatch", { pattern: labelPattern.source })
).annotate({
  description: "DNS-1123 label: 1-63 lowercase alphanumeric characters or '-', starting and ending with an alphanumeric character",
  examples: ["my-sandbox"]
})

/**
 * Kubernetes' generateName alphabet: no vowels (so no accidental words) and no look-alikes
 * (0/o, 1/l, 3/e).
 */
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"
export const generatedSuffixLength = 6

/** Any string → a valid label prefix (lowercased, invalid runs collapsed to '-', ends trimmed). */
const toLabelPrefix = (raw: string, maxLength: number): string =>
  raw
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, maxLength)
    .replace(/^-+|-+$/g, "")

/** A suffix of `generatedSuffixLength` characters; `random` returns numbers in [0, 1). */
export const randomNameSuffix = (random: () => number): string =>
  Array.from({ length: generatedSuffixLength }, () => suffixAlphabet[Math.floor(random() * suffixAlphabet.length) % suffixAlphabet.length]).join("")

/**
 * The name of a sandbox created without one: `<template>-<suffix>`, the template part cut so the
 * whole stays a valid label. Randomness is a parameter so callers (and tests) control it; on a
 * name clash the server simply asks again with fresh randomness.
 */
export const generateSandboxName = (templateName: string, random: () => number): string => {
  const prefix = toLabelPrefix(templateName, maxNameLength - generatedSuffixLength - 1) || "sandbox"
  return `${prefix}-${randomNameSuffix(random)}`
}
