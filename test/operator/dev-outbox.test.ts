import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatOutbox, type Outbox } from "../../src/cli/mail-list.js";
import { printCreatedMerchant } from "../../src/cli/merchant-create.js";
import { parseConfig } from "../../src/config/config.js";
import { devOutboxKey } from "../../src/mail/index.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";

// Issue 35, item 4: no dead end in local mail. A merchant made with `merchant create` gets an owner
// who can reach the dashboard (a single-use link sets the first password, or --password-stdin),
// and the operator reads the whole development outbox: `stablegate mail list` and `/dev/mail` on
// this machine (never in production mode, never to another machine: it holds live sign-in links).

const systemClock = { now: () => Date.now() };
const JWT = "dev-outbox-test-jwt-secret-0123456789abcdef";
const KEY = devOutboxKey(JWT);

let svc: TestService;
beforeAll(async () => {
  // TRUST_PROXY=1: the X-Forwarded-For entry stands for a client on another machine.
  svc = await startTestService({ env: { TRUST_PROXY: "1", JWT_SECRET: JWT } });
});
afterAll(() => svc?.close());

const ctx = () => ({
  db: svc.database.db,
  clock: systemClock,
  chains: () => {
    throw new Error("no chains here");
  },
  addresses: () => Promise.reject(new Error("no addresses here")),
});

