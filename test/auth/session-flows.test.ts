import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AuthKit,
  createAuthKit,
  currentUser,
  login,
  logout,
  refreshSession,
  register,
} from "../../src/auth/index.js";
import { parseConfig } from "../../src/config/config.js";
import type { Database } from "../../src/db/database.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { openTestDatabase } from "../support/db.js";

// The auth use cases the routes call, without HTTP: the kit is built once from its parts
// (createAuthKit), sign-in returns the profile the routes present, refresh rotates and detects
// reuse, logout ends the sessions of both tokens.
const PASSWORD = "correct horse battery staple";
let database: Database;
let kit: AuthKit;

beforeAll(async () => {
  database = await openTestDatabase();
  kit = createAuthKit({
    config: parseConfig({}),
    db: database.db,
    clock: new ManualClock(Date.now()),
    logger: createLogger("silent"),
    secrets: { JWT_SECRET: "j".repeat(64), SECRET_ENCRYPTION_KEY: "ab".repeat(32) },
  });
});
afterAll(async () => {
  await kit?.mailer.close();
  await database?.close();
});

describe("auth use cases", () => {
  it("register and login return the profile read back, and currentUser the same", async () => {
    const email = `flows-${Date.now()}@example.com`;
    const reg = await register(kit, { email, password: PASSWORD, companyName: "  Flows Ltd " });
    expect(reg.profile.user.id).toBe(reg.user.id);
    expect(reg.profile.companyName).toBe("Flows Ltd");
    expect(reg.merchant.keys).toHaveLength(2);
    const signedIn = await login(kit, { email, password: PASSWORD }, "203.0.113.7");
    expect(signedIn.profile).toEqual(await currentUser(kit, reg.user.id));
    await expect(currentUser(kit, "usr_missing")).rejects.toMatchObject({ code: "INVALID_AUTH" });
  });

  it("refresh rotates once; the old token again revokes the session (reuse); junk is invalid", async () => {
    const email = `refresh-${Date.now()}@example.com`;
    const reg = await register(kit, { email, password: PASSWORD, companyName: "R" }, "bearer");
    const first = await refreshSession(kit, reg.session.refreshToken);
    if (first.kind !== "rotated") throw new Error(`expected rotated, got ${first.kind}`);
    expect(first.tokenDelivery).toBe("bearer");
    expect((await kit.tokens.verify(first.accessToken))?.sessionId).toBe(reg.session.sessionId);
    const reuse = await refreshSession(kit, reg.session.refreshToken);
    expect(reuse).toEqual({ kind: "reuse", sessionId: reg.session.sessionId });
    expect((await refreshSession(kit, first.refreshToken)).kind).toBe("invalid");
    expect((await refreshSession(kit, "not a token")).kind).toBe("invalid");
  });

  it("logout ends the session of the refresh token and the one of the access token", async () => {
    const email = `logout-${Date.now()}@example.com`;
    await register(kit, { email, password: PASSWORD, companyName: "L" });
    const a = await login(kit, { email, password: PASSWORD }, "203.0.113.8");
    const b = await login(kit, { email, password: PASSWORD }, "203.0.113.8");
    await logout(kit, { refreshToken: a.session.refreshToken, accessToken: b.accessToken });
    expect((await refreshSession(kit, a.session.refreshToken)).kind).toBe("invalid");
    expect((await refreshSession(kit, b.session.refreshToken)).kind).toBe("invalid");
    // Neither token: nothing to end, no error.
    await logout(kit, { refreshToken: undefined, accessToken: undefined });
  });
});
