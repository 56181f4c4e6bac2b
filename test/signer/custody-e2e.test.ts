import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import pg from "pg";
import { getAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { formatAccountXpubs, parseAccountXpubs } from "../../src/config/xpubs.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { accountXpubsOf } from "../../src/wallet/account-keys.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  ANVIL_DEPLOYER_KEY,
  type AnvilNode,
  deployTestUsdt,
  keepMining,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
  transferTestUsdt,
} from "../support/chain/anvil.js";
import { createEmptyPostgresDatabase, TEST_DATABASE_URL, TEST_REDIS_URL } from "../support/db.js";
import { call } from "../support/harness.js";
import { freePort, RoleProcess, runToEnd } from "../support/processes.js";
import { waitFor } from "../webhooks/support.js";

// Issue 25, key custody, end to end as an operator deploys it (docs/decisions/custody-and-faults.md#key-custody): the mnemonic lives on
// the signer host only. `stablegate signer export-xpubs` run there prints MASTER_XPUBS=…; the api
// and worker hosts get that line and nothing else — no mnemonic, and the api not even
// INTERNAL_SHARED_SECRET. Every process is a real OS process in production mode on one
// PostgreSQL, and the PRODUCTION ERC20 chain is anvil with a test token: a deposit to an address
// the api derived from the xpubs is detected by the worker and credited, and a withdrawal from the
// hot wallet (also derived from the xpubs) is signed by the separate signer process, broadcast and
// confirmed on anvil. Then the refusals: the mnemonic given to api or worker, or another
// mnemonic's xpubs on a worker, stop start-up with exit 2 and a message saying why.
//
// Each process connects as its own database role (issue #34 finding 1, README.md#production-database-roles): after
// `migrate`, `stablegate db roles` (run with the owner's DATABASE_URL, as `migrate` and the operator
// commands keep) prints one DATABASE_URL per process role; the api's cannot write the sending tables.
//
// PostgreSQL only: the signer role needs DATABASE_URL (its policy reads the recorded transfers),
// and api and worker refuse the embedded database (it serves one process).

const ERC = "USDT-ERC20";
const CONFIRMATIONS = 2;
// A deposit fee of 1 % (withdrawals keep the default 5 USDT on ERC20): the credit is checked net.
const FEE_SCHEDULE = JSON.stringify({ [ERC]: { deposit: { fixed: "0", percent: "1" } } });
// A seed of this run only: anvil's well-known one would make the production hot wallet anvil's
// funded deployer account, and the test's own transactions would race the worker's nonces.
const MNEMONIC = generateMnemonic(wordlist);
const OTHER_MNEMONIC = generateMnemonic(wordlist);
const INTERNAL_SHARED_SECRET = "i".repeat(48);
const RECIPIENT = getAddress("0x4000000000000000000000000000000000000004");
const DEPOSIT = 200; // USDT
const WITHDRAWAL = 50; // USDT; under the default auto-approve threshold (1,000): executed at once
/** The signer's cap per hour (USDT): one withdrawal's net amount fits, two do not. */
const OUTFLOW_CAP_PER_HOUR = 60;
/** Where the forged intent of step 5 would send the coins. */
const ATTACKER = getAddress("0x5000000000000000000000000000000000000005");

// Every process starts `tsx` (TypeScript compiled at start-up): several seconds each on a busy
// 2-core machine, so starts run in parallel wherever the order allows.
const START_TIMEOUT = 120_000;