/** A GET with an explicit Host header (fetch does not let a caller set it). */
function rawGet(base: string, pathname: string, host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(base + pathname, { headers: { host } }, (res) => {
      let text = "";
      res.on("data", (c) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function signIn(email: string, password: string) {
  return call(svc.urls.sandbox, "/api/v1/auth/login", { json: { email, password } });
}

describe("merchant create gives the owner a way into the dashboard", () => {
  it("without a password: no sign-in works until the printed link sets one, once; the pairs act for the owner", async () => {
    const created = (await runOperatorCommand(ctx(), "merchant.create", {
      email: "linked@example.com",
      companyName: "Linked Ltd",
    })) as { ownerId: string; passwordToken: string; keys: { createdBy: string | null }[] } & Parameters<
      typeof printCreatedMerchant
    >[0];
    expect(created.passwordToken).toMatch(/^prt_/);
    expect(created.ownerId).toMatch(/^usr_/);
    expect(created.keys.map((k) => k.createdBy)).toEqual([created.ownerId, created.ownerId]);

    const printed = printCreatedMerchant(
      created,
      parseConfig({ PRODUCTION_BASE_URL: "http://localhost:8080" }),
    );
    expect(printed).toContain(`/reset-password#token=${created.passwordToken}`);
    expect(printed).toMatch(/within 72 hours/);

    // The unusable placeholder password is refused like any wrong one.
    expect((await signIn("linked@example.com", "")).status).toBe(400);
    expect((await signIn("linked@example.com", "x".repeat(20))).status).toBe(401);

    const set = await call(svc.urls.sandbox, "/api/v1/auth/password/reset", {
      json: { token: created.passwordToken, newPassword: "a long first passphrase 123" },
    });
    expect(set.status, set.text).toBe(200);
    const login = await signIn("linked@example.com", "a long first passphrase 123");
    expect(login.status, login.text).toBe(200);
    // Single use.
    const again = await call(svc.urls.sandbox, "/api/v1/auth/password/reset", {
      json: { token: created.passwordToken, newPassword: "an attacker passphrase 456" },
    });
    expect(again.status).toBe(400);
  });

  it("with a password: the owner signs in with it; a weak one is refused before anything is created", async () => {
    const weak = runOperatorCommand(ctx(), "merchant.create", {
      email: "weak@example.com",
      companyName: "Weak Ltd",
      password: "short",
    });
    await expect(weak).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    const none = await svc.database.db
      .selectFrom("merchants")
      .select("id")
      .where("email", "=", "weak@example.com")
      .execute();
    expect(none).toEqual([]);

    const created = (await runOperatorCommand(ctx(), "merchant.create", {
      email: "given@example.com",
      companyName: "Given Ltd",
      password: "a long given passphrase 789",
    })) as { passwordToken: string | null };
    expect(created.passwordToken).toBeNull();
    expect((await signIn("given@example.com", "a long given passphrase 789")).status).toBe(200);
  });
});

describe("the operator reads the whole development outbox", () => {
  it("mail list and /dev/mail show every recipient's mails, newest first, links clickable and escaped", async () => {
    await call(svc.urls.sandbox, "/api/v1/auth/password/forgot", { json: { email: "given@example.com" } });
    await svc.database.db
      .insertInto("mail_outbox")
      .values({
        id: "mail_hostile",
        recipient: "invitee@example.com",
        subject: "<script>alert(1)</script> invitation",
        body: 'Join: http://localhost:8081/accept-invite#token=abc"><img src=x onerror=alert(1)>',
        created_at: new Date(Date.now() + 1000),
      })
      .execute();

    // The reset mail is sent in the background after the answer: wait until the outbox holds it.
    const listed = await waitFor(async () => {
      const all = (await runOperatorCommand(ctx(), "mail.list", { limit: "10" })) as Outbox;
      const reset = (m: Outbox["mails"][number]) => m.to === "given@example.com" && /Reset/.test(m.subject);
      return all.mails.some(reset) ? all : undefined;
    }, 30_000);
    expect(listed.mails[0]?.to).toBe("invitee@example.com"); // newest first, any recipient
    const reset = listed.mails.find((m) => m.to === "given@example.com");
    expect(reset?.subject).toBe("Reset your stablegate password");
    const text = formatOutbox(listed, false);
    expect(text).toMatch(/^The local outbox \(SMTP_URL is unset/);
    expect(text).toContain("To:      given@example.com");
    const only = (await runOperatorCommand(ctx(), "mail.list", { to: "GIVEN@example.com" })) as Outbox;
    expect(only.mails.map((m) => m.to)).toEqual(only.mails.map(() => "given@example.com"));
    expect(only.mails.length).toBeGreaterThan(0);
    await expect(runOperatorCommand(ctx(), "mail.list", { limit: "lots" })).rejects.toMatchObject({
      code: "VALIDATION_ERROR",
    });

    const page = await call(svc.urls.sandbox, `/dev/mail?key=${KEY}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.text).toContain("Reset your stablegate password");
    expect(page.text).toContain("given@example.com");
    expect(page.text).toMatch(/<a href="http:\/\/[^"]+\/reset-password#token=prt_/);
    expect(page.text).not.toContain("<script>alert(1)</script>");
    expect(page.text).not.toContain("<img src=x");
    expect(page.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt; invitation");
    // Only this gateway's links are clickable: a mail's text may carry anyone's URL.
    expect(page.text).not.toMatch(/<a href="http:\/\/localhost:8081\/accept-invite/);
    expect(page.text).toContain("http://localhost:8081/accept-invite#token=abc&quot;&gt;");

    // The terminal view prints a mail's control characters as escapes (a company name is user input).
    const rigged = formatOutbox(
      {
        total: 1,
        mails: [
          {
            id: "m",
            to: "a@example.com",
            subject: "Join \u001b]0;pwned\u0007 Co",
            text: "x\u009by",
            createdAt: "t",
          },
        ],
      },
      false,
    );
    expect([...rigged].filter((ch) => ch === "\u001b" || ch === "\u0007" || ch === "\u009b")).toEqual([]);
    expect(rigged).toContain("Join \\u001b]0;pwned\\u0007 Co");
  });

  it("/dev/mail without the key, through a proxy or under another host name answers as an unknown path does", async () => {
    const unknown = await call(svc.urls.sandbox, "/dev/nothing-here");
    const same = (r: { status: number; body: any }) => {
      expect(r.status).toBe(404);
      expect({ ...r.body, error: { ...r.body.error, message: "", requestId: "" } }).toEqual({
        ...unknown.body,
        error: { ...unknown.body.error, message: "", requestId: "" },
      });
    };
    same(await call(svc.urls.sandbox, "/dev/mail"));
    same(await call(svc.urls.sandbox, "/dev/mail?key=wrong"));
    same(await call(svc.urls.sandbox, `/dev/mail?key=${KEY.slice(0, -1)}x`));
    same(await call(svc.urls.sandbox, "/dev/mail?key=a&key=b"));
    // A proxy in between (a tunnel relaying the internet from 127.0.0.1), whatever the header says.
    for (const header of [
      "x-forwarded-for",
      "x-real-ip",
      "forwarded",
      "via",
      "x-forwarded-host",
      "true-client-ip",
      "cf-connecting-ip",
    ])
      same(await call(svc.urls.sandbox, `/dev/mail?key=${KEY}`, { headers: { [header]: "127.0.0.1" } }));
    // A page that rebinds its own name to 127.0.0.1 sends its own Host.
    const rebound = await rawGet(svc.urls.sandbox, `/dev/mail?key=${KEY}`, "attacker.example:80");
    same({ status: rebound.status, body: JSON.parse(rebound.text) });
    const otherPort = await rawGet(svc.urls.sandbox, `/dev/mail?key=${KEY}`, "localhost:1");
    same({ status: otherPort.status, body: JSON.parse(otherPort.text) });
    const ok = await rawGet(
      svc.urls.sandbox,
      `/dev/mail?key=${KEY}`,
      `localhost:${new URL(svc.urls.sandbox).port}`,
    );
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/^<!doctype html>/);
  });

  it("/dev/mail answers 404 to a client on another machine, key or not", async () => {
    const far = await call(svc.urls.sandbox, `/dev/mail?key=${KEY}`, {
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    expect(far.status).toBe(404);
    expect(far.body.error.code).toBe("NOT_FOUND");
    expect(far.text).not.toContain("prt_");
  });

  it("/dev/mail does not exist in production mode", async () => {
    const prod = await startTestService({
      env: {
        NODE_ENV: "production",
        SECRET_ENCRYPTION_KEY: "a".repeat(64),
        JWT_SECRET: "j".repeat(40),
        INTERNAL_SHARED_SECRET: "i".repeat(40),
        METRICS_TOKEN: "m".repeat(32),
        MASTER_MNEMONIC:
          "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
      },
    });
    try {
      const r = await call(prod.urls.sandbox, `/dev/mail?key=${devOutboxKey("j".repeat(40))}`);
      expect(r.status).toBe(404);
    } finally {
      await prod.close();
    }
  });
});
