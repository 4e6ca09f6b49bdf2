/** The `SandboxStore` conformance suite: what every backend must do, speaking only the interface. */
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { SandboxStore, type VolumeRecord } from "../../server/store/SandboxStore.ts"
import { at, unique } from "./fixtures.ts"

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

export const sandboxStoreSuite = (backend: string, stores: Layer.Layer<SandboxStore | KeyStore, unknown>) =>
  layer(stores, { timeout: "60 seconds" })(`SandboxStore (${backend})`, (it) => {
    it.effect("keeps volumes with exact sizes, sums an organization's usage over its tenants, and refuses a taken name", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const keys = yield* KeyStore
        const { organizationId, tenantId } = yield* organization
        const sibling = randomUUID()
        yield* keys.ensureTenant(sibling, organizationId)
        const a = volume(tenantId, organizationId, 10n)
        yield* store.insertVolume(a)
        yield* store.insertVolume(volume(sibling, organizationId, 5n))
        expect(yield* store.volumeByName(tenantId, a.name)).toEqual(a)
        expect(yield* store.volumeByName(sibling, a.name)).toBeUndefined()
        expect(yield* store.organizationUsage(organizationId)).toBe(15n * GiB)
        const clash = yield* Effect.flip(store.insertVolume(volume(tenantId, organizationId, 1n, a.name)))
        expect(clash._tag).toBe("SandboxConflict")
        const grown = { ...a, size_bytes: 20n * GiB, size: "20Gi", name: unique("renamed"), updated_at: at(1) }
        yield* store.updateVolume(a, grown)
        expect(yield* store.volumeByName(tenantId, grown.name)).toEqual(grown)
        expect(yield* store.organizationUsage(organizationId)).toBe(25n * GiB)
      })
    )

    it.effect("reads and sets an organization's own quota; undefined for an unknown organization", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { organizationId } = yield* organization
        expect(yield* store.organizationQuota(organizationId)).toBeNull()
        expect(yield* store.setOrganizationQuota(organizationId, "200Gi")).toBe(true)
        expect(yield* store.organizationQuota(organizationId)).toBe("200Gi")
        expect(yield* store.organizationQuota(randomUUID())).toBeUndefined()
      })
    )

    it.effect("keeps templates with their mounts in order, and counts what uses them", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { organizationId, tenantId } = yield* organization
        const data = volume(tenantId, organizationId, 1n)
        yield* store.insertVolume(data)
        const made = template(tenantId, [{ volume_id: data.id, mount_path: "/data" }])
        yield* store.insertTemplate(made)
        const stored = yield* store.templateByName(tenantId, made.name)
        expect(stored).toEqual({ ...made, mounts: [{ volume_id: data.id, volume_name: data.name, mount_path: "/data" }] })
        expect(yield* store.templateById(made.id)).toEqual(stored)
        expect(yield* store.templatesMounting(data.id)).toEqual([made.name])
        expect(yield* store.templateUsage(made.id)).toEqual({ sandboxes: 0, pools: 0 })
        yield* store.renameTemplate(stored!, `${made.name}-x`, at(2))
        expect((yield* store.templateByName(tenantId, `${made.name}-x`))?.id).toBe(made.id)
        yield* store.deleteTemplate(made.id)
        expect(yield* store.templateById(made.id)).toBeUndefined()
      })
    )

    it.effect("keeps pools and their sandboxes; deleting a pool deletes its sandboxes", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* store.insertTemplate(made)
        const pool = { id: randomUUID(), tenant_id: tenantId, name: unique("pool"), template_id: made.id, replicas: 2, created_at: at(), updated_at: at() }
        yield* store.insertPool(pool)
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
        yield* Effect.forEach([...members, single], (item) => store.insertSandbox(item))
        expect((yield* store.poolSandboxes(pool.id)).map((item) => item.name)).toEqual(members.map((item) => item.name))
        expect(yield* store.templateUsage(made.id)).toEqual({ sandboxes: 3, pools: 1 })
        expect((yield* store.sandboxByName(tenantId, single.name))).toMatchObject({ template_name: made.name, pool_name: null, status: "provisioning" })
        const taken = yield* Effect.flip(store.insertSandbox(box(single.name, null)))
        expect(taken._tag).toBe("SandboxConflict")
        yield* store.deletePool(pool.id)
        expect(yield* store.poolSandboxes(pool.id)).toEqual([])
        expect(yield* store.sandboxNameTaken(tenantId, members[0]!.name)).toBe(false)
        expect(yield* store.sandboxNameTaken(tenantId, single.name)).toBe(true)
      })
    )

    it.effect("moves a sandbox's status only from the state the caller saw, and lists every sandbox for the resume", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* store.insertTemplate(made)
        const id = randomUUID()
        yield* store.insertSandbox({ id, tenant_id: tenantId, name: unique("box"), template_id: made.id, pool_id: null, status: "provisioning", status_message: null, created_at: at(), updated_at: at() })
        expect(yield* store.setSandboxStatus(id, "ready", "stopped", null, at(1))).toBe(false)
        expect(yield* store.setSandboxStatus(id, "provisioning", "failed", "pull failed: manifest unknown", at(1))).toBe(true)
        expect(yield* store.sandboxById(tenantId, id)).toMatchObject({ status: "failed", status_message: "pull failed: manifest unknown", updated_at: at(1) })
        expect(yield* store.sandboxById(randomUUID(), id)).toBeUndefined()
        expect((yield* store.allSandboxes()).map((item) => item.id)).toContain(id)
      })
    )

    it.effect("pages a tenant's sandboxes in creation order, deep pages included, after writes", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { tenantId } = yield* organization
        const made = template(tenantId)
        yield* store.insertTemplate(made)
        const names = Array.from({ length: 5000 }, (_, index) => `p-${String(index).padStart(5, "0")}`)
        yield* store.transaction(
          Effect.forEach(names, (name) =>
            store.insertSandbox({ id: randomUUID(), tenant_id: tenantId, name, template_id: made.id, pool_id: null, status: "ready", status_message: null, created_at: at(), updated_at: at() })
          )
        )
        const page = (offset: number) => Effect.map(store.listSandboxes(tenantId, { limit: 3, offset }), (items) => items.map((item) => item.name))
        expect(yield* page(0)).toEqual(names.slice(0, 3))
        expect(yield* page(4500)).toEqual(names.slice(4500, 4503))
        yield* store.deleteSandbox((yield* store.sandboxByName(tenantId, names[10]!))!.id)
        expect(yield* page(4500)).toEqual(names.slice(4501, 4504))
        expect(yield* page(4999)).toEqual([])
      })
    )

    it.effect("keeps a volume name unique within the organization: tenants of one organization cannot share it, tenants of another can", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const keys = yield* KeyStore
        const { organizationId, tenantId } = yield* organization
        const sibling = randomUUID()
        yield* keys.ensureTenant(sibling, organizationId)
        const stranger = yield* organization
        const name = unique("data")
        yield* store.insertVolume(volume(tenantId, organizationId, 1n, name))
        const clash = yield* Effect.flip(store.insertVolume(volume(sibling, organizationId, 1n, name)))
        expect(clash._tag).toBe("SandboxConflict")
        expect(yield* store.volumeByName(sibling, name)).toBeUndefined()
        // A rename into a name the organization uses is refused the same way.
        const other = volume(sibling, organizationId, 1n)
        yield* store.insertVolume(other)
        expect((yield* Effect.flip(store.updateVolume(other, { ...other, name, updated_at: at(1) })))._tag).toBe("SandboxConflict")
        // Another organization's tenant may use it.
        const theirs = volume(stranger.tenantId, stranger.organizationId, 1n, name)
        yield* store.insertVolume(theirs)
        expect(yield* store.volumeByName(stranger.tenantId, name)).toEqual(theirs)
      })
    )

    it.effect("answers an empty page for any offset past the end, however large", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { organizationId, tenantId } = yield* organization
        yield* store.insertVolume(volume(tenantId, organizationId, 1n))
        for (const offset of [5_000, 2 ** 53 + 2, 9.2e18, 2 ** 63, 2 ** 64, 1e300]) {
          const page = { limit: 10, offset }
          expect(yield* store.listVolumes(tenantId, page)).toEqual([])
          expect(yield* store.listTemplates(tenantId, page)).toEqual([])
          expect(yield* store.listPools(tenantId, page)).toEqual([])
          expect(yield* store.listSandboxes(tenantId, page)).toEqual([])
        }
      })
    )

    it.effect("names the sandboxes that mount a volume, through any template", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { organizationId, tenantId } = yield* organization
        const [data, spare] = [volume(tenantId, organizationId, 1n), volume(tenantId, organizationId, 1n)]
        yield* store.insertVolume(data)
        yield* store.insertVolume(spare)
        const first = template(tenantId, [{ volume_id: data.id, mount_path: "/data" }])
        const second = template(tenantId, [{ volume_id: data.id, mount_path: "/mnt" }])
        yield* store.insertTemplate(first)
        yield* store.insertTemplate(second)
        expect(yield* store.volumesAttached([data.id, spare.id])).toEqual([])
        expect(yield* store.volumesAttached([])).toEqual([])
        const boxName = unique("box")
        const id = randomUUID()
        yield* store.insertSandbox({ id, tenant_id: tenantId, name: boxName, template_id: second.id, pool_id: null, status: "provisioning", status_message: null, created_at: at(), updated_at: at() })
        expect(yield* store.volumesAttached([data.id])).toEqual([{ volume_name: data.name, sandbox_name: boxName }])
        expect(yield* store.volumesAttached([spare.id])).toEqual([])
        yield* store.deleteSandbox(id)
        expect(yield* store.volumesAttached([data.id])).toEqual([])
      })
    )
    it.effect("warm claim: finds the ready boxes of a template's pools (this tenant's only), oldest first; a claim takes the box out of its pool once", () =>
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const { tenantId } = yield* organization
        const other = yield* organization
        const made = template(tenantId)
        const foreignTemplate = template(other.tenantId)
        yield* store.insertTemplate(made)
        yield* store.insertTemplate(foreignTemplate)
        const pool = { id: randomUUID(), tenant_id: tenantId, name: unique("pool"), template_id: made.id, replicas: 3, created_at: at(), updated_at: at() }
        yield* store.insertPool(pool)
        const box = (poolId: string | null, status: "provisioning" | "ready", owner = tenantId, templateId = made.id) => ({
          id: randomUUID(), tenant_id: owner, name: unique("m"), template_id: templateId, pool_id: poolId, status, status_message: null, created_at: at(), updated_at: at()
        })
        const [warming, first, second] = [box(pool.id, "provisioning"), box(pool.id, "ready"), box(pool.id, "ready")]
        const single = box(null, "ready")
        for (const item of [warming, first, second, single]) yield* store.insertSandbox(item)
        expect((yield* store.readyPoolSandboxes(tenantId, made.id, 4)).map((item) => item.id)).toEqual([first.id, second.id])
        expect((yield* store.readyPoolSandboxes(tenantId, made.id, 1)).map((item) => item.id)).toEqual([first.id])
        expect(yield* store.readyPoolSandboxes(other.tenantId, made.id, 4)).toEqual([])
        const [candidate] = yield* store.readyPoolSandboxes(tenantId, made.id, 1)
        const taken = unique("claimed")
        expect(yield* store.claimSandbox(candidate!, taken, at())).toBe(true)
        expect(yield* store.sandboxByName(tenantId, taken)).toMatchObject({ id: first.id, pool_id: null, pool_name: null, status: "ready" })
        // The same candidate again (a second, racing claim): refused, the box keeps its new name.
        expect(yield* store.claimSandbox(candidate!, unique("late"), at())).toBe(false)
        expect((yield* store.poolSandboxes(pool.id)).map((item) => item.id)).toEqual([warming.id, second.id])
        // A name in use is a conflict, and the box stays in its pool.
        const [next] = yield* store.readyPoolSandboxes(tenantId, made.id, 1)
        const refused = yield* Effect.flip(store.claimSandbox(next!, single.name, at()))
        expect(refused._tag).toBe("SandboxConflict")
        expect((yield* store.poolSandboxes(pool.id)).map((item) => item.id)).toEqual([warming.id, second.id])
      })
    )
  })