describe.skipIf(!TEST_DATABASE_URL)(
  "key custody end to end: api and worker on xpubs, a separate signer, anvil",
  () => {
    let root: string;
    let anvil: AnvilNode;
    let token: Hex;
    let database: { url: string; drop(): Promise<void> };
    let db: Database;
    let signerPort: number;
    let xpubsLine: string;
    const processes: RoleProcess[] = [];
    let signer: RoleProcess;
    let api: RoleProcess;
    let worker: RoleProcess;
    let production: string; // the api's production listener
    let keys: Record<string, string>;
    /** The DATABASE_URL of each process role (`stablegate db roles`); the owner's until then. */
    const roleUrls: Record<string, string> = {};
    const urlOf = (role: string) => roleUrls[role] ?? database.url;

    /** Production mode, the shared database, Redis and anvil as the production ERC20 chain. */
    function baseEnv(name: string): Record<string, string> {
      return {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        NODE_ENV: "production",
        LOG_LEVEL: "info",
        HOST: "127.0.0.1",
        PORT: "0",
        SANDBOX_PORT: "0",
        PRODUCTION_BASE_URL: "https://api.custody.stablegate.test",
        SANDBOX_BASE_URL: "https://sandbox.custody.stablegate.test",
        DATA_DIR: path.join(root, name),
        DATABASE_URL: urlOf(name),
        DATABASE_POOL_SIZE: "3",
        ...(TEST_REDIS_URL
          ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `sg-custody-${process.pid}-${Date.now()}:` }
          : {}),
        FEE_SCHEDULE,
        ERC20_RPC_URL: anvil.rpcUrl,
        USDT_ERC20_CONTRACT: token,
        CONFIRMATIONS_ERC20: String(CONFIRMATIONS),
        // No sweep of the deposit in this test (its own flow, tested elsewhere): only the withdrawal
        // is asked of the signer.
        SWEEP_THRESHOLD_ERC20: "1000000",
      };
    }
    /** What the service roles (api, worker, operator commands) hold and the signer host does not. */
    const SERVICE_SECRETS = {
      SECRET_ENCRYPTION_KEY: "e".repeat(64),
      JWT_SECRET: "j".repeat(40),
      METRICS_TOKEN: "m".repeat(32),
    };
    const signerEnv = () => ({
      ...baseEnv("signer"),
      MASTER_MNEMONIC: MNEMONIC,
      INTERNAL_SHARED_SECRET,
      SIGNER_HOST: "127.0.0.1",
      SIGNER_PORT: String(signerPort),
      // The signer's outflow cap (docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11), required in production mode: the first withdrawal's
      // net amount (45) fits in an hour's 60, the second's does not (step 4).
      SIGNER_MAX_OUTFLOW_PER_HOUR: String(OUTFLOW_CAP_PER_HOUR),
      SIGNER_MAX_OUTFLOW_PER_DAY: "100000",
    });
    const apiEnv = () => ({ ...baseEnv("api"), ...SERVICE_SECRETS, MASTER_XPUBS: xpubsLine });
    const workerEnv = () => ({
      ...baseEnv("worker"),
      ...SERVICE_SECRETS,
      MASTER_XPUBS: xpubsLine,
      SIGNER_URL: `http://127.0.0.1:${signerPort}`,
      INTERNAL_SHARED_SECRET,
    });

    function started(p: RoleProcess): RoleProcess {
      processes.push(p);
      return p;
    }

    function dumpLogsOnFailure() {
      onTestFailed(() => {
        for (const p of processes) console.error(`--- ${p.name} ---\n${p.tail()}`);
      });
    }

    beforeAll(async () => {
      root = await mkdtemp(path.join(tmpdir(), "sg-custody-"));
      signerPort = await freePort();
      // Chain id 1: production signs only for the network's own chain (Ethereum's).
      [anvil, database] = await Promise.all([startAnvil(["--chain-id", "1"]), createEmptyPostgresDatabase()]);
      token = await deployTestUsdt(anvil);
      db = await openDatabase({ kind: "postgres", url: database.url, poolSize: 2 });
    }, START_TIMEOUT);

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop()));
      await db?.close();
      await database?.drop();
      // Login roles are cluster-wide: this run's go with its database.
      if (Object.keys(roleUrls).length > 0) {
        const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await admin.connect();
        for (const u of Object.values(roleUrls))
          await admin.query(`drop role if exists "${decodeURIComponent(new URL(u).username)}"`);
        await admin.end();
      }
      await anvil?.stop();
      if (root) await rm(root, { recursive: true, force: true });
    });

    it("api and worker started with only MASTER_XPUBS: a deposit is credited, a withdrawal is signed by the signer and confirmed on anvil", {
      timeout: 240_000,
    }, async () => {
      dumpLogsOnFailure();
      // 1. On the signer host: the xpubs line; beside it, migrate on an empty database (no key material).
      const [exported, migrated] = await Promise.all([
        runToEnd("export-xpubs", ["signer", "export-xpubs"], {
          ...baseEnv("signer"),
          MASTER_MNEMONIC: MNEMONIC,
        }),
        runToEnd("migrate", ["migrate"], baseEnv("migrate")),
      ]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(migrated.code, migrated.stderr + migrated.stdout).toBe(0);
      const lines = exported.stdout.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^MASTER_XPUBS=\S+$/);
      xpubsLine = (lines[0] as string).slice("MASTER_XPUBS=".length);
      // Public keys only: nothing of the seed leaves the signer host.
      expect(exported.stdout).not.toMatch(/xprv|tprv/);
      expect(exported.stdout + exported.stderr).not.toContain(MNEMONIC);
      const parsed = parseAccountXpubs(xpubsLine);
      if ("error" in parsed) throw new Error(parsed.error);
      const watchOnly = AddressDeriver.fromAccountExtendedPublicKeys(parsed.xpubs);
      const hot = watchOnly.address(ERC, "production", HOT_WALLET_INDEX) as Hex;
      // The line is exactly the one of this mnemonic (the test's own derivation agrees).
      expect(hot).toBe(AddressDeriver.fromMnemonic(MNEMONIC).address(ERC, "production", HOT_WALLET_INDEX));

      // 1b. The database roles: one login per process role, made with the owner's DATABASE_URL
      // (login names of this test database: roles are cluster-wide and test files run in parallel).
      const dbName = new URL(database.url).pathname.slice(1);
      const roles = await runToEnd(
        "db roles",
        ["db", "roles", "--json", "--prefix", `${dbName}_`],
        baseEnv("cli"),
      );
      expect(roles.code, roles.stderr).toBe(0);
      for (const l of JSON.parse(roles.stdout) as { role: string; user: string; url: string }[]) {
        expect(l.user).toBe(`${dbName}_${l.role}_login`);
        roleUrls[l.role] = l.url;
      }
      expect(Object.keys(roleUrls).sort()).toEqual(["api", "signer", "worker"]);
      // The finding's statement, made with the api's own DATABASE_URL: refused.
      const asApi = new pg.Client({ connectionString: roleUrls.api });
      await asApi.connect();
      try {
        const forged = await asApi
          .query(
            `insert into outgoing_transfers (intent_id, kind, network, environment, asset, from_index, to_address, amount, status)
             values ('tx_forged', 'withdrawal', $1, 'production', 'token', $2, $3, 999000000, 'queued')`,
            [ERC, HOT_WALLET_INDEX, RECIPIENT.toLowerCase()],
          )
          .then(
            () => "inserted",
            (err: { code?: string; message: string }) => `${err.code}: ${err.message}`,
          );
        expect(forged).toBe("42501: permission denied for table outgoing_transfers");
        const trigger = await asApi.query("alter table audit_log disable trigger audit_log_append_only").then(
          () => "altered",
          (err: { code?: string }) => err.code,
        );
        expect(trigger).toBe("42501");
      } finally {
        await asApi.end();
      }

      // 2. The cluster: signer, api and worker, each with only what its role may hold (its own
      // database role included); and the merchant from the operator command (production mode: it
      // refuses key material too; it keeps the owner's DATABASE_URL).
      signer = started(new RoleProcess("signer", ["signer"], signerEnv()));
      api = started(new RoleProcess("api", ["api"], apiEnv()));
      worker = started(new RoleProcess("worker", ["worker"], workerEnv()));
      const [merchant, , listening] = await Promise.all([
        runToEnd(
          "merchant create",
          ["merchant", "create", "--email", "custody@example.com", "--company", "Custody Ltd", "--json"],
          { ...baseEnv("cli"), ...SERVICE_SECRETS },
        ),
        signer.waitForMsg("stablegate signer listening", START_TIMEOUT),
        api.waitForMsg("stablegate listening", START_TIMEOUT),
        worker.waitForMsg("account keys checked against the database", START_TIMEOUT),
      ]);
      production = `http://127.0.0.1:${new URL(String(listening.production)).port}`;
      expect(merchant.code, merchant.stderr).toBe(0);
      const pair = (
        JSON.parse(merchant.stdout).keys as { environment: string; apiKey: string; apiSecret: string }[]
      ).find((k) => k.environment === "production");
      if (!pair) throw new Error("merchant create printed no production key pair");
      expect(pair.apiKey).toMatch(/^ak_live_/);
      keys = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };

      // Where the key material really is: read back from each running process's environment.
      const signerVars = await signer.environment();
      const apiVars = await api.environment();
      const workerVars = await worker.environment();
      expect(signerVars.MASTER_MNEMONIC).toBe(MNEMONIC);
      // Least privilege the other way: the signer host holds none of the service's own secrets.
      for (const name of Object.keys(SERVICE_SECRETS)) expect(signerVars[name], name).toBeUndefined();
      for (const [name, vars] of [
        ["api", apiVars],
        ["worker", workerVars],
      ] as const) {
        expect(
          Object.keys(vars).filter((k) => k.startsWith("MASTER_MNEMONIC")),
          name,
        ).toEqual([]);
        expect(Object.values(vars).join("\n"), name).not.toContain(MNEMONIC);
        expect(vars.MASTER_XPUBS, name).toBe(xpubsLine);
      }
      expect(apiVars.INTERNAL_SHARED_SECRET).toBeUndefined();
      // And each connects as its own database role.
      expect(signerVars.DATABASE_URL).toBe(roleUrls.signer);
      expect(apiVars.DATABASE_URL).toBe(roleUrls.api);
      expect(workerVars.DATABASE_URL).toBe(roleUrls.worker);
      expect(workerVars.INTERNAL_SHARED_SECRET).toBe(INTERNAL_SHARED_SECRET);
      // And each says where its keys came from.
      expect(api.logged("account keys checked against the database")[0]).toMatchObject({
        role: "api",
        accountKeys: "MASTER_XPUBS",
      });
      expect(worker.logged("account keys checked against the database")[0]).toMatchObject({
        role: "worker",
        accountKeys: "MASTER_XPUBS",
      });
      // The database recorded this signer's account keys (the first process to start pinned them).
      const recorded = await db.db
        .selectFrom("account_keys")
        .select(["network", "environment", "xpub"])
        .where("network", "=", ERC)
        .where("environment", "=", "production")
        .executeTakeFirstOrThrow();
      expect(recorded.xpub).toBe(parsed.xpubs[`${ERC}/production`]);

      // 3a. Deposit: a production checkout session through the api, paid on anvil from anvil's
      // funded account; the worker's watcher sees it, waits for the confirmations, credits it.
      const session = await call(production, "/checkout/session", {
        headers: keys,
        json: { amount: DEPOSIT, currencyType: ERC },
      });
      expect(session.status, session.text).toBe(201);
      const depositAddress = session.body.data.walletAddress as Hex;
      expect(depositAddress).not.toBe(hot);
      const payer = privateKeyToAccount(ANVIL_DEPLOYER_KEY).address;
      await mintTestUsdt(anvil, token, payer, BigInt(DEPOSIT) * 1_000_000n);
      const paid = await transferTestUsdt(
        anvil,
        token,
        ANVIL_DEPLOYER_KEY,
        depositAddress,
        BigInt(DEPOSIT) * 1_000_000n,
      );
      expect(paid.status).toBe("success");
      const stopMining = keepMining(anvil);
      let confirmed: Record<string, unknown>;
      try {
        confirmed = await waitFor(
          async () => {
            const r = await call(production, `/checkout/session/${session.body.data.id}`, { headers: keys });
            return r.body?.data?.status === "confirmed" ? r.body.data : null;
          },
          40_000,
          250,
        );
      } finally {
        stopMining();
      }
      expect(confirmed.actualBalance).toBe(DEPOSIT);
      expect(confirmed.blockchainTxHash).toBe(paid.transactionHash);
      const deposits = await call(production, `/api/v1/public/transactions?type=deposit`, { headers: keys });
      expect(deposits.status, deposits.text).toBe(200);
      expect(deposits.body.data).toHaveLength(1);
      expect(deposits.body.data[0]).toMatchObject({
        status: "confirmed",
        amount: DEPOSIT,
        fee: 2,
        netAmount: 198,
      });
      expect(await balanceOf(keys)).toEqual({ available: 198, held: 0 });

      // 3b. Withdrawal: the hot wallet (index 0 of the production ERC20 account, derived here from
      // the xpubs alone) holds the token and the ETH for gas; the gas tank some ETH too.
      await mintTestUsdt(anvil, token, hot, 1_000_000_000n);
      await anvil.testClient.setBalance({ address: hot, value: 10n ** 20n });
      await anvil.testClient.setBalance({
        address: watchOnly.address(ERC, "production", GAS_TANK_INDEX) as Hex,
        value: 10n ** 20n,
      });
      const request = await call(production, "/api/v1/public/withdrawal-requests", {
        headers: keys,
        json: { amount: WITHDRAWAL, currencyType: ERC, walletAddress: RECIPIENT },
      });
      expect(request.status, request.text).toBe(201);
      expect(request.body.data.status).toBe("processing");
      const stop = keepMining(anvil);
      let done: Record<string, unknown>;
      try {
        done = await waitFor(
          async () => {
            const r = await call(production, `/api/v1/public/withdrawal-requests/${request.body.data.id}`, {
              headers: keys,
            });
            return ["completed", "failed"].includes(r.body?.data?.status) ? r.body.data : null;
          },
          40_000,
          250,
        );
      } finally {
        stop();
      }
      expect(done.status).toBe("completed");
      expect(done).toMatchObject({ amount: WITHDRAWAL, fee: 5, netAmount: WITHDRAWAL - 5 });
      const txHash = done.blockchainTxHash as Hex;
      const receipt = await anvil.publicClient.getTransactionReceipt({ hash: txHash });
      expect(receipt.status).toBe("success");
      expect(receipt.from.toLowerCase()).toBe(hot.toLowerCase());
      expect(await testUsdtBalance(anvil, token, RECIPIENT)).toBe(BigInt(WITHDRAWAL - 5) * 1_000_000n);
      expect(await balanceOf(keys)).toEqual({ available: 198 - WITHDRAWAL, held: 0 });
      // The separate signer process signed exactly that transaction (the worker holds no key).
      expect(signer.logged("signed")).toContainEqual(
        expect.objectContaining({
          network: ERC,
          environment: "production",
          index: HOT_WALLET_INDEX,
          hash: txHash,
        }),
      );

      // 4. Past the outflow cap: a second withdrawal, backed and held like the first, would take the
      // hour's signed outflow to 90 of 60 USDT; the signer refuses it and alerts, nothing is sent.
      const second = await call(production, "/api/v1/public/withdrawal-requests", {
        headers: keys,
        json: { amount: WITHDRAWAL, currencyType: ERC, walletAddress: RECIPIENT },
      });
      expect(second.status, second.text).toBe(201);
      const capped = await waitFor(
        async () =>
          signer
            .log()
            .split("\n")
            .filter((l) => l.includes('"alert":"signer_outflow_cap"'))
            .map((l) => JSON.parse(l) as Record<string, unknown>)
            .find((l) => l.intentId === second.body.data.id) ?? null,
        60_000,
        250,
      );
      expect(capped).toMatchObject({ network: ERC, environment: "production", window: "hour" });
      expect(capped.limit).toBe(String(OUTFLOW_CAP_PER_HOUR * 1_000_000));
      const waiting = await call(production, `/api/v1/public/withdrawal-requests/${second.body.data.id}`, {
        headers: keys,
      });
      expect(waiting.body.data.status).toBe("processing");
      expect(waiting.body.data.blockchainTxHash).toBeNull();
      expect(await balanceOf(keys)).toEqual({ available: 198 - 2 * WITHDRAWAL, held: WITHDRAWAL });
      expect(await testUsdtBalance(anvil, token, RECIPIENT)).toBe(BigInt(WITHDRAWAL - 5) * 1_000_000n);

      // 5. A forged intent written as the database OWNER (who passes every grant): the honest worker
      // picks it up and asks the signer, which reads the evidence itself (no withdrawal or payout
      // backs it, no hold) and refuses; the attacker receives nothing.
      await db.db
        .insertInto("outgoing_transfers")
        .values({
          intent_id: "tx_forged_by_owner",
          kind: "withdrawal",
          network: ERC,
          environment: "production",
          asset: "token",
          from_index: HOT_WALLET_INDEX,
          to_address: ATTACKER.toLowerCase(),
          amount: "40000000",
          status: "queued",
        })
        .execute();
      const refused = await waitFor(
        async () =>
          signer
            .logged("signer refused a transfer outside its policy")
            .find((l) => l.intentId === "tx_forged_by_owner") ?? null,
        60_000,
        250,
      );
      expect(refused).toMatchObject({ alert: "signer_policy_refused", index: HOT_WALLET_INDEX });
      expect(String(refused.reason)).toMatch(/withdrawal|transaction/);
      expect(await testUsdtBalance(anvil, token, ATTACKER)).toBe(0n);
      expect(worker.log()).toContain('"alert":"signer_rejected"');

      const report = await verifyLedger(db.db);
      expect(report.ok, JSON.stringify(report.problems)).toBe(true);
      // The api's forgery left nothing; the owner's forgery and the capped withdrawal wait, unsigned.
      const intents = await db.db
        .selectFrom("outgoing_transfers")
        .select(["intent_id", "kind", "status"])
        .execute();
      // Sorted here, not by the database: its collation need not match localeCompare.
      intents.sort((a, b) => a.intent_id.localeCompare(b.intent_id));
      expect(intents).toEqual(
        [
          { intent_id: request.body.data.id, kind: "withdrawal", status: "confirmed" },
          { intent_id: second.body.data.id, kind: "withdrawal", status: "queued" },
          { intent_id: "tx_forged_by_owner", kind: "withdrawal", status: "queued" },
        ].sort((a, b) => a.intent_id.localeCompare(b.intent_id)),
      );
      // The seed never reached a log of any process.
      for (const p of processes) expect(p.log(), p.name).not.toContain(MNEMONIC);
    });

    it("in production mode api and worker refuse the mnemonic, and a worker refuses another seed's xpubs", {
      timeout: 120_000,
    }, async () => {
      dumpLogsOnFailure();
      // The same environments that started above, plus the mnemonic; and a worker with the
      // account keys of another seed than the one the database's addresses come from.
      const otherXpubs = formatAccountXpubs(accountXpubsOf(AddressDeriver.fromMnemonic(OTHER_MNEMONIC)));
      const [apiWithSeed, workerWithSeed, workerOtherKeys] = await Promise.all([
        runToEnd("api+mnemonic", ["api"], { ...apiEnv(), MASTER_MNEMONIC: MNEMONIC }),
        runToEnd("worker+mnemonic", ["worker"], { ...workerEnv(), MASTER_MNEMONIC: MNEMONIC }),
        runToEnd("worker+other xpubs", ["worker"], { ...workerEnv(), MASTER_XPUBS: otherXpubs }),
      ]);
      for (const [role, r] of [
        ["api", apiWithSeed],
        ["worker", workerWithSeed],
      ] as const) {
        expect(r.code, r.stderr).toBe(2);
        // One message: the variable, why (it never signs), what to do (keep it on the signer host).
        expect(r.stderr).toMatch(
          new RegExp(
            `^stablegate: Invalid configuration:\\n  MASTER_MNEMONIC: the ${role} role never signs, so it must not hold the mnemonic .*keep it on the signer host only.*MASTER_XPUBS.*\\n$`,
          ),
        );
        expect(r.stderr.match(/MASTER_MNEMONIC:/g)).toHaveLength(1);
        // Neither the words nor a stack trace in the output.
        expect(r.stderr + r.stdout).not.toContain(MNEMONIC);
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
      expect(workerOtherKeys.code, workerOtherKeys.stderr).toBe(2);
      expect(workerOtherKeys.stderr).toMatch(
        /MASTER_XPUBS: the account keys of this process \(MASTER_XPUBS\) differ from the ones this database's addresses were derived from \(.*USDT-ERC20\/production.*\)/,
      );
      expect(workerOtherKeys.stderr).not.toMatch(/\n\s+at /);
      // The refused processes changed nothing: the recorded keys are still the signer's.
      const recorded = await db.db.selectFrom("account_keys").select("xpub").execute();
      expect(recorded.map((r) => r.xpub).sort()).toEqual(
        xpubsLine
          .split(",")
          .map((e) => e.split("=")[1])
          .sort(),
      );
    });

    async function balanceOf(headers: Record<string, string>) {
      const r = await call(production, "/api/v1/public/balance", { headers });
      expect(r.status, r.text).toBe(200);
      const line = (r.body.data as { currencyType: string; available: number; held: number }[]).find(
        (b) => b.currencyType === ERC,
      );
      return { available: line?.available ?? 0, held: line?.held ?? 0 };
    }
  },
);
