/** The sandbox area's pure domain: names, quantities, proxy configuration, wire shapes and rules. */
export * from "./names.ts"
export * from "./quantity.ts"
export * from "./proxy.ts"
export * from "./model.ts"
export * from "./rules.ts"
export * from "./lifecycle.ts"
export * from "./access.ts"
export * from "./snapshots.ts"
