/**
 * The sandbox area's templates, with the volumes they mount (quantities as exact bigints plus
 * their canonical text). Calls take the tenant, or an id read under the tenant's filter; a taken
 * name fails with `SandboxConflict`. One Layer per backend; every backend passes
 * `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { Page, ProxyConfig, SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

export interface TemplateMount {
  readonly volume_id: string
  readonly volume_name: string
  readonly mount_path: string
}

/** What a template answer shows. */
export interface TemplateView {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly image: string
  readonly cpu: string
  readonly memory: string
  readonly storage: string | null
  readonly proxy_config: typeof ProxyConfig.Type | null
  readonly mounts: ReadonlyArray<TemplateMount>
  readonly created_at: string
  readonly updated_at: string
}

/** A template with its exact quantities (what a runtime needs to start a box). */
export interface TemplateRecord extends TemplateView {
  readonly cpu_millicores: bigint
  readonly memory_bytes: bigint
  readonly storage_bytes: bigint | null
}

export interface NewTemplate extends Omit<TemplateRecord, "mounts"> {
  readonly mounts: ReadonlyArray<{ readonly volume_id: string; readonly mount_path: string }>
}

export class TemplateStore extends Context.Service<
  TemplateStore,
  {
    readonly templateByName: (tenantId: string, name: string) => Op<TemplateRecord | undefined>
    readonly templateById: (id: string) => Op<TemplateRecord | undefined>
    readonly listTemplates: (tenantId: string, page: Page) => Op<ReadonlyArray<TemplateView>>
    readonly insertTemplate: (template: NewTemplate) => Op<void, SandboxConflict>
    readonly renameTemplate: (template: TemplateView, name: string, now: string) => Op<void, SandboxConflict>
    readonly deleteTemplate: (id: string) => Op<void>
    readonly templateUsage: (templateId: string) => Op<{ readonly sandboxes: number; readonly pools: number }>
  }
>()("slipway/TemplateStore") {}
