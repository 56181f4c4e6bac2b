import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import type { ReserveReport } from "../../src/reserves/index.js";
import { ColdForwarder } from "../../src/sweep/index.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { type SandboxMerchant, sandboxMerchant } from "../deposits/support.js";
import { wallet } from "../sender/support.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
} from "../support/chain/anvil.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";

// Issue #22 "Cold forwarding", on anvil with the real sweep and sender: HOT_WALLET_MAX 60 USDT; a
// 100 USDT deposit swept into the hot wallet → exactly 40 USDT forwarded to the cold wallet, once,
// whatever the number of forwarders looking; the reserves count the cold wallet. (Across a SIGKILL
// of the sending process: test/sender/fault-injection.test.ts carries a cold forward.)

const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
const COLD = "0x00000000000000000000000000000000000c01d0" as Hex;
let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  await anvil.testClient.setBalance({
    address: wallet.address("USDT-ERC20", "sandbox", GAS_TANK_INDEX) as Hex,
    value: 10n ** 19n,
  });
  // The hot wallet pays its own gas (as for withdrawals): the operator funds it.
  await anvil.testClient.setBalance({ address: hot, value: 10n ** 19n });
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      METRICS_TOKEN,
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: "2",
      SANDBOX_HOT_WALLET_MAX_ERC20: "60",
      SANDBOX_COLD_WALLET_ERC20: COLD,
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await anvil?.stop();
});

describe("cold-wallet forwarding (anvil)", () => {
  it("forwards exactly the excess above the maximum, once; the reserves count the cold wallet", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.headers,
      json: { amount: 100, currencyType: "USDT-ERC20" },
    });
    expect(s.status, s.text).toBe(201);
    await mintTestUsdt(anvil, token, s.body.data.walletAddress, 100_000_000n);
    // Credited, swept into the hot wallet, then its excess forwarded (the job looks every 30 s).
    await waitFor(async () => {
      await mineBlocks(anvil, 1);
      return (await testUsdtBalance(anvil, token, COLD)) === 40_000_000n;
    }, 120_000);
    expect(await testUsdtBalance(anvil, token, hot)).toBe(60_000_000n);

    // More forwarders looking at once, on the settled state: none queues anything.
    const forwarder = () =>
      new ColdForwarder({
        db: svc.database.db,
        network: "USDT-ERC20",
        environment: "sandbox",
        writer: { tokenBalance: (a: string) => testUsdtBalance(anvil, token, a) },
        hotWallet: hot,
        cold: { max: 60_000_000n, address: COLD },
        logger: createLogger("silent"),
        clock: systemClock,
        settleMs: 0,
      });
    expect(await Promise.all([forwarder().tick(), forwarder().tick(), forwarder().tick()])).toEqual([
      0n,
      0n,
      0n,
    ]);
    // The sender records the forward as confirmed once it has its confirmations (mining as it goes).
    const forwards = () =>
      svc.database.db
        .selectFrom("outgoing_transfers")
        .select(["amount", "status", "to_address"])
        .where("kind", "=", "cold_forward")
        .execute();
    await waitFor(async () => {
      await mineBlocks(anvil, 1);
      return (await forwards()).every((r) => r.status === "confirmed");
    }, 30_000);
    const rows = await forwards();
    expect(rows.map((r) => [String(r.amount), r.status, r.to_address.toLowerCase()])).toEqual([
      ["40000000", "confirmed", COLD.toLowerCase()],
    ]);
    expect(await testUsdtBalance(anvil, token, COLD)).toBe(40_000_000n);

    // The service's own configuration names the cold wallet.
    const ctx = operatorContext(svc.config, svc.database.db);
    const reports = (await runOperatorCommand(ctx, "reserves.reconcile", {})) as ReserveReport[];
    const r = reports.find((x) => x.network === "USDT-ERC20" && x.environment === "sandbox");
    expect(r).toMatchObject({
      ok: true,
      hotWallet: 60_000_000n,
      coldWallet: 40_000_000n,
      owed: 100_000_000n,
    });

    // A hot wallet holding its maximum is not low.
    const metrics = await call(svc.urls.production, "/metrics", {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.text).toMatch(/stablegate_hot_wallet_low\{network="USDT-ERC20",environment="sandbox"\} 0/);
  }, 180_000);
});
