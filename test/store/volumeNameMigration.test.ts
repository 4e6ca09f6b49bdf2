/**
 * Migration 220 makes volume names unique within the organization. A database that already has
 * one name in two tenants of an organization keeps the oldest volume's name and renames the
 * others (the template mounting one still mounts it: mounts point at ids).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { applyPragmas, migrate } from "../../server/store/sqlite/database.ts"
import { sqliteMigrations } from "../../server/store/sqlite/migrations.ts"

const dir = mkdtempSync(join(tmpdir(), "slipway-migration-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("migration 220_volume_names_per_organization", () => {
  it("renames all but the oldest of a name shared inside an organization, and then refuses a new clash", () => {
    const db = new Database(join(dir, "m.db"))
    try {
      applyPragmas(db)
      migrate(db, sqliteMigrations.filter((migration) => migration.id < "220"))
      const at = new Date().toISOString()
      db.exec(`
        INSERT INTO organizations (id, name, created_at) VALUES ('org-a', 'a', '${at}'), ('org-b', 'b', '${at}');
        INSERT INTO tenants (id, organization_id, name, created_at) VALUES ('t1', 'org-a', 't1', '${at}'), ('t2', 'org-a', 't2', '${at}'), ('t3', 'org-b', 't3', '${at}');
      `)
      const insert = db.prepare(
        "INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at) VALUES (?, ?, ?, 'data', 1, '1', 'standard', ?, ?)"
      )
      insert.run("aaaaaaaa-0000-4000-8000-000000000001", "t1", "org-a", at, at)
      insert.run("bbbbbbbb-0000-4000-8000-000000000002", "t2", "org-a", at, at)
      insert.run("cccccccc-0000-4000-8000-000000000003", "t3", "org-b", at, at)
      db.exec(`
        INSERT INTO sandbox_templates (id, tenant_id, name, image, cpu_millicores, cpu, memory_bytes, memory, created_at, updated_at)
          VALUES ('tpl', 't2', 'tpl', 'python:3.12', 500, '500m', 1, '1', '${at}', '${at}');
        INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES ('tpl', 0, 'bbbbbbbb-0000-4000-8000-000000000002', '/data');
      `)

      expect(migrate(db, sqliteMigrations)).toContain("220_volume_names_per_organization")
      const names = db.prepare("SELECT tenant_id, name FROM sandbox_volumes ORDER BY seq").all()
      expect(names).toEqual([
        { tenant_id: "t1", name: "data" },
        { tenant_id: "t2", name: "data-bbbbbbbb" },
        { tenant_id: "t3", name: "data" }
      ])
      expect(db.prepare("SELECT volume_id FROM sandbox_template_mounts WHERE template_id = 'tpl'").pluck().get()).toBe("bbbbbbbb-0000-4000-8000-000000000002")
      expect(() => insert.run("dddddddd-0000-4000-8000-000000000004", "t2", "org-a", at, at)).toThrow(/UNIQUE/)
    } finally {
      db.close()
    }
  })
})
