import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { DATABASE_ROLES, GROUP_ROLES, scramVerifier } from "../../src/db/roles.js";
import { creditDeposit } from "../../src/ledger/index.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { applyDatabaseRoles, type DatabaseRoleLogin } from "../../src/operator/database-roles.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { onPostgres, openTestDatabase, TEST_DATABASE_URL } from "../support/db.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { runToEnd } from "../support/processes.js";

// Issue #34 finding 1, the database half. In the production split layout every process connected as
// the one database user that owns every table, so one statement made with the api's DATABASE_URL —
// `INSERT INTO outgoing_transfers (… 'withdrawal', from_index 0, <attacker>, 999000000, 'queued')` —
// queued a transfer from the hot wallet with no withdrawal, no hold and no ledger entry; and the
// audit log's append-only trigger could be switched off by that same user. Now each process role
// connects as its own login role (`stablegate db roles`), a member of the group role migration 0025
// granted least privilege: the api cannot write the sending tables, the ledger or the audit log's
// past, owns nothing (so it cannot disable a trigger or drop a table), and still serves its flows.

const ATTACKER = "0x4000000000000000000000000000000000000004";
const ERC = "USDT-ERC20";

/** The SQLSTATE of what `fn` threw (it must throw). */
async function sqlState(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    return String((err as { code?: unknown }).code ?? (err as Error).message);
  }
  return "no error";
}

const PERMISSION_DENIED = "42501";

