/** The deployment control plane's pure domain: schemas, rules, resource-spec defaults, revision state machine. */
export * from "./model.ts"
export * from "./realApi.ts"
export * from "./resourceSpec.ts"
export * from "./revision.ts"
export * from "./rules.ts"
export * from "./sourceFields.ts"
