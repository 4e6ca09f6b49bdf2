/**
 * The transaction combinator every backend offers, shared by all its stores. The effect runs in
 * one transaction of the backend: its writes commit together when it succeeds and roll back
 * when it fails, dies or is interrupted. What it reads cannot change (in this or another process)
 * before it writes. Nested calls join the outer transaction; store calls inside it, on any of
 * the backend's stores, are part of it.
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "./StoreError.ts"

export type Transactional = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreError, R>

export class Transactions extends Context.Service<Transactions, { readonly transaction: Transactional }>()("slipway/Transactions") {}