describe("the database roles' grants (both drivers: the migration makes them on PGlite too, unused there)", () => {
  let database: Database;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(() => database?.close());

  const can = (role: string, table: string, privilege: string) =>
    hasPrivilege(database, role, table, privilege);

  it("no app role may write the sending tables or the ledger; the api and the signer not even their queue", async () => {
    for (const table of [
      "outgoing_transfers",
      "outgoing_transfer_attempts",
      "sender_nonces",
      "sending_wallets",
    ]) {
      for (const privilege of ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]) {
        expect(await can(GROUP_ROLES.api, table, privilege), `api ${privilege} ${table}`).toBe(false);
        expect(await can(GROUP_ROLES.signer, table, privilege), `signer ${privilege} ${table}`).toBe(false);
      }
      expect(await can(GROUP_ROLES.signer, table, "SELECT"), `signer reads ${table}`).toBe(true);
    }
    for (const table of ["ledger_accounts", "ledger_postings", "ledger_entries"]) {
      for (const role of Object.values(GROUP_ROLES)) {
        for (const privilege of ["INSERT", "UPDATE", "DELETE", "TRUNCATE"])
          expect(await can(role, table, privilege), `${role} ${privilege} ${table}`).toBe(false);
      }
    }
    for (const privilege of ["UPDATE", "TRUNCATE"])
      for (const role of Object.values(GROUP_ROLES))
        expect(await can(role, "audit_log", privilege), `${role} ${privilege} audit_log`).toBe(false);
    expect(await can(GROUP_ROLES.api, "audit_log", "DELETE")).toBe(false);
    // What the chain watcher records is credited: the api must not write it.
    for (const table of ["chain_observations", "chain_blocks", "chain_cursors"])
      expect(await can(GROUP_ROLES.api, table, "INSERT"), table).toBe(false);
    // The worker queues the sweeps, gas top-ups and cold forwards itself.
    expect(await can(GROUP_ROLES.worker, "outgoing_transfers", "INSERT")).toBe(true);
  });

  it("every table is granted to the roles (a migration that adds one grants it in the same file)", async () => {
    const { rows } = await sql<{ table: string }>`
      select tablename as table from pg_tables where schemaname = 'public' order by 1`.execute(database.db);
    expect(rows.length).toBeGreaterThan(30);
    const ungranted: string[] = [];
    for (const { table } of rows)
      if (!(await can(GROUP_ROLES.worker, table, "SELECT")) || !(await can(GROUP_ROLES.api, table, "SELECT")))
        ungranted.push(table);
    expect(ungranted).toEqual([]);
    // No app role owns anything: only an owner may ALTER (… DISABLE TRIGGER), DROP or TRUNCATE.
    const groups = Object.values(GROUP_ROLES);
    const owned = await sql<{ name: string }>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and pg_get_userbyid(c.relowner) = any (${groups}::text[])
      union all
      select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'public' and pg_get_userbyid(p.proowner) = any (${groups}::text[])`.execute(
      database.db,
    );
    expect(owned.rows).toEqual([]);
  });
});

async function hasPrivilege(
  database: Database,
  role: string,
  table: string,
  privilege: string,
): Promise<boolean> {
  const r = await sql<{
    ok: boolean;
  }>`select has_table_privilege(${role}, ${`public.${table}`}, ${privilege}) as ok`.execute(database.db);
  return r.rows[0]?.ok === true;
}

describe.skipIf(!onPostgres)(
  "the api's own database role (PostgreSQL only: PGlite is one embedded user, there are no logins to tell apart)",
  () => {
    let owner: Database & { url: string | undefined };
    let logins: DatabaseRoleLogin[];
    const extraRoles: string[] = [];
    const open: Database[] = [];
    /** A raw connection as `role` (pg errors carry the SQLSTATE). */
    let as: Record<(typeof DATABASE_ROLES)[number], pg.Client>;
    const url = (role: string) => logins.find((l) => l.role === role)?.url as string;

    beforeAll(async () => {
      owner = await openTestDatabase();
      const name = new URL(owner.url as string).pathname.slice(1);
      // Roles are cluster-wide and test files run in parallel: names of this test database.
      logins = await applyDatabaseRoles({ url: owner.url, prefix: `${name}_` });
      as = Object.fromEntries(
        await Promise.all(
          DATABASE_ROLES.map(async (role) => {
            const c = new pg.Client({ connectionString: url(role) });
            await c.connect();
            return [role, c] as const;
          }),
        ),
      ) as typeof as;
    });

    afterAll(async () => {
      await Promise.all(Object.values(as ?? {}).map((c) => c.end()));
      await Promise.all(open.map((d) => d.close()));
      await owner?.close();
      if (logins) {
        const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await admin.connect();
        for (const r of [...logins.map((l) => l.user), ...extraRoles])
          await admin.query(`drop role if exists "${r}"`);
        await admin.end();
      }
    });

    it("the command made one login per process role, each in its group only, with its own password", async () => {
      expect(logins.map((l) => [l.role, l.created, l.passwordSet])).toEqual([
        ["api", true, true],
        ["worker", true, true],
        ["signer", true, true],
      ]);
      for (const l of logins) {
        const r = await as[l.role].query("select current_user as u");
        expect(r.rows[0].u).toBe(l.user);
        expect(new URL(l.url).password).not.toBe("");
      }
      // Idempotent: a second run changes nothing and keeps the passwords.
      const again = await applyDatabaseRoles({
        url: owner.url,
        prefix: `${new URL(owner.url as string).pathname.slice(1)}_`,
      });
      expect(again.map((l) => [l.created, l.passwordSet, new URL(l.url).password])).toEqual([
        [false, false, ""],
        [false, false, ""],
        [false, false, ""],
      ]);
    });

    it("`stablegate db roles --print`: SQL a DBA runs as it is, holding no password (the URLs go to stderr)", {
      timeout: 120_000,
    }, async () => {
      const name = new URL(owner.url as string).pathname.slice(1);
      const printed = await runToEnd(
        "db roles --print",
        ["db", "roles", "--print", "--prefix", `${name}_p_`],
        {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "/tmp",
          DATA_DIR: `/tmp/${name}-cli`,
          DATABASE_URL: owner.url as string,
        },
      );
      expect(printed.code, printed.stderr).toBe(0);
      const urls = [...printed.stderr.matchAll(/^(api|worker|signer): DATABASE_URL=(\S+)$/gm)].map(
        (m) => m[2] as string,
      );
      expect(urls).toHaveLength(3);
      for (const u of urls) expect(printed.stdout).not.toContain(decodeURIComponent(new URL(u).password));
      const admin = new pg.Client({ connectionString: owner.url as string });
      await admin.connect();
      try {
        await admin.query(printed.stdout);
        await admin.query(printed.stdout); // idempotent
      } finally {
        await admin.end();
      }
      const api = new pg.Client({ connectionString: urls[0] });
      await api.connect();
      try {
        expect((await api.query("select current_user as u")).rows[0].u).toBe(`${name}_p_api_login`);
        expect(await sqlState(() => api.query("delete from outgoing_transfers"))).toBe(PERMISSION_DENIED);
      } finally {
        await api.end();
      }
      extraRoles.push(...["api", "worker", "signer"].map((r) => `${name}_p_${r}_login`));
    });

    it("the verifier the command stores is the one PostgreSQL computes for that password (this cluster trusts local logins, so it is checked here)", async () => {
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      const probe = `${new URL(owner.url as string).pathname.slice(1)}_scram_probe`;
      try {
        await admin.query("set password_encryption = 'scram-sha-256'");
        await admin.query(`create role "${probe}" nologin password 'pencil ü'`);
        const stored = (await admin.query("select rolpassword from pg_authid where rolname = $1", [probe]))
          .rows[0].rolpassword as string;
        const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(stored);
        if (!m) throw new Error(`not a SCRAM verifier: ${stored.slice(0, 14)}`);
        expect(scramVerifier("pencil ü", Buffer.from(m[2] as string, "base64"), Number(m[1]))).toBe(stored);
        // And the login roles hold SCRAM verifiers (never a password in clear or md5).
        const logged = await admin.query("select rolpassword from pg_authid where rolname = any ($1)", [
          logins.map((l) => l.user),
        ]);
        expect(logged.rows).toHaveLength(3);
        for (const r of logged.rows) expect(r.rolpassword).toMatch(/^SCRAM-SHA-256\$4096:/);
      } finally {
        await admin.query(`drop role if exists "${probe}"`);
        await admin.end();
      }
    });

    it("as the api: the reviewers' INSERT INTO outgoing_transfers, the ledger, the audit log's trigger and DROP are refused", async () => {
      const api = as.api;
      const refused = async (statement: string, params: unknown[] = []) =>
        expect(await sqlState(() => api.query(statement, params)), statement).toBe(PERMISSION_DENIED);
      // The finding's statement, as written.
      await refused(
        `insert into outgoing_transfers (intent_id, kind, network, environment, asset, from_index, to_address, amount, status)
         values ('tx_forged', 'withdrawal', 'USDT-ERC20', 'production', 'token', 0, $1, 999000000, 'queued')`,
        [ATTACKER.toLowerCase()],
      );
      await refused("update outgoing_transfers set to_address = $1", [ATTACKER]);
      await refused(
        "insert into sender_nonces (network, environment, address, next_nonce) values ('USDT-ERC20', 'production', $1, 0)",
        [ATTACKER],
      );
      // The ledger: no direct write, and ledger_post() makes only the api's own kinds of posting.
      await refused(
        "insert into ledger_postings (business_key, kind, environment) values ('deposit:x', 'deposit', 'production')",
      );
      await refused("update ledger_accounts set balance = balance + 1000000000");
      await refused("delete from ledger_entries");
      await refused(
        `select * from ledger_post('deposit:tx_fake', 'deposit', 'production', 'USDT-ERC20', 'mer_x', 'tx_fake',
           array['chain_incoming', 'available'], array[-999000000, 999000000]::numeric[])`,
      );
      await refused(
        `select * from ledger_post_unchecked('deposit:tx_fake', 'deposit', 'production', 'USDT-ERC20', 'mer_x', 'tx_fake',
           array['chain_incoming', 'available'], array[-999000000, 999000000]::numeric[])`,
      );
      // An intent through the function needs a processing withdrawal with its hold: none.
      await refused(
        "select request_transfer('tx_forged', 'withdrawal', 'USDT-ERC20', 'production', 'token', 0, $1, 999000000, null)",
        [ATTACKER.toLowerCase()],
      );
      // The audit log: append-only, and its trigger out of reach (only the owner may alter a table).
      await refused("alter table audit_log disable trigger audit_log_append_only");
      await refused("alter table audit_log disable trigger all");
      await refused("update audit_log set details = '{}'");
      await refused("delete from audit_log");
      await refused("alter table ledger_entries disable trigger ledger_entries_immutable");
      await refused("drop table outgoing_transfers");
      await refused("create table public.shadow (x int)");
      await refused(
        "insert into chain_observations (network, environment) values ('USDT-ERC20', 'production')",
      );
      // Nothing was queued.
      const queued = await owner.db.selectFrom("outgoing_transfers").select("intent_id").execute();
      expect(queued).toEqual([]);
    });

    it("as the api: a forged processing row gets no intent, a processing row is not its to change, a hold not its to release", async () => {
      const api = as.api;
      const merchant = await owner.db
        .insertInto("merchants")
        .values({ id: "mer_forge", email: "forge@example.test", company_name: "Forge" })
        .returning("id")
        .executeTakeFirstOrThrow();
      await owner.db.transaction().execute(async (trx) => {
        await insertTransaction(trx, {
          id: "dep_forge",
          merchantId: merchant.id,
          environment: "production",
          type: "deposit",
          status: "confirmed",
          currencyType: ERC,
          amount: 100_000_000n,
          fee: 0n,
        });
        await creditDeposit(
          trx,
          {
            merchantId: merchant.id,
            environment: "production",
            currencyType: ERC,
            transactionId: "dep_forge",
          },
          100_000_000n,
          0n,
        );
      });
      // The api may record a withdrawal (it does so for every request)…
      await api.query(
        `insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount, wallet_address)
         values ('tx_forge', $1, 'production', 'withdrawal', 'processing', 'USDT-ERC20', 999000000, 0, 999000000, $2)`,
        [merchant.id, ATTACKER.toLowerCase()],
      );
      // …but without its hold (the merchant has 100 USDT) no intent, and the hold needs the balance.
      expect(
        await sqlState(() =>
          api.query(
            "select request_transfer('tx_forge', 'withdrawal', 'USDT-ERC20', 'production', 'token', 0, $1, 999000000, null)",
            [ATTACKER.toLowerCase()],
          ),
        ),
      ).toBe(PERMISSION_DENIED);
      const hold = await api.query(
        `select r_status from ledger_post('hold:tx_forge', 'hold', 'production', 'USDT-ERC20', $1, 'tx_forge',
           array['available', 'held'], array[-999000000, 999000000]::numeric[])`,
        [merchant.id],
      );
      expect(hold.rows[0].r_status).toBe("insufficient_balance");
      // A completed deposit cannot be made, a confirmed one not changed or deleted.
      for (const statement of [
        `insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount)
         values ('dep_fake', '${merchant.id}', 'production', 'deposit', 'confirmed', 'USDT-ERC20', 5, 0, 5)`,
        "update transactions set amount = 999000000, net_amount = 999000000 where id = 'dep_forge'",
        "update transactions set status = 'rejected' where id = 'tx_forge'",
        "delete from transactions where id = 'tx_forge'",
      ])
        expect(await sqlState(() => api.query(statement)), statement).toBe(PERMISSION_DENIED);
      // A release takes only a rejected withdrawal's own hold back (never another's held funds).
      expect(
        await sqlState(() =>
          api.query(
            `select * from ledger_post('hold-close:tx_forge', 'release', 'production', 'USDT-ERC20', $1, 'tx_forge',
               array['held', 'available'], array[-999000000, 999000000]::numeric[])`,
            [merchant.id],
          ),
        ),
      ).toBe(PERMISSION_DENIED);
      expect(await owner.db.selectFrom("outgoing_transfers").select("intent_id").execute()).toEqual([]);
    });

    it("the worker queues its own transfers; the signer reads and writes nothing it need not", async () => {
      await as.worker.query(
        `select request_transfer('sweep_w', 'sweep', 'USDT-ERC20', 'sandbox', 'token', 100, $1, 5, null)`,
        [ATTACKER.toLowerCase()],
      );
      expect(
        (await owner.db.selectFrom("outgoing_transfers").select("intent_id").execute()).map(
          (r) => r.intent_id,
        ),
      ).toEqual(["sweep_w"]);
      const signer = as.signer;
      expect((await signer.query("select count(*)::int as n from outgoing_transfers")).rows[0].n).toBe(1);
      for (const statement of [
        "update outgoing_transfers set amount = 1",
        "delete from outgoing_transfers",
        "insert into transactions (id) values ('x')",
        "select password_hash from dashboard_users",
        "select * from api_keys",
        `select * from ledger_post('hold:x', 'hold', 'production', 'USDT-ERC20', 'm', 'x', array['available', 'held'], array[-1, 1]::numeric[])`,
      ])
        expect(await sqlState(() => signer.query(statement)), statement).toBe(PERMISSION_DENIED);
    });

    it("the api's flows under its role: register, checkout, auto-withdraw, approve, reject — the books exact", {
      timeout: 60_000,
    }, async () => {
      const apiDb = await openDatabase({ kind: "postgres", url: url("api"), poolSize: 3 });
      open.push(apiDb);
      const workerDb = await openDatabase({ kind: "postgres", url: url("worker"), poolSize: 2 });
      open.push(workerDb);
      let svc: TestService | undefined;
      try {
        svc = await startTestService({ role: "api", database: apiDb, env: { RATE_LIMIT_ENABLED: "false" } });
        const base = svc.urls.sandbox;
        const reg = await call(base, "/api/v1/auth/register", {
          json: { email: "roles@example.com", password: "a long passphrase 123", companyName: "Roles Ltd" },
          headers: { "x-token-delivery": "bearer" },
        });
        expect(reg.status, reg.text).toBe(201);
        const pair = (
          reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]
        ).find((k) => k.environment === "sandbox");
        if (!pair) throw new Error("no sandbox key pair");
        const keys = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
        const checkout = await call(base, "/checkout/session", {
          headers: keys,
          json: { amount: 25, currencyType: ERC },
        });
        expect(checkout.status, checkout.text).toBe(201);

        // The worker credits a deposit (its role posts deposits; the balance is raised at commit).
        const { merchant_id: mid } = await owner.db
          .selectFrom("dashboard_users")
          .select("merchant_id")
          .where("email", "=", "roles@example.com")
          .executeTakeFirstOrThrow();
        await workerDb.db.transaction().execute(async (trx) => {
          await insertTransaction(trx, {
            id: "dep_roles",
            merchantId: mid as string,
            environment: "sandbox",
            type: "deposit",
            status: "confirmed",
            currencyType: ERC,
            amount: 5_000_000_000n,
            fee: 0n,
          });
          await creditDeposit(
            trx,
            {
              merchantId: mid as string,
              environment: "sandbox",
              currencyType: ERC,
              transactionId: "dep_roles",
            },
            5_000_000_000n,
            0n,
          );
        });

        const withdraw = (amount: number) =>
          call(base, "/api/v1/public/withdrawal-requests", {
            headers: keys,
            json: { amount, currencyType: ERC, walletAddress: ATTACKER },
          });
        // Auto-withdraw (under the default threshold): the intent is queued inside the request.
        const auto = await withdraw(50);
        expect(auto.status, auto.text).toBe(201);
        expect(auto.body.data.status).toBe("processing");
        // Above the threshold: pending, then approved (the intent queued) or rejected (the hold released).
        const big = await withdraw(2000);
        expect(big.status, big.text).toBe(201);
        expect(big.body.data.status).toBe("pending");
        const approved = await call(base, `/api/v1/public/withdrawal-requests/${big.body.data.id}/approve`, {
          headers: keys,
          json: {},
        });
        expect(approved.status, approved.text).toBe(200);
        expect(approved.body.data.status).toBe("processing");
        const other = await withdraw(1500);
        expect(other.body.data.status, other.text).toBe("pending");
        const rejected = await call(base, `/api/v1/public/withdrawal-requests/${other.body.data.id}/reject`, {
          headers: keys,
          json: { reason: "not today" },
        });
        expect(rejected.status, rejected.text).toBe(200);
        expect(rejected.body.data.status).toBe("rejected");

        const intents = await owner.db
          .selectFrom("outgoing_transfers")
          .select(["intent_id", "kind", "to_address", "amount", "from_index"])
          .where("kind", "=", "withdrawal")
          .orderBy("created_at")
          .execute();
        expect(intents.map((i) => i.intent_id).sort()).toEqual([auto.body.data.id, big.body.data.id].sort());
        for (const i of intents) {
          const t = i.intent_id === auto.body.data.id ? auto.body.data : approved.body.data;
          expect(i.to_address).toBe(ATTACKER.toLowerCase());
          expect(BigInt(i.amount)).toBe(BigInt(Math.round(t.netAmount * 1_000_000)));
          expect(i.from_index).toBe(0);
        }
        const balance = await call(base, "/api/v1/public/balance", { headers: keys });
        const line = (balance.body.data as { currencyType: string; available: number; held: number }[]).find(
          (b) => b.currencyType === ERC,
        );
        expect(line).toMatchObject({ available: 5000 - 50 - 2000, held: 2050 });
        const report = await verifyLedger(owner.db);
        expect(report.ok, JSON.stringify(report.problems)).toBe(true);
      } finally {
        await svc?.close();
      }
    });
  },
);
