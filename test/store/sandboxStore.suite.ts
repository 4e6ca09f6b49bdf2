/** The `SandboxStore` conformance suite: what every backend must do, speaking only the interface. */
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { Stores } from "../../server/store/index.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import type { SnapshotRecord } from "../../server/store/SnapshotStore.ts"
import type { VolumeRecord } from "../../server/store/SandboxVolumeStore.ts"
import { allStores, at, unique } from "./fixtures.ts"

const GiB = 1024n ** 3n

const organization = Effect.gen(function* () {
  const keys = yield* KeyStore
  const organizationId = randomUUID()
  const tenantId = randomUUID()
  yield* keys.ensureTenant(tenantId, organizationId)
  return { organizationId, tenantId }
})

const volume = (tenantId: string, organizationId: string, gib: bigint, name = unique("vol")): VolumeRecord => ({
  id: randomUUID(),
  tenant_id: tenantId,
  organization_id: organizationId,
  name,
  size_bytes: gib * GiB,
  size: `${gib}Gi`,
  storage_class: "standard",
  created_at: at(),
  updated_at: at()
})

const template = (tenantId: string, mounts: ReadonlyArray<{ volume_id: string; mount_path: string }> = []) => ({
  id: randomUUID(),
  tenant_id: tenantId,
  name: unique("tpl"),
  image: "python:3.12-slim",
  cpu_millicores: 500n,
  cpu: "500m",
  memory_bytes: 512n * 1024n * 1024n,
  memory: "512Mi",
  storage_bytes: null,
  storage: null,
  proxy_config: { rules: [], no_proxy: ["localhost"] },
  mounts,
  created_at: at(),
  updated_at: at()
})

const snapshot = (tenantId: string, name: string): SnapshotRecord => ({
  id: randomUUID(),
  tenant_id: tenantId,
  name,
  docker_image: "python:3.12-slim",
  image_digest: null,
  fs_capacity_bytes: 2 * 1024 ** 3,
  status: "building",
  status_message: "pulling image python:3.12-slim",
  source_sandbox_id: null,
  created_at: at(),
  updated_at: at()
})

