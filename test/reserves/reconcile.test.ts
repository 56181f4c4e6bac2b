import { createWalletClient, type Hex, http, parseAbi } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import { type OperatorContext, runOperatorCommand } from "../../src/operator/commands.js";
import { formatReserveTable, type ReserveReport } from "../../src/reserves/index.js";
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

// Issue #22 "Reserve reconciliation", on anvil with the real sweep: a deposit is credited and swept
// into the hot wallet; a transfer out of the hot wallet that bypasses stablegate is a shortfall at
// the next run (report, /readyz, /metrics); once the funds are back it clears.

const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
const STRANGER = "0x000000000000000000000000000000000000dEaD" as Hex;
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
let ctx: OperatorContext;
const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  await anvil.testClient.setBalance({
    address: wallet.address("USDT-ERC20", "sandbox", GAS_TANK_INDEX) as Hex,
    value: 10n ** 19n,
  });
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      METRICS_TOKEN,
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: "2",
      RESERVE_CHECK_SECONDS: "3600",
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
  ctx = operatorContext(svc.config, svc.database.db);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await anvil?.stop();
});

async function reconcile(): Promise<ReserveReport> {
  const reports = (await runOperatorCommand(ctx, "reserves.reconcile", {})) as ReserveReport[];
  const r = reports.find((x) => x.network === "USDT-ERC20" && x.environment === "sandbox");
  if (!r) throw new Error("no USDT-ERC20 sandbox report");
  return r;
}

/** A token transfer signed by no key of ours: anvil sends it as `from` (impersonation). */
async function bypass(from: Hex, to: Hex, units: bigint) {
  await anvil.testClient.impersonateAccount({ address: from });
  await anvil.testClient.setBalance({ address: from, value: 10n ** 18n });
  const client = createWalletClient({ chain: foundry, transport: http(anvil.rpcUrl) });
  const hash = await client.writeContract({
    address: token,
    abi: ERC20,
    functionName: "transfer",
    args: [to, units],
    account: from,
  });
  await anvil.publicClient.waitForTransactionReceipt({ hash });
  await anvil.testClient.stopImpersonatingAccount({ address: from });
}

async function readiness() {
  const r = await call(svc.urls.production, "/readyz", {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return r.body.checks["reserves:USDT-ERC20:sandbox"] as { status: string; detail: string };
}

describe("reserve reconciliation (anvil)", () => {
  it("a drain of the hot wallet that bypasses stablegate is a shortfall within one run; it clears when the funds are back", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.headers,
      json: { amount: 100, currencyType: "USDT-ERC20" },
    });
    expect(s.status, s.text).toBe(201);
    await mintTestUsdt(anvil, token, s.body.data.walletAddress, 100_000_000n);
    // Credited, then swept into the hot wallet by the real sweeper and sender (mining as it goes).
    await waitFor(async () => {
      await mineBlocks(anvil, 1);
      return (await testUsdtBalance(anvil, token, hot)) === 100_000_000n;
    }, 90_000);
    await waitFor(async () => (await reconcile()).hotWallet === 100_000_000n, 30_000);

    const before = await reconcile();
    expect(before).toMatchObject({ ok: true, shortfall: 0n, onChain: 100_000_000n, owed: 100_000_000n });
    expect(before.owedToMerchants + before.fees).toBe(100_000_000n);
    expect((await readiness()).status).toBe("ok");

    await bypass(hot, STRANGER, 40_000_000n);
    const drained = await reconcile();
    expect(drained).toMatchObject({ ok: false, shortfall: 40_000_000n, hotWallet: 60_000_000n });
    expect(formatReserveTable([drained])).toMatch(/USDT-ERC20 sandbox .* 40 +SHORTFALL/);
    const down = await readiness();
    expect(down.status).toBe("down");
    expect(down.detail).toMatch(/^SHORTFALL 40 USDT/);
    const metrics = await call(svc.urls.production, "/metrics", {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.text).toMatch(
      /stablegate_reserve_shortfall\{network="USDT-ERC20",environment="sandbox"\} 40000000/,
    );

    await bypass(STRANGER, hot, 40_000_000n);
    const back = await reconcile();
    expect(back).toMatchObject({ ok: true, shortfall: 0n, hotWallet: 100_000_000n });
    expect((await readiness()).status).toBe("ok");
  }, 150_000);
});
