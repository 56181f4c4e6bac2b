import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import {
  ApiKeyLookups,
  type CreatedMerchant,
  createApiKey,
  createMerchantWithKeys,
  findOwnApiKey,
  listApiKeys,
  revokeOwnApiKey,
  rotateApiKey,
} from "../../src/merchants/index.js";
import { openTestDatabase } from "../support/db.js";

// Key management of merchants/api-keys.ts, below the routes: the list is one paginate() page of
// the merchant's environment, rotation and revocation are one-way, and a key of another merchant
// is not found.
let database: Database;
let alice: CreatedMerchant;
let bob: CreatedMerchant;

beforeAll(async () => {
  database = await openTestDatabase();
  const stamp = Date.now();
  alice = await createMerchantWithKeys(database.db, {
    email: `keys-a-${stamp}@example.com`,
    companyName: "A",
  });
  bob = await createMerchantWithKeys(database.db, { email: `keys-b-${stamp}@example.com`, companyName: "B" });
});
afterAll(async () => {
  await database?.close();
});

describe("merchant API keys", () => {
  it("lists the environment's pairs newest first, a page at a time, with the total", async () => {
    const db = database.db;
    const created = [];
    for (let i = 0; i < 3; i++) created.push(await createApiKey(db, alice.id, "sandbox", null));
    const all = await listApiKeys(db, alice.id, "sandbox", { limit: 100, offset: 0 });
    expect(all.total).toBe(4); // the registration pair and three more
    expect(all.rows.every((r) => r.environment === "sandbox" && r.merchant_id === alice.id)).toBe(true);
    const times = all.rows.map((r) => new Date(r.created_at).getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const first = await listApiKeys(db, alice.id, "sandbox", { limit: 2, offset: 0 });
    const second = await listApiKeys(db, alice.id, "sandbox", { limit: 2, offset: 2 });
    expect(first.total).toBe(4);
    expect(second.total).toBe(4);
    expect([...first.rows, ...second.rows].map((r) => r.id)).toEqual(all.rows.map((r) => r.id));
    expect((await listApiKeys(db, alice.id, "production", { limit: 10, offset: 0 })).total).toBe(1);
    for (const pair of created) expect(all.rows.some((r) => r.id === pair.id)).toBe(true);
  });

  it("rotates once: the new pair works, the old one is revoked as rotated and cannot rotate again", async () => {
    const db = database.db;
    const old = alice.keys.find((k) => k.environment === "production");
    if (!old) throw new Error("no production pair");
    const pair = await rotateApiKey(db, alice.id, old.id, null);
    expect(pair.environment).toBe("production");
    const lookups = new ApiKeyLookups(db);
    expect((await lookups.find(pair.apiKey))?.status).toBe("active");
    const before = await lookups.find(old.apiKey);
    expect(before?.status).toBe("revoked");
    expect(before?.revokedReason).toBe("rotated");
    expect((await findOwnApiKey(db, alice.id, old.id)).replaced_by).toBe(pair.id);
    await expect(rotateApiKey(db, alice.id, old.id, null)).rejects.toMatchObject({ code: "INVALID_STATE" });
    await expect(revokeOwnApiKey(db, alice.id, old.id)).rejects.toMatchObject({ code: "INVALID_STATE" });
  });

  it("revokes a pair of its own merchant only", async () => {
    const db = database.db;
    const pair = bob.keys[0];
    if (!pair) throw new Error("no pair");
    await expect(revokeOwnApiKey(db, alice.id, pair.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(findOwnApiKey(db, alice.id, pair.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    const revoked = await revokeOwnApiKey(db, bob.id, pair.id);
    expect(revoked.status).toBe("revoked");
    expect(revoked.revoked_reason).toBe("revoked");
  });
});