export const sandboxStoreSuite = (backend: string, stores: Layer.Layer<Stores, unknown>) =>
  layer(stores, { timeout: "60 seconds" })(`SandboxStore (${backend})`, (it) => {
    it.effect("keeps volumes with exact sizes, sums an organization's usage over its tenants, and refuses a taken name", () =>
      Effect.gen(function* () {
        const { quotaStore, volumeStore } = yield* allStores
        const keys = yield* KeyStore
        const { organizationId, tenantId } = yield* organization
        const sibling = randomUUID()
        yield* keys.ensureTenant(sibling, organizationId)
        const a = volume(tenantId, organizationId, 10n)
        yield* volumeStore.insertVolume(a)
        yield* volumeStore.insertVolume(volume(sibling, organizationId, 5n))
        expect(yield* volumeStore.volumeByName(tenantId, a.name)).toEqual(a)
        expect(yield* volumeStore.volumeByName(sibling, a.name)).toBeUndefined()
        expect(yield* quotaStore.organizationUsage(organizationId)).toBe(15n * GiB)
        const clash = yield* Effect.flip(volumeStore.insertVolume(volume(tenantId, organizationId, 1n, a.name)))
        expect(clash._tag).toBe("SandboxConflict")
        const grown = { ...a, size_bytes: 20n * GiB, size: "20Gi", name: unique("renamed"), updated_at: at(1) }
        yield* volumeStore.updateVolume(a, grown)
        expect(yield* volumeStore.volumeByName(tenantId, grown.name)).toEqual(grown)
        expect(yield* quotaStore.organizationUsage(organizationId)).toBe(25n * GiB)
      })
    )

    it.effect("reads and sets an organization's own quota; undefined for an unknown organization", () =>
      Effect.gen(function* () {
        const { quotaStore } = yield* allStores
        const { organizationId } = yield* organization
        expect(yield* quotaStore.organizationQuota(organizationId)).toBeNull()
        expect(yield* quotaStore.setOrganizationQuota(organizationId, "200Gi")).toBe(true)
        expect(yield* quotaStore.organizationQuota(organizationId)).toBe("200Gi")
        expect(yield* quotaStore.organizationQuota(randomUUID())).toBeUndefined()
      })
    )

    it.effect("keeps templates with their mounts in order, and counts what uses them", () =>
      Effect.gen(function* () {
        const { templateStore, volumeStore } = yield* allStores
        const { organizationId, tenantId } = yield* organization
        const data = volume(tenantId, organizationId, 1n)
        yield* volumeStore.insertVolume(data)
        const made = template(tenantId, [{ volume_id: data.id, mount_path: "/data" }])
        yield* templateStore.insertTemplate(made)
        const stored = yield* templateStore.templateByName(tenantId, made.name)
        expect(stored).toEqual({ ...made, mounts: [{ volume_id: data.id, volume_name: data.name, mount_path: "/data" }] })
        expect(yield* templateStore.templateById(made.id)).toEqual(stored)
        expect(yield* volumeStore.templatesMounting(data.id)).toEqual([made.name])
        expect(yield* templateStore.templateUsage(made.id)).toEqual({ sandboxes: 0, pools: 0 })
        yield* templateStore.renameTemplate(stored!, `${made.name}-x`, at(2))
        expect((yield* templateStore.templateByName(tenantId, `${made.name}-x`))?.id).toBe(made.id)
        yield* templateStore.deleteTemplate(made.id)
        expect(yield* templateStore.templateById(made.id)).toBeUndefined()
      })
    )

    it.effect("keeps pools and their sandboxes; deleting a pool deletes its sandboxes", () =>
      Effect.gen(function* () {
        const { poolStore, sandboxStore, templateStore } = yield* allStores
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* templateStore.insertTemplate(made)
        const pool = { id: randomUUID(), tenant_id: tenantId, name: unique("pool"), template_id: made.id, replicas: 2, created_at: at(), updated_at: at() }
        yield* poolStore.insertPool(pool)
        const box = (name: string, poolId: string | null) => ({
          id: randomUUID(),
          tenant_id: tenantId,
          name,
          template_id: made.id,
          pool_id: poolId,
          status: "provisioning" as const,
          status_message: null,
          created_at: at(),
          updated_at: at()
        })
        const members = [box(unique("m"), pool.id), box(unique("m"), pool.id)]
        const single = box(unique("single"), null)
        yield* Effect.forEach([...members, single], (item) => sandboxStore.insertSandbox(item))
        expect((yield* sandboxStore.poolSandboxes(pool.id)).map((item) => item.name)).toEqual(members.map((item) => item.name))
        expect(yield* templateStore.templateUsage(made.id)).toEqual({ sandboxes: 3, pools: 1 })
        expect((yield* sandboxStore.sandboxByName(tenantId, single.name))).toMatchObject({ template_name: made.name, pool_name: null, status: "provisioning" })
        const taken = yield* Effect.flip(sandboxStore.insertSandbox(box(single.name, null)))
        expect(taken._tag).toBe("SandboxConflict")
        yield* poolStore.deletePool(pool.id)
        expect(yield* sandboxStore.poolSandboxes(pool.id)).toEqual([])
        expect(yield* sandboxStore.sandboxNameTaken(tenantId, members[0]!.name)).toBe(false)
        expect(yield* sandboxStore.sandboxNameTaken(tenantId, single.name)).toBe(true)
      })
    )

    it.effect("moves a sandbox's status only from the state the caller saw, and lists every sandbox for the resume", () =>
      Effect.gen(function* () {
        const { sandboxStore, templateStore } = yield* allStores
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* templateStore.insertTemplate(made)
        const id = randomUUID()
        yield* sandboxStore.insertSandbox({ id, tenant_id: tenantId, name: unique("box"), template_id: made.id, pool_id: null, status: "provisioning", status_message: null, created_at: at(), updated_at: at() })
        expect(yield* sandboxStore.setSandboxStatus(id, "ready", "stopped", null, at(1))).toBe(false)
        expect(yield* sandboxStore.setSandboxStatus(id, "provisioning", "failed", "pull failed: manifest unknown", at(1))).toBe(true)
        expect(yield* sandboxStore.sandboxById(tenantId, id)).toMatchObject({ status: "failed", status_message: "pull failed: manifest unknown", updated_at: at(1) })
        expect(yield* sandboxStore.sandboxById(randomUUID(), id)).toBeUndefined()
        expect((yield* sandboxStore.allSandboxes()).map((item) => item.id)).toContain(id)
        const box = (yield* sandboxStore.sandboxById(tenantId, id))!
        expect(yield* sandboxStore.sandboxAccess(tenantId, id)).toEqual({ id, name: box.name, status: "failed" })
        expect(yield* sandboxStore.sandboxAccess(randomUUID(), id)).toBeUndefined()
        expect(yield* sandboxStore.sandboxAccess(tenantId, randomUUID())).toBeUndefined()
        yield* sandboxStore.deleteSandbox(id)
        expect(yield* sandboxStore.sandboxAccess(tenantId, id)).toBeUndefined()
      })
    )

    it.effect("pages a tenant's sandboxes in creation order, deep pages included, after writes", () =>
      Effect.gen(function* () {
        const { transaction, sandboxStore, templateStore } = yield* allStores
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* templateStore.insertTemplate(made)
        const names = Array.from({ length: 5000 }, (_, index) => `p-${String(index).padStart(5, "0")}`)
        yield* transaction(
          Effect.forEach(names, (name) =>
            sandboxStore.insertSandbox({ id: randomUUID(), tenant_id: tenantId, name, template_id: made.id, pool_id: null, status: "ready", status_message: null, created_at: at(), updated_at: at() })
          )
        )
        const page = (offset: number) => Effect.map(sandboxStore.listSandboxes(tenantId, { limit: 3, offset }), (items) => items.map((item) => item.name))
        expect(yield* page(0)).toEqual(names.slice(0, 3))
        expect(yield* page(4500)).toEqual(names.slice(4500, 4503))
        yield* sandboxStore.deleteSandbox((yield* sandboxStore.sandboxByName(tenantId, names[10]!))!.id)
        expect(yield* page(4500)).toEqual(names.slice(4501, 4504))
        expect(yield* page(4999)).toEqual([])
      })
    )

    it.effect("keeps a volume name unique within the organization: tenants of one organization cannot share it, tenants of another can", () =>
      Effect.gen(function* () {
        const { volumeStore } = yield* allStores
        const keys = yield* KeyStore
        const { organizationId, tenantId } = yield* organization
        const sibling = randomUUID()
        yield* keys.ensureTenant(sibling, organizationId)
        const stranger = yield* organization
        const name = unique("data")
        yield* volumeStore.insertVolume(volume(tenantId, organizationId, 1n, name))
        const clash = yield* Effect.flip(volumeStore.insertVolume(volume(sibling, organizationId, 1n, name)))
        expect(clash._tag).toBe("SandboxConflict")
        expect(yield* volumeStore.volumeByName(sibling, name)).toBeUndefined()
        // A rename into a name the organization uses is refused the same way.
        const other = volume(sibling, organizationId, 1n)
        yield* volumeStore.insertVolume(other)
        expect((yield* Effect.flip(volumeStore.updateVolume(other, { ...other, name, updated_at: at(1) })))._tag).toBe("SandboxConflict")
        // Another organization's tenant may use it.
        const theirs = volume(stranger.tenantId, stranger.organizationId, 1n, name)
        yield* volumeStore.insertVolume(theirs)
        expect(yield* volumeStore.volumeByName(stranger.tenantId, name)).toEqual(theirs)
      })
    )

    it.effect("answers an empty page for any offset past the end, however large", () =>
      Effect.gen(function* () {
        const { poolStore, sandboxStore, templateStore, volumeStore } = yield* allStores
        const { organizationId, tenantId } = yield* organization
        yield* volumeStore.insertVolume(volume(tenantId, organizationId, 1n))
        for (const offset of [5_000, 2 ** 53 + 2, 9.2e18, 2 ** 63, 2 ** 64, 1e300]) {
          const page = { limit: 10, offset }
          expect(yield* volumeStore.listVolumes(tenantId, page)).toEqual([])
          expect(yield* templateStore.listTemplates(tenantId, page)).toEqual([])
          expect(yield* poolStore.listPools(tenantId, page)).toEqual([])
          expect(yield* sandboxStore.listSandboxes(tenantId, page)).toEqual([])
        }
      })
    )

    it.effect("names the sandboxes that mount a volume, through any template", () =>
      Effect.gen(function* () {
        const { sandboxStore, templateStore, volumeStore } = yield* allStores
        const { organizationId, tenantId } = yield* organization
        const [data, spare] = [volume(tenantId, organizationId, 1n), volume(tenantId, organizationId, 1n)]
        yield* volumeStore.insertVolume(data)
        yield* volumeStore.insertVolume(spare)
        const first = template(tenantId, [{ volume_id: data.id, mount_path: "/data" }])
        const second = template(tenantId, [{ volume_id: data.id, mount_path: "/mnt" }])
        yield* templateStore.insertTemplate(first)
        yield* templateStore.insertTemplate(second)
        expect(yield* volumeStore.volumesAttached([data.id, spare.id])).toEqual([])
        expect(yield* volumeStore.volumesAttached([])).toEqual([])
        const boxName = unique("box")
        const id = randomUUID()
        yield* sandboxStore.insertSandbox({ id, tenant_id: tenantId, name: boxName, template_id: second.id, pool_id: null, status: "provisioning", status_message: null, created_at: at(), updated_at: at() })
        expect(yield* volumeStore.volumesAttached([data.id])).toEqual([{ volume_name: data.name, sandbox_name: boxName }])
        expect(yield* volumeStore.volumesAttached([spare.id])).toEqual([])
        yield* sandboxStore.deleteSandbox(id)
        expect(yield* volumeStore.volumesAttached([data.id])).toEqual([])
      })
    )

    it.effect("keeps registries per tenant, newest first, refuses a taken name, and filters by a literal substring", () =>
      Effect.gen(function* () {
        const { registryStore } = yield* allStores
        const { tenantId } = yield* organization
        const other = (yield* organization).tenantId
        const registry = (name: string, offsetMs: number, tenant = tenantId) => ({
          id: randomUUID(),
          tenant_id: tenant,
          name,
          url: "registry.example.com/acme",
          username: "robot",
          password_sealed: "enc:v1:c2VhbGVk",
          created_at: at(offsetMs),
          updated_at: at(offsetMs)
        })
        const first = registry("alpha", 0)
        const second = registry("beta_1", 1)
        yield* registryStore.insertRegistry(first)
        yield* registryStore.insertRegistry(second)
        yield* registryStore.insertRegistry(registry("alpha", 2, other))
        expect(yield* registryStore.registryByName(tenantId, "alpha")).toEqual(first)
        expect(yield* registryStore.registryByName(tenantId, "gamma")).toBeUndefined()
        expect(yield* registryStore.registryById(tenantId, second.id)).toEqual(second)
        expect(yield* registryStore.registryById(other, second.id)).toBeUndefined()
        const all = { limit: 10, offset: 0 }
        expect((yield* registryStore.listRegistries(tenantId, all)).map((r) => r.name)).toEqual(["beta_1", "alpha"])
        expect((yield* registryStore.listRegistries(tenantId, { limit: 1, offset: 1 })).map((r) => r.name)).toEqual(["alpha"])
        expect((yield* registryStore.listRegistries(tenantId, all, "ta_")).map((r) => r.name)).toEqual(["beta_1"])
        expect(yield* registryStore.listRegistries(tenantId, all, "%")).toEqual([])
        expect((yield* registryStore.tenantRegistries(tenantId)).map((r) => r.name)).toEqual(["alpha", "beta_1"])
        const taken = yield* Effect.flip(registryStore.insertRegistry(registry("alpha", 3)))
        expect(taken._tag).toBe("SandboxConflict")
        const renamed = yield* Effect.flip(registryStore.updateRegistry({ ...second, name: "alpha" }))
        expect(renamed._tag).toBe("SandboxConflict")
        const updated = { ...second, name: "gamma", url: "ghcr.io", username: "bot", password_sealed: "enc:v1:bmV3", updated_at: at(9) }
        yield* registryStore.updateRegistry(updated)
        expect(yield* registryStore.registryByName(tenantId, "gamma")).toEqual(updated)
        yield* registryStore.deleteRegistry(first.id)
        expect(yield* registryStore.registryByName(tenantId, "alpha")).toBeUndefined()
        expect(yield* registryStore.registryByName(other, "alpha")).toBeDefined()
        const resealed = yield* registryStore.resealRegistryPasswords((sealed) => `${sealed}!`)
        expect(resealed).toBeGreaterThanOrEqual(2)
        expect((yield* registryStore.registryByName(tenantId, "gamma"))!.password_sealed).toBe("enc:v1:bmV3!")
      })
    )

    it.effect("keeps one service URL grant per box and port, lists the unexpired ones, and removes one or all", () =>
      Effect.gen(function* () {
        const { grantStore } = yield* allStores
        const { tenantId } = yield* organization
        const sandboxId = randomUUID()
        const grant = (port: number, expiresAt: string) => ({ id: randomUUID(), tenant_id: tenantId, sandbox_id: sandboxId, port, created_at: at(), expires_at: expiresAt })
        const web = grant(8080, at(60_000))
        yield* grantStore.putServiceGrant(web)
        yield* grantStore.putServiceGrant(grant(9000, at(1_000)))
        expect(yield* grantStore.serviceGrant(sandboxId, 8080)).toEqual(web)
        expect(yield* grantStore.serviceGrantById(web.id)).toEqual(web)
        expect((yield* grantStore.listServiceGrants(sandboxId, at(5_000))).map((g) => g.port)).toEqual([8080])
        expect((yield* grantStore.listServiceGrants(sandboxId, at(0))).map((g) => g.port)).toEqual([8080, 9000])
        yield* grantStore.extendServiceGrant(web.id, at(120_000))
        expect((yield* grantStore.serviceGrant(sandboxId, 8080))!.expires_at).toBe(at(120_000))
        const replacement = grant(8080, at(30_000))
        yield* grantStore.putServiceGrant(replacement)
        expect(yield* grantStore.serviceGrantById(web.id)).toBeUndefined()
        expect(yield* grantStore.serviceGrant(sandboxId, 8080)).toEqual(replacement)
        expect(yield* grantStore.deleteServiceGrants(sandboxId, 9000)).toBe(1)
        expect(yield* grantStore.serviceGrant(sandboxId, 9000)).toBeUndefined()
        yield* grantStore.putServiceGrant(grant(9001, at(1_000)))
        expect(yield* grantStore.deleteServiceGrants(sandboxId)).toBe(2)
        expect(yield* grantStore.listServiceGrants(sandboxId, at(0))).toEqual([])
      })
    )

    it.effect("keeps snapshots: by id and name per tenant, a taken name refused, status moved only from the state seen, filtered pages", () =>
      Effect.gen(function* () {
        const { snapshotStore } = yield* allStores
        const { tenantId } = yield* organization
        const other = yield* organization
        const made = snapshot(tenantId, "team/python-tools:v1")
        yield* snapshotStore.insertSnapshot(made)
        expect(yield* snapshotStore.snapshotById(tenantId, made.id)).toEqual(made)
        expect(yield* snapshotStore.snapshotByName(tenantId, made.name)).toEqual(made)
        expect(yield* snapshotStore.snapshotById(other.tenantId, made.id)).toBeUndefined()
        expect(yield* snapshotStore.snapshotByName(other.tenantId, made.name)).toBeUndefined()
        expect((yield* Effect.flip(snapshotStore.insertSnapshot(snapshot(tenantId, made.name))))._tag).toBe("SandboxConflict")
        // Another tenant may use the name.
        yield* snapshotStore.insertSnapshot(snapshot(other.tenantId, made.name))

        expect((yield* snapshotStore.buildingSnapshots()).map((item) => item.id)).toContain(made.id)
        expect(yield* snapshotStore.setSnapshotStatus(made.id, "ready", "failed", "x", null, at(1))).toBe(false)
        expect(yield* snapshotStore.setSnapshotStatus(made.id, "building", "ready", null, "sha256:abc", at(1))).toBe(true)
        expect(yield* snapshotStore.snapshotById(tenantId, made.id)).toEqual({ ...made, status: "ready", status_message: null, image_digest: "sha256:abc", updated_at: at(1) })
        expect((yield* snapshotStore.buildingSnapshots()).map((item) => item.id)).not.toContain(made.id)

        const more = [snapshot(tenantId, "alpha-PY".toLowerCase()), snapshot(tenantId, "beta"), snapshot(tenantId, "gamma-py")]
        yield* Effect.forEach(more, (item) => snapshotStore.insertSnapshot(item))
        const names = (page: Parameters<typeof snapshotStore.listSnapshots>[1]) => Effect.map(snapshotStore.listSnapshots(tenantId, page), (items) => items.map((item) => item.name))
        expect(yield* names({ limit: 10, offset: 0 })).toEqual([made.name, "alpha-py", "beta", "gamma-py"])
        expect(yield* names({ limit: 10, offset: 0, nameContains: "PY" })).toEqual([made.name, "alpha-py", "gamma-py"])
        expect(yield* names({ limit: 1, offset: 1, nameContains: "py" })).toEqual(["alpha-py"])
        // LIKE wildcards are plain characters here.
        expect(yield* names({ limit: 10, offset: 0, nameContains: "%" })).toEqual([])
        expect(yield* names({ limit: 10, offset: 0, nameContains: "_" })).toEqual([])
        expect(yield* names({ limit: 10, offset: 2 ** 60 })).toEqual([])
        expect(yield* names({ limit: 10, offset: 0, status: "ready" })).toEqual([made.name])
        expect(yield* names({ limit: 10, offset: 0, status: "building", nameContains: "a" })).toEqual(["alpha-py", "beta", "gamma-py"])
        expect(yield* names({ limit: 10, offset: 0, status: "failed" })).toEqual([])

        yield* snapshotStore.deleteSnapshot(more[1]!.id)
        expect(yield* snapshotStore.snapshotById(tenantId, more[1]!.id)).toBeUndefined()
      })
    )

    it.effect("keeps boxes made from a snapshot (no template) with their spec and retention; counts a snapshot's boxes; records stopped_at", () =>
      Effect.gen(function* () {
        const { sandboxStore, snapshotStore, templateStore } = yield* allStores
        const { tenantId } = yield* organization
        const made = snapshot(tenantId, unique("base"))
        yield* snapshotStore.insertSnapshot(made)
        const id = randomUUID()
        const spec = { snapshot_id: made.id, image: made.docker_image, vcpus: 2, mem_bytes: 8 * 1024 ** 3, fs_capacity_bytes: 2 ** 40 }
        yield* sandboxStore.insertSandbox({
          id,
          tenant_id: tenantId,
          name: unique("box"),
          template_id: null,
          pool_id: null,
          status: "ready",
          status_message: null,
          created_at: at(),
          updated_at: at(),
          ...spec,
          idle_ttl_seconds: 600
        })
        const stored = yield* sandboxStore.sandboxById(tenantId, id)
        expect(stored).toMatchObject({ ...spec, template_id: null, template_name: null, ttl_seconds: null, idle_ttl_seconds: 600, delete_after_stop_seconds: null, stopped_at: null })
        expect(yield* snapshotStore.snapshotUsage(made.id)).toBe(1)
        expect((yield* sandboxStore.listSandboxes(tenantId, { limit: 10, offset: 0 })).map((item) => item.id)).toEqual([id])
        expect((yield* sandboxStore.sandboxesWithRetention()).map((item) => item.id)).toContain(id)

        yield* sandboxStore.updateSandboxRetention(id, { ttl_seconds: 3600, delete_after_stop_seconds: 0 }, at(5))
        expect(yield* sandboxStore.sandboxById(tenantId, id)).toMatchObject({ ttl_seconds: 3600, idle_ttl_seconds: 600, delete_after_stop_seconds: 0, updated_at: at(5) })

        expect(yield* sandboxStore.setSandboxStatus(id, "ready", "stopped", null, at(10))).toBe(true)
        expect((yield* sandboxStore.sandboxById(tenantId, id))?.stopped_at).toBe(at(10))
        expect(yield* sandboxStore.setSandboxStatus(id, "stopped", "provisioning", null, at(11))).toBe(true)
        expect((yield* sandboxStore.sandboxById(tenantId, id))?.stopped_at).toBeNull()

        // A template box has none of it, and no retention unless given.
        const tpl = template(tenantId)
        yield* templateStore.insertTemplate(tpl)
        const plain = randomUUID()
        yield* sandboxStore.insertSandbox({ id: plain, tenant_id: tenantId, name: unique("plain"), template_id: tpl.id, pool_id: null, status: "ready", status_message: null, created_at: at(), updated_at: at() })
        expect(yield* sandboxStore.sandboxById(tenantId, plain)).toMatchObject({ template_name: tpl.name, snapshot_id: null, image: null, vcpus: null, ttl_seconds: null })
        expect((yield* sandboxStore.sandboxesWithRetention()).map((item) => item.id)).not.toContain(plain)

        // Filtered pages: name substring (case-insensitive, no wildcards) and status, in creation order.
        const matching = (filter: Omit<Parameters<typeof sandboxStore.listSandboxesMatching>[1], "limit" | "offset">, offset = 0, limit = 10) =>
          Effect.map(sandboxStore.listSandboxesMatching(tenantId, { limit, offset, ...filter }), (items) => items.map((item) => item.id))
        expect(yield* matching({ nameContains: "BOX" })).toEqual([id])
        expect(yield* matching({ status: "ready" })).toEqual([plain])
        expect(yield* matching({ status: "provisioning" })).toEqual([id])
        expect(yield* matching({ nameContains: "-" })).toEqual([id, plain])
        expect(yield* matching({ nameContains: "-" }, 1, 1)).toEqual([plain])
        expect(yield* matching({ nameContains: "%" })).toEqual([])
        expect(yield* matching({ nameContains: "-" }, 2 ** 60)).toEqual([])
        expect(yield* Effect.map(sandboxStore.listSandboxesMatching(randomUUID(), { limit: 10, offset: 0, nameContains: "-" }), (items) => items.length)).toBe(0)

        yield* sandboxStore.deleteSandbox(id)
        expect(yield* snapshotStore.snapshotUsage(made.id)).toBe(0)
      })
    )

    it.effect("warm claim: finds the ready boxes of a template's pools (this tenant's only), oldest first; a claim takes the box out of its pool once", () =>
      Effect.gen(function* () {
        const { poolStore, sandboxStore, templateStore } = yield* allStores
        const { tenantId } = yield* organization
        const other = yield* organization
        const made = template(tenantId)
        const foreignTemplate = template(other.tenantId)
        yield* templateStore.insertTemplate(made)
        yield* templateStore.insertTemplate(foreignTemplate)
        const pool = { id: randomUUID(), tenant_id: tenantId, name: unique("pool"), template_id: made.id, replicas: 3, created_at: at(), updated_at: at() }
        yield* poolStore.insertPool(pool)
        const box = (poolId: string | null, status: "provisioning" | "ready", owner = tenantId, templateId = made.id) => ({
          id: randomUUID(), tenant_id: owner, name: unique("m"), template_id: templateId, pool_id: poolId, status, status_message: null, created_at: at(), updated_at: at()
        })
        const [warming, first, second] = [box(pool.id, "provisioning"), box(pool.id, "ready"), box(pool.id, "ready")]
        const single = box(null, "ready")
        for (const item of [warming, first, second, single]) yield* sandboxStore.insertSandbox(item)
        expect((yield* sandboxStore.readyPoolSandboxes(tenantId, made.id, 4)).map((item) => item.id)).toEqual([first.id, second.id])
        expect((yield* sandboxStore.readyPoolSandboxes(tenantId, made.id, 1)).map((item) => item.id)).toEqual([first.id])
        expect(yield* sandboxStore.readyPoolSandboxes(other.tenantId, made.id, 4)).toEqual([])
        const [candidate] = yield* sandboxStore.readyPoolSandboxes(tenantId, made.id, 1)
        const taken = unique("claimed")
        expect(yield* sandboxStore.claimSandbox(candidate!, taken, at())).toBe(true)
        expect(yield* sandboxStore.sandboxByName(tenantId, taken)).toMatchObject({ id: first.id, pool_id: null, pool_name: null, status: "ready" })
        // The same candidate again (a second, racing claim): refused, the box keeps its new name.
        expect(yield* sandboxStore.claimSandbox(candidate!, unique("late"), at())).toBe(false)
        expect((yield* sandboxStore.poolSandboxes(pool.id)).map((item) => item.id)).toEqual([warming.id, second.id])
        // A name in use is a conflict, and the box stays in its pool.
        const [next] = yield* sandboxStore.readyPoolSandboxes(tenantId, made.id, 1)
        const refused = yield* Effect.flip(sandboxStore.claimSandbox(next!, single.name, at()))
        expect(refused._tag).toBe("SandboxConflict")
        expect((yield* sandboxStore.poolSandboxes(pool.id)).map((item) => item.id)).toEqual([warming.id, second.id])
      })
    )
  })
