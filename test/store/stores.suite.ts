/**
 * The store conformance suite: what every backend of DeploymentStore, SandboxStore and KeyStore
 * must do, whatever it stores in. `sqlite-stores.test.ts` runs it on a SQLite file,
 * `postgres-stores.test.ts` on a real PostgreSQL server. It takes the backend as a Layer.
 */
import { randomUUID } from "node:crypto"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DeploymentFilter, DeploymentRecord } from "../../server/store/DeploymentStore.ts"
import type { Stores } from "../../server/store/index.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import type { NewRevision } from "../../server/store/RevisionStore.ts"
import type { VolumeRecord } from "../../server/store/SandboxVolumeStore.ts"
import { allStores } from "./fixtures.ts"

export interface Backend {
  readonly layer: Layer.Layer<Stores, unknown>
  readonly teardown?: () => Promise<void>
}

const iso = (offsetMs = 0) => new Date(Date.UTC(2026, 10, 23, 12, 0, 0, 123) + offsetMs).toISOString()

export const describeStores = (label: string, setup: () => Promise<Backend>) =>
  describe(`store conformance: ${label}`, () => {
    let backend: Backend
    let scope: Scope.Closeable
    let context: Context.Context<Stores>
    const run = <A, E>(effect: Effect.Effect<A, E, Stores>): Promise<A> => Effect.runPromise(Effect.provideContext(effect, context))
    const exit = <A, E>(effect: Effect.Effect<A, E, Stores>) => Effect.runPromise(Effect.exit(Effect.provideContext(effect, context)))

    beforeAll(async () => {
      backend = await setup()
      scope = Effect.runSync(Scope.make())
      context = await Effect.runPromise(Effect.orDie(Layer.buildWithScope(backend.layer, scope)))
    }, 60_000)
    afterAll(async () => {
      if (scope) await Effect.runPromise(Scope.close(scope, Exit.void))
      await backend?.teardown?.()
    })

    /** A fresh tenant in a fresh organization. */
    const tenant = async () => {
      const tenantId = randomUUID()
      const organizationId = randomUUID()
      await run(Effect.flatMap(KeyStore, (keys) => keys.ensureTenant(tenantId, organizationId)))
      return { tenantId, organizationId }
    }

    describe("KeyStore", () => {
      it("creates keys once, authenticates them in constant shape, and scopes tenants to the key's organization", async () => {
        const { tenantId, organizationId } = await tenant()
        const keys = await run(KeyStore)
        const created = await run(keys.createKey({ tenantId, organizationId, description: "suite" }))
        expect(created.organizationId).toBe(organizationId)
        // The same plaintext again: the same key, not a second one.
        expect((await run(keys.createKey({ tenantId, organizationId, key: created.key }))).id).toBe(created.id)
        expect(await run(keys.authenticate(created.key, undefined))).toEqual({ keyId: created.id, organizationId, tenantId })
        const sibling = randomUUID()
        await run(keys.ensureTenant(sibling, organizationId))
        expect((await run(keys.authenticate(created.key, sibling.toUpperCase()))).tenantId).toBe(sibling)
        const other = await tenant()
        const forbidden = await exit(keys.authenticate(created.key, other.tenantId))
        expect(Exit.isFailure(forbidden) && JSON.stringify(forbidden.cause)).toContain("Forbidden")
        const unknown = await exit(keys.authenticate("slw_nope", undefined))
        expect(Exit.isFailure(unknown) && JSON.stringify(unknown.cause)).toContain("Invalid API key")
        expect(await run(keys.tenantOrganization(sibling))).toBe(organizationId)
        expect((await run(keys.listKeys())).some((key) => key.id === created.id && key.revoked_at === null)).toBe(true)
        expect(await run(keys.revokeKey(created.id))).toBe(true)
        expect(await run(keys.revokeKey(created.id))).toBe(false)
        const revoked = await exit(keys.authenticate(created.key, undefined))
        expect(Exit.isFailure(revoked)).toBe(true)
      })
    })

    describe("DeploymentStore", () => {
      const deploymentOf = (tenantId: string, name: string, at: string): { deployment: DeploymentRecord; revision: NewRevision } => {
        const id = randomUUID()
        const revisionId = randomUUID()
        // Keys deliberately not in sorted order: the stored document must come back as written.
        const sourceConfig = { resource_spec: { min_scale: 1, max_scale: 3 }, deployment_type: "dev", listener_id: null } as any
        const revisionConfig = { image_uri: `registry.example.com/${name}:1`, repo_ref: null } as any
        return {
          deployment: {
            id,
            tenant_id: tenantId,
            name,
            source: "external_container",
            source_config: sourceConfig,
            source_revision_config: revisionConfig,
            secrets: [{ name: "TOKEN", value: "sealed:abc" }],
            image_version: null,
            status: "AWAITING_DATABASE",
            latest_revision_id: revisionId,
            active_revision_id: null,
            revision_seq: 1,
            created_at: at,
            updated_at: at
          },
          revision: {
            id: revisionId,
            tenant_id: tenantId,
            deployment_id: id,
            seq: 1,
            source: "external_container",
            status: "CREATING",
            status_message: null,
            source_revision_config: revisionConfig,
            deployed_at: null,
            created_at: at,
            updated_at: at,
            secrets: [{ name: "TOKEN", value: "sealed:abc" }]
          }
        }
      }

      it("round-trips a deployment exactly (documents, timestamps) and refuses a taken name with Conflict", async () => {
        const { tenantId } = await tenant()
        const { deploymentStore, revisionStore } = await run(allStores)
        const { deployment, revision } = deploymentOf(tenantId, "exact", iso())
        await run(deploymentStore.createDeployment(deployment, revision, randomUUID()))
        const back = await run(deploymentStore.deployment(tenantId, deployment.id))
        expect(JSON.stringify(back)).toBe(JSON.stringify(deployment))
        expect(await run(deploymentStore.deployment(randomUUID(), deployment.id))).toBeUndefined()
        const again = deploymentOf(tenantId, "exact", iso(1))
        const refused = await exit(deploymentStore.createDeployment(again.deployment, again.revision, randomUUID()))
        expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("Conflict")
        // Nothing of the refused create was kept.
        expect(await run(revisionStore.revision(tenantId, again.deployment.id, again.revision.id))).toBeUndefined()
        expect((await run(deploymentStore.listTracingProjects(tenantId, "exact", { limit: 10, offset: 0 }))).map((p) => p.deployment_id)).toEqual([deployment.id])
      })

      it("lists newest first with filters and pages", async () => {
        const { tenantId } = await tenant()
        const { deploymentStore } = await run(allStores)
        const made: Array<DeploymentRecord> = []
        for (let i = 0; i < 7; i++) {
          const { deployment, revision } = deploymentOf(tenantId, `app-${i}`, iso(i * 1000))
          await run(deploymentStore.createDeployment(deployment, revision, randomUUID()))
          made.push(deployment)
        }
        const all: DeploymentFilter = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        const page = (offset: number, limit: number, filter = all) => run(deploymentStore.listDeployments(tenantId, filter, { limit, offset }))
        expect((await page(0, 3)).map((d) => d.name)).toEqual(["app-6", "app-5", "app-4"])
        expect((await page(6, 3)).map((d) => d.name)).toEqual(["app-0"])
        expect((await page(0, 10, { ...all, nameContains: "APP-3" })).map((d) => d.name)).toEqual(["app-3"])
        expect((await page(0, 10, { ...all, ids: [made[1]!.id, made[2]!.id] })).map((d) => d.name)).toEqual(["app-2", "app-1"])
        expect(await page(0, 10, { ...all, statuses: ["READY"] })).toEqual([])
        expect((await page(0, 10, { ...all, deploymentType: "dev" })).length).toBe(7)
      })

      it("pages deployments and revisions exactly past the checkpoint threshold, and after creates and deletes before the page", async () => {
        const { tenantId } = await tenant()
        const other = await tenant()
        const { transaction, deploymentStore, revisionStore } = await run(allStores)
        // 4,300 deployments (deeper than the backends' 4 * 1,024 threshold), one a second, and a
        // few of another tenant interleaved; then 4,300 revisions of the newest one.
        const count = 4300
        const made = Array.from({ length: count }, (_, i) => deploymentOf(tenantId, `deep-${String(i).padStart(5, "0")}`, iso(i * 1000)))
        await run(
          transaction(
            Effect.forEach(made, ({ deployment, revision }) => deploymentStore.createDeployment(deployment, revision, randomUUID()), { discard: true })
          )
        )
        for (let i = 0; i < 5; i++) {
          const stranger = deploymentOf(other.tenantId, `other-${i}`, iso(i * 1000 + 500))
          await run(deploymentStore.createDeployment(stranger.deployment, stranger.revision, randomUUID()))
        }
        const all: DeploymentFilter = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        const names = (rows: ReadonlyArray<DeploymentRecord>) => rows.map((row) => row.name)
        let expected = made.map(({ deployment }) => deployment.name).reverse()
        const page = (offset: number, limit: number) => run(deploymentStore.listDeployments(tenantId, all, { limit, offset }))
        for (const [offset, limit] of [[0, 5], [4096, 7], [4150, 5], [4290, 50], [4299, 3]] as const) {
          expect(names(await page(offset, limit))).toEqual(expected.slice(offset, offset + limit))
        }
        expect(await page(9000, 5)).toEqual([])
        // A delete before the page shifts it at once; so does a newer deployment.
        await run(deploymentStore.deleteDeployment(tenantId, made[count - 3]!.deployment.id))
        expected = expected.filter((name) => name !== made[count - 3]!.deployment.name)
        expect(names(await page(4150, 5))).toEqual(expected.slice(4150, 4155))
        const newest = deploymentOf(tenantId, "deep-newest", iso(count * 1000))
        await run(deploymentStore.createDeployment(newest.deployment, newest.revision, randomUUID()))
        expected = ["deep-newest", ...expected]
        expect(names(await page(4150, 5))).toEqual(expected.slice(4150, 4155))
        expect(names(await page(4296, 10))).toEqual(expected.slice(4296))
        // A filtered list pages as before (a plain offset).
        expect(names(await run(deploymentStore.listDeployments(tenantId, { ...all, nameContains: "deep-0" }, { limit: 3, offset: 4200 })))).toEqual(
          expected.filter((name) => name.includes("deep-0")).slice(4200, 4203)
        )

        const target = made[count - 1]!.deployment
        /** The target's revision `seq`, added as the server adds one (the one before it is superseded). */
        const addRevision = (seq: number) => {
          const revision = { ...made[count - 1]!.revision, id: randomUUID(), seq, created_at: iso(seq), updated_at: iso(seq) }
          return deploymentStore.addRevision({ ...target, latest_revision_id: revision.id, revision_seq: seq }, revision)
        }
        await run(transaction(Effect.forEach(Array.from({ length: count - 1 }, (_, i) => i + 2), addRevision, { discard: true })))
        const seqs = (offset: number, limit: number) => run(revisionStore.listRevisions(tenantId, target.id, null, { limit, offset })).then((rows) => rows.map((row) => row.seq))
        const descending = (from: number, n: number) => Array.from({ length: Math.max(0, Math.min(n, from)) }, (_, i) => from - i)
        expect(await seqs(0, 3)).toEqual(descending(count, 3))
        expect(await seqs(4150, 5)).toEqual(descending(count - 4150, 5))
        expect(await seqs(4295, 10)).toEqual(descending(count - 4295, 10))
        expect(await seqs(5000, 10)).toEqual([])
        // A new revision shifts the deep page by one.
        await run(addRevision(count + 1))
        expect(await seqs(4150, 5)).toEqual(descending(count + 1 - 4150, 5))
        // The status filter pages as before (every revision but the newest was superseded).
        expect((await run(revisionStore.listRevisions(tenantId, target.id, ["SKIPPED"], { limit: 2, offset: 4200 }))).map((row) => row.seq)).toEqual(descending(count - 4200, 2))
      }, 180_000)

      it("moves a revision only from the state it is in, and activates it", async () => {
        const { tenantId } = await tenant()
        const { deploymentStore, revisionStore } = await run(allStores)
        const { deployment, revision } = deploymentOf(tenantId, "moving", iso())
        await run(deploymentStore.createDeployment(deployment, revision, randomUUID()))
        expect((await run(revisionStore.inProgressRevisions())).some((r) => r.id === revision.id)).toBe(true)
        expect(await run(revisionStore.advanceRevision(tenantId, revision.id, "CREATING", "QUEUED", null, null, iso(5)))).toBe(true)
        expect(await run(revisionStore.advanceRevision(tenantId, revision.id, "CREATING", "QUEUED", null, null, iso(6)))).toBe(false)
        expect((await run(revisionStore.revision(tenantId, deployment.id, revision.id)))?.status).toBe("QUEUED")
        expect(await run(revisionStore.advanceRevision(tenantId, revision.id, "QUEUED", "DEPLOYED", "Deployed", iso(7), iso(7)))).toBe(true)
        expect(await run(deploymentStore.setDeploymentState(tenantId, deployment.id, "READY", revision.id, iso(7)))).toBe(true)
        const moved = await run(revisionStore.revision(tenantId, deployment.id, revision.id))
        expect(moved).toMatchObject({ status: "DEPLOYED", status_message: "Deployed", deployed_at: iso(7), updated_at: iso(7) })
        expect((await run(revisionStore.inProgressRevisions())).some((r) => r.id === revision.id)).toBe(false)
        expect((await run(deploymentStore.deployment(tenantId, deployment.id)))?.active_revision_id).toBe(revision.id)
        expect(await run(deploymentStore.deleteDeployment(tenantId, deployment.id))).toBe(true)
        expect(await run(revisionStore.revision(tenantId, deployment.id, revision.id))).toBeUndefined()
      })

      it("keeps listeners and integrations per tenant", async () => {
        const { tenantId } = await tenant()
        const { integrationStore, listenerStore } = await run(allStores)
        const listener = { id: randomUUID(), tenant_id: tenantId, compute_type: "k8s" as const, compute_id: "main", version: null, compute_config: { k8s_namespace: "ns" } as any, created_at: iso(), updated_at: iso() }
        await run(listenerStore.insertListener(listener))
        expect(await run(listenerStore.listener(tenantId, listener.id))).toEqual(listener)
        expect(await run(listenerStore.listener(randomUUID(), listener.id))).toBeUndefined()
        const taken = await exit(listenerStore.insertListener({ ...listener, id: randomUUID() }))
        expect(Exit.isFailure(taken) && JSON.stringify(taken.cause)).toContain("Conflict")
        const integration = { id: randomUUID(), tenant_id: tenantId, provider: "github", owner: "Acme", owner_key: `acme-${tenantId}`, webhook_secret: "sealed", installed_at: iso() }
        await run(integrationStore.insertIntegration(integration))
        expect(await run(integrationStore.integrationsByOwner("github", integration.owner_key))).toEqual([integration])
        expect(await run(integrationStore.integrationByOwner(tenantId, "github", integration.owner_key))).toEqual(integration)
      })
    })

    describe("SandboxStore", () => {
      const volume = (tenantId: string, organizationId: string, name: string, gib: bigint, at = iso()): VolumeRecord => ({
        id: randomUUID(),
        tenant_id: tenantId,
        organization_id: organizationId,
        name,
        size_bytes: gib * 1024n ** 3n,
        size: `${gib}Gi`,
        storage_class: "standard",
        created_at: at,
        updated_at: at
      })

      it("round-trips volumes with exact sizes; a taken name is SandboxConflict; the usage sums the organization", async () => {
        const { tenantId, organizationId } = await tenant()
        const { quotaStore, volumeStore } = await run(allStores)
        const big = volume(tenantId, organizationId, "big", 2n ** 20n)
        await run(volumeStore.insertVolume(big))
        expect(await run(volumeStore.volumeByName(tenantId, "big"))).toEqual(big)
        const refused = await exit(volumeStore.insertVolume(volume(tenantId, organizationId, "big", 1n)))
        expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("SandboxConflict")
        await run(volumeStore.insertVolume(volume(tenantId, organizationId, "small", 3n)))
        expect(await run(quotaStore.organizationUsage(organizationId))).toBe((2n ** 20n + 3n) * 1024n ** 3n)
        const renamed = { ...big, name: "small" }
        const clash = await exit(volumeStore.updateVolume(big, renamed))
        expect(Exit.isFailure(clash) && JSON.stringify(clash.cause)).toContain("SandboxConflict")
        expect(await run(quotaStore.organizationQuota(organizationId))).toBeNull()
        expect(await run(quotaStore.setOrganizationQuota(organizationId, "10Gi"))).toBe(true)
        expect(await run(quotaStore.organizationQuota(organizationId))).toBe("10Gi")
        expect(await run(quotaStore.organizationQuota(randomUUID()))).toBeUndefined()
      })

      it("a failed transaction leaves nothing; nested calls join the outer one", async () => {
        const { tenantId, organizationId } = await tenant()
        const { transaction, volumeStore } = await run(allStores)
        const failed = await exit(
          transaction(
            Effect.gen(function* () {
              yield* volumeStore.insertVolume(volume(tenantId, organizationId, "ghost", 1n))
              yield* transaction(volumeStore.insertVolume(volume(tenantId, organizationId, "nested-ghost", 1n)))
              return yield* Effect.fail("abort" as const)
            })
          )
        )
        expect(Exit.isFailure(failed)).toBe(true)
        expect(await run(volumeStore.volumeByName(tenantId, "ghost"))).toBeUndefined()
        expect(await run(volumeStore.volumeByName(tenantId, "nested-ghost"))).toBeUndefined()
      })

      it("check-then-insert in transactions never passes a limit under concurrency", async () => {
        const { tenantId, organizationId } = await tenant()
        const { transaction, quotaStore, volumeStore } = await run(allStores)
        const limit = 10n * 1024n ** 3n
        const attempt = (i: number) =>
          transaction(
            Effect.gen(function* () {
              const usage = yield* quotaStore.organizationUsage(organizationId)
              if (usage + 3n * 1024n ** 3n > limit) return false
              yield* volumeStore.insertVolume(volume(tenantId, organizationId, `q-${i}`, 3n))
              return true
            })
          )
        const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => exit(attempt(i))))
        const granted = outcomes.filter((outcome) => Exit.isSuccess(outcome) && outcome.value === true).length
        // Busy failures are allowed (the client retries); a pass of the limit is not.
        for (const outcome of outcomes) if (Exit.isFailure(outcome)) expect(JSON.stringify(outcome.cause)).toContain("busy")
        expect(granted).toBeLessThanOrEqual(3)
        expect(await run(quotaStore.organizationUsage(organizationId))).toBe(BigInt(granted) * 3n * 1024n ** 3n)
      })

      it("templates keep their mounts in order and follow a renamed volume; pages are exact at any depth", async () => {
        const { tenantId, organizationId } = await tenant()
        const { transaction, templateStore, volumeStore } = await run(allStores)
        const a = volume(tenantId, organizationId, "a", 1n)
        const b = volume(tenantId, organizationId, "b", 1n)
        await run(Effect.all([volumeStore.insertVolume(a), volumeStore.insertVolume(b)]))
        const template = {
          id: randomUUID(),
          tenant_id: tenantId,
          name: "tpl",
          image: "python:3.12",
          cpu: "500m",
          cpu_millicores: 500n,
          memory: "1Gi",
          memory_bytes: 1024n ** 3n,
          storage: null,
          storage_bytes: null,
          proxy_config: null,
          created_at: iso(),
          updated_at: iso(),
          mounts: [
            { volume_id: b.id, mount_path: "/b" },
            { volume_id: a.id, mount_path: "/a" }
          ]
        }
        await run(templateStore.insertTemplate(template))
        await run(volumeStore.updateVolume(b, { ...b, name: "b2" }))
        const back = await run(templateStore.templateByName(tenantId, "tpl"))
        expect(back?.mounts).toEqual([
          { volume_id: b.id, volume_name: "b2", mount_path: "/b" },
          { volume_id: a.id, volume_name: "a", mount_path: "/a" }
        ])
        expect(back?.cpu_millicores).toBe(500n)
        expect(await run(volumeStore.templatesMounting(a.id))).toEqual(["tpl"])

        // 4,200 volumes: deeper than the backends' checkpoint threshold.
        const count = 4200
        await run(
          transaction(
            Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => volumeStore.insertVolume(volume(tenantId, organizationId, `p-${String(i).padStart(5, "0")}`, 1n)), {
              discard: true
            })
          )
        )
        const names = (rows: ReadonlyArray<VolumeRecord>) => rows.map((row) => row.name)
        const all = [a.name, "b2", ...Array.from({ length: count }, (_, i) => `p-${String(i).padStart(5, "0")}`)]
        expect(names(await run(volumeStore.listVolumes(tenantId, { limit: 5, offset: 0 })))).toEqual(all.slice(0, 5))
        expect(names(await run(volumeStore.listVolumes(tenantId, { limit: 5, offset: 4150 })))).toEqual(all.slice(4150, 4155))
        expect(names(await run(volumeStore.listVolumes(tenantId, { limit: 50, offset: 4190 })))).toEqual(all.slice(4190))
        expect(await run(volumeStore.listVolumes(tenantId, { limit: 5, offset: 9000 }))).toEqual([])
        // A delete before the page shifts it, at once.
        await run(volumeStore.deleteVolume((await run(volumeStore.volumeByName(tenantId, "p-00000")))!.id))
        expect(names(await run(volumeStore.listVolumes(tenantId, { limit: 5, offset: 4150 })))).toEqual(all.slice(4151, 4156))
      }, 120_000)
    })
  })

