/** Small helpers shared by the sandbox-area HTTP tests. */
// @ts-nocheck

import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import type { Db } from "../../../server/db/database.ts"
import { makeSandboxRepository } from "../../../server/sandboxes/repository.ts"
import type { ApiResponse, RequestOptions } from "../../support/server.ts"

export const base = "/v2/sandboxes"

type Requester = <T = any>(method: string, path: string, options?: RequestOptions) => Promise<ApiResponse<T>>

/** A fresh DNS-label name for one test. */
export const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`

export const sandboxApi = (request: Requester, defaults: RequestOptions = {}) => {
  const call = <T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}) =>
    request<T>(method, `${base}${path}`, { ...defaults, ...options, ...(body !== undefined ? { body } : {}) })
  return {
    call,
    createVolume: (name: string, size: string, extra: Record<string, unknown> = {}, options?: RequestOptions) =>
      call("POST", "/volumes", { name, size, ...extra }, options),
    createTemplate: (name: string, extra: Record<string, unknown> = {}, options?: RequestOptions) =>
      call("POST", "/templates", { name, image: "python:3.12-slim", resources: { cpu: "500m", memory: "512Mi" }, ...extra }, options),
    createPool: (name: string, template_name: string, replicas: number, options?: RequestOptions) =>
      call("POST", "/pools", { name, template_name, replicas }, options),
    createBox: (template_name: string, name?: string, options?: RequestOptions) =>
      call("POST", "/boxes", { template_name, ...(name ? { name } : {}) }, options),
    listAll: async <T = any>(kind: "templates" | "volumes" | "pools" | "boxes", limit = 500, options?: RequestOptions): Promise<Array<T>> => {
      const key = kind === "boxes" ? "sandboxes" : kind
      const out: Array<T> = []
      let offset = 0
      for (;;) {
        const page = await call("GET", `/${kind}?limit=${limit}&offset=${offset}`, undefined, options)
        if (page.status !== 200) throw new Error(`list ${kind} answered ${page.status}: ${JSON.stringify(page.body)}`)
        out.push(...page.body[key])
        if (page.body.offset !== offset + page.body[key].length) throw new Error(`bad next offset ${page.body.offset} after ${offset}`)
        offset = page.body.offset
        if (page.body[key].length < limit) return out
      }
    }
  }
}

/** Runs `npm run keys -- <args>` (node server/keys.ts) against a database file. */
export const runKeys = (databasePath: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["server/keys.ts", ...args],
      { cwd: join(import.meta.dirname, "../../.."), env: { ...process.env, DATABASE_PATH: databasePath, LOG_LEVEL: "silent" } },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr })
    )
  })

export const isoMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Writes `count` plain templates of a tenant straight into the database, in one transaction (for lists too long to create through the API). */
export const seedTemplates = (db: Db, tenantId: string, count: number, nameOf: (index: number) => string) => {
  const repository = makeSandboxRepository(db)
  const at = new Date().toISOString()
  repository.immediate(() => {
    for (let index = 0; index < count; index++) {
      repository.insertTemplate({
        id: randomUUID(),
        tenant_id: tenantId,
        name: nameOf(index),
        image: "alpine",
        cpu_millicores: 500n,
        cpu: "500m",
        memory_bytes: 512n * 1024n * 1024n,
        memory: "512Mi",
        storage_bytes: null,
        storage: null,
        proxy_config: null,
        created_at: at,
        updated_at: at,
        mounts: []
      })
    }
  })
}
