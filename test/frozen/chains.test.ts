import { getAddress, type Hex, hexToBytes, parseAbiItem } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { tronAddressFromBytes, tronAddressToEvm } from "../../src/chains/tron/address.js";
import { operatorContext } from "../../src/cli/merchant-create.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import type { ReserveReport } from "../../src/reserves/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestToken,
  deployTestUsdt,
  destroyFrozenFunds,
  freezeAddress,
  keepMining,
  mineBlocks,
  mintTestToken,
  startAnvil,
  testUsdtBalance,
  transferTestToken,
  transferTestUsdt,
  unfreezeAddress,
} from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, sleep, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, frozenCustody, hookStatuses } from "../withdrawals/support.js";

// Issue #40 "frozen funds" end to end on real chains: the full service (its sandbox environment
// pointed at a real chain, so the release/return decisions need no step-up codes; real signing by
// the in-process signer, funded hot wallets and gas tanks, confirmations, the real watcher, sender,
// sweep and held-decisions jobs, the webhook receiver). Three chains, each with a service of its
// own: anvil with USDT-ERC20 (TestUSDT, Tether's original contract: `tether`), anvil with
// USDC-ERC20 (TestToken as Circle's FiatToken: `usdc`), and the TRON emulator over anvil with
// USDT-TRC20 (TestUSDT). Every freeze is made on chain by the token's owner, as its issuer does.
// After each test `ledger verify` and the reserve reconciliation are clean.

const MNEMONIC = "test test test test test test test test test test test junk";
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);
const CONFIRMATIONS = 3;
/** The merchant's funding deposit of each currency type: below the sweep threshold, never swept. */
const FUND = 100;
const SWEEP_THRESHOLD = 150;
/** Each deposit of a frozen sender (and the control deposit): above the threshold. */
const HELD = 200;
/** A deposit fee (1 %), so that what a release credits (netAmount) differs from what arrived. */
const DEPOSIT_FEE_PERCENT = "1";
const HELD_FEE = 2;
const HELD_NET = HELD - HELD_FEE;
const WITHDRAWAL = 30;
/** A deposit whose address the issuer then freezes (below the threshold: never swept). */
const OWN = 40;

const units = (amount: number) => BigInt(Math.round(amount * 1_000_000));
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

interface Coin {
  currencyType: CurrencyType;
  kind: "tether" | "usdc";
  token: Hex;
  /** The hot wallet and the gas tank, as EVM addresses (the TRON ones' 20 bytes). */
  hot: Hex;
  tank: Hex;
}

interface Merchant {
  api: Record<string, string>;
  bearer: Record<string, string>;
  merchantId: string;
}

interface Chain {
  anvil: AnvilNode;
  emulator?: TronEmulator;
  coin: Coin;
  svc: TestService;
  receiver: Receiver;
  m: Merchant;
  /** An address as the service spells it → the EVM address of its 20 bytes, and back. */
  toEvm(address: string): Hex;
  fromEvm(address: Hex): string;
  stop(): Promise<void>;
}

/** DEBUG_LOG=1: the services' log lines on stderr. */
const debugLog = process.env.DEBUG_LOG ? { logDestination: process.stderr } : {};

type Started = Omit<Chain, "receiver" | "m" | "stop"> & { stopChain(): Promise<void> };

const evmSpelling = { toEvm: (a: string) => getAddress(a), fromEvm: (a: Hex) => getAddress(a) };
const tronSpelling = {
  toEvm: (a: string) => tronAddressToEvm(a) as Hex,
  fromEvm: (a: Hex) => tronAddressFromBytes(hexToBytes(a)),
};

const baseEnv = (currencyTypes: CurrencyType[]): Record<string, string> => ({
  SSRF_ALLOW_CIDRS: "127.0.0.0/8",
  RATE_LIMIT_ENABLED: "false",
  MASTER_MNEMONIC: MNEMONIC,
  CURRENCY_TYPES: currencyTypes.join(","),
  FEE_SCHEDULE: JSON.stringify(
    Object.fromEntries(currencyTypes.map((c) => [c, { deposit: { percent: DEPOSIT_FEE_PERCENT } }])),
  ),
});

/** The hot wallet holds what it pays out and gas; the gas tank pays the sweeps' and returns' top-ups. */
async function fundSystemWallets(anvil: AnvilNode, coin: Coin) {
  await mintTestToken(anvil, coin.token, coin.hot, units(10_000));
  await anvil.testClient.setBalance({ address: coin.hot, value: 10n ** 20n });
  await anvil.testClient.setBalance({ address: coin.tank, value: 10n ** 20n });
}

async function startEvmChain(kind: "tether" | "usdc"): Promise<Started> {
  const anvil = await startAnvil();
  const currencyType: CurrencyType = kind === "tether" ? "USDT-ERC20" : "USDC-ERC20";
  const token =
    kind === "tether"
      ? await deployTestUsdt(anvil)
      : await deployTestToken(anvil, { symbol: "USDC", decimals: 6, freeze: "usdc" });
  const coin: Coin = {
    currencyType,
    kind,
    token,
    hot: deriver.address(currencyType, "sandbox", HOT_WALLET_INDEX) as Hex,
    tank: deriver.address(currencyType, "sandbox", GAS_TANK_INDEX) as Hex,
  };
  await fundSystemWallets(anvil, coin);
  const svc = await startTestService({
    env: {
      ...baseEnv([currencyType]),
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      [kind === "tether" ? "SANDBOX_USDT_ERC20_CONTRACT" : "SANDBOX_USDC_ERC20_CONTRACT"]: token,
      CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
      SWEEP_THRESHOLD_ERC20: `${SWEEP_THRESHOLD}`,
    },
    ...debugLog,
  });
  return { anvil, coin, svc, ...evmSpelling, stopChain: () => anvil.stop() };
}

async function startTronChain(): Promise<Started> {
  const anvil = await startAnvil();
  const usdt = await deployTestUsdt(anvil);
  const emulator = await startTronEmulator(anvil, usdt);
  const coin: Coin = {
    currencyType: "USDT-TRC20",
    kind: "tether",
    token: usdt,
    hot: tronAddressToEvm(deriver.address("USDT-TRC20", "sandbox", HOT_WALLET_INDEX)) as Hex,
    tank: tronAddressToEvm(deriver.address("USDT-TRC20", "sandbox", GAS_TANK_INDEX)) as Hex,
  };
  await fundSystemWallets(anvil, coin);
  const svc = await startTestService({
    env: {
      ...baseEnv([coin.currencyType]),
      SANDBOX_TRC20_API_URL: emulator.url,
      SANDBOX_USDT_TRC20_CONTRACT: emulator.tokenAddress,
      CONFIRMATIONS_TRC20: `${CONFIRMATIONS}`,
      SWEEP_THRESHOLD_TRC20: `${SWEEP_THRESHOLD}`,
    },
    ...debugLog,
  });
  return {
    anvil,
    emulator,
    coin,
    svc,
    ...tronSpelling,
    stopChain: async () => {
      await emulator.stop();
      await anvil.stop();
    },
  };
}

/** Runs `fn` while the anvil mines a block every 300 ms (confirmations come while a test waits). */
async function mining<T>(anvil: AnvilNode, fn: () => Promise<T>): Promise<T> {
  const stop = keepMining(anvil);
  try {
    return await fn();
  } finally {
    stop();
  }
}

/** A merchant as a real one is made: registered (Bearer session + key pairs), webhooks to `receiver`. */
async function register(svc: TestService, receiver: Receiver): Promise<Merchant> {
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `frozen-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`,
      password: "a long passphrase 123",
      companyName: "Frozen Co",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const pair = reg.body.data.apiKeys.find((k: { environment: string }) => k.environment === "sandbox");
  const api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  const hook = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: api,
    json: { webhookUrl: receiver.url() },
  });
  expect(hook.status, hook.text).toBe(200);
  return {
    api,
    bearer: { authorization: `Bearer ${reg.body.data.accessToken}`, "x-environment": "sandbox" },
    merchantId: reg.body.data.user.merchantId as string,
  };
}

/** A fresh account: its key (to send from it) and its EVM address. */
function freshAccount() {
  const key = generatePrivateKey();
  return { key, address: privateKeyToAccount(key).address };
}

// One chain (and one service) per currency type; the three run at the same time (each suite is
// `describe.concurrent`, its tests one after the other: `it.sequential`).
const CHAINS = [
  {
    name: "USDT-ERC20",
    label: "anvil, USDT-ERC20 (TestUSDT: Tether's contract)",
    start: () => startEvmChain("tether"),
  },
  {
    name: "USDC-ERC20",
    label: "anvil, USDC-ERC20 (TestToken: Circle's FiatToken)",
    start: () => startEvmChain("usdc"),
  },
  { name: "USDT-TRC20", label: "the TRON emulator, USDT-TRC20 (TestUSDT)", start: startTronChain },
] as const;

for (const spec of CHAINS) {
  describe.concurrent(`frozen funds on ${spec.label}`, () => {
    let c: Chain;
    const ct = spec.name;
    const coin = () => c.coin;

    beforeAll(async () => {
      const started = await spec.start();
      const receiver = await startReceiver();
      const m = await register(started.svc, receiver);
      c = {
        ...started,
        receiver,
        m,
        stop: async () => {
          await receiver.close();
          await started.svc.close();
          await started.stopChain();
        },
      };
      // Fund the merchant with a real deposit (below the sweep threshold: never swept).
      const s = await call(c.svc.urls.sandbox, "/checkout/session", {
        headers: c.m.api,
        json: { amount: FUND, currencyType: ct },
      });
      expect(s.status, s.text).toBe(201);
      await mintTestToken(c.anvil, coin().token, c.toEvm(s.body.data.walletAddress), units(FUND));
      await mining(c.anvil, () =>
        waitFor(async () => (await balance(c.svc, c.m.api, ct)).available > 0, 40_000),
      );
    }, 90_000);

    afterAll(async () => {
      await c?.stop();
    });

    // After every test: `ledger verify` is ok and the chain's reserves cover what the ledger owes.
    afterEach(async () => {
      if (!c) return;
      await expectLedgerOk(c.svc);
      await expectReservesOk(c);
    });

    it.sequential(`${ct}: a withdrawal to an address the token froze is 422 DESTINATION_BLOCKED (token_blacklist), nothing held`, async () => {
      const frozen = freshAccount().address;
      await freezeAddress(c.anvil, coin().token, frozen, coin().kind);
      const before = await balance(c.svc, c.m.api, ct);
      const r = await call(c.svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: c.m.api,
        json: { amount: WITHDRAWAL, currencyType: ct, walletAddress: c.fromEvm(frozen) },
      });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error).toMatchObject({
        code: "DESTINATION_BLOCKED",
        details: { reason: "token_blacklist" },
      });
      expect(await balance(c.svc, c.m.api, ct)).toEqual(before);
      expect(await transfersTo(c, frozen)).toEqual([]);
    });

    it.sequential(`${ct}: frozen between the request and the signing: failed unsigned, nothing sent, hold released`, async () => {
      const to = freshAccount().address;
      const off = await call(c.svc.urls.sandbox, "/api/v1/dashboard/settings", {
        method: "PATCH",
        headers: c.m.bearer,
        json: { autoWithdraw: false },
      });
      expect(off.status, off.text).toBe(200);
      try {
        const before = await balance(c.svc, c.m.api, ct);
        const hotNonce = await c.anvil.publicClient.getTransactionCount({ address: coin().hot });
        const r = await call(c.svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
          headers: c.m.api,
          json: { amount: WITHDRAWAL, currencyType: ct, walletAddress: c.fromEvm(to) },
        });
        expect(r.status, r.text).toBe(201);
        expect(r.body.data.status).toBe("pending");
        expect(await balance(c.svc, c.m.api, ct)).toEqual({
          available: before.available - WITHDRAWAL,
          held: before.held + WITHDRAWAL,
        });
        // The issuer freezes the destination while the request waits for approval.
        await freezeAddress(c.anvil, coin().token, to, coin().kind);
        const ok = await call(
          c.svc.urls.sandbox,
          `/api/v1/public/withdrawal-requests/${r.body.data.id}/approve`,
          {
            headers: c.m.api,
            json: {},
          },
        );
        expect(ok.status, ok.text).toBe(200);
        const done = await mining(c.anvil, () =>
          waitFor(async () => {
            const w = await call(c.svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
              headers: c.m.api,
            });
            return ["completed", "failed"].includes(w.body.data.status) ? w.body.data : null;
          }, 30_000),
        );
        expect(done.status, JSON.stringify(done)).toBe("failed");
        expect(done.rejectionReason).toBe("destination_blocked: token_blacklist");
        expect(done.blockchainTxHash ?? null).toBeNull();
        // Nothing signed, nothing broadcast: no attempt, no nonce used, no token transfer to it.
        const rows = await transfersTo(c, to);
        expect(rows.map((x) => [x.kind, x.status, x.tx_hash])).toEqual([["withdrawal", "failed", null]]);
        const attempts = await c.svc.database.db
          .selectFrom("outgoing_transfer_attempts")
          .select("tx_hash")
          .where("intent_id", "=", rows[0]!.intent_id)
          .execute();
        expect(attempts).toEqual([]);
        expect(await tokenTransfers(c, { to })).toEqual([]);
        expect(await testUsdtBalance(c.anvil, coin().token, to)).toBe(0n);
        expect(await c.anvil.publicClient.getTransactionCount({ address: coin().hot })).toBe(hotNonce);
        // The hold is released by the ordinary failed outcome; the merchant is told.
        expect(await balance(c.svc, c.m.api, ct)).toEqual(before);
        await waitFor(() => hookStatuses(c.receiver, r.body.data.id).includes("failed"), 15_000);
        expect(hookStatuses(c.receiver, r.body.data.id)).toEqual(["pending", "failed"]);
      } finally {
        await call(c.svc.urls.sandbox, "/api/v1/dashboard/settings", {
          method: "PATCH",
          headers: c.m.bearer,
          json: { autoWithdraw: true },
        });
      }
    });

    it.sequential(`${ct}: a sender frozen before its deposit's confirmations: held, not swept; released: credited once, then swept`, async () => {
      const before = await balance(c.svc, c.m.api, ct);
      const hotBefore = await testUsdtBalance(c.anvil, coin().token, coin().hot);
      const h = await heldDeposit(c, HELD);
      expect(h.hook).toMatchObject({
        type: "deposit",
        status: "held",
        holdReason: "token_blacklist",
        amount: HELD,
        checkoutSessionId: h.sessionId,
        currencyType: ct,
      });
      expect(await transaction(c, h.depositId)).toMatchObject({
        type: "deposit",
        status: "held",
        holdReason: "token_blacklist",
        amount: HELD,
        fee: HELD_FEE,
        netAmount: HELD_NET,
        walletAddress: h.address,
        blockchainTxHash: h.txHash,
      });
      expect(await balance(c.svc, c.m.api, ct)).toEqual({
        available: before.available,
        held: before.held + HELD,
      });
      const session = await call(c.svc.urls.sandbox, `/checkout/session/${h.sessionId}`, {
        headers: c.m.api,
      });
      expect(session.body.data.status).toBe("pending");

      // A control deposit handed off after the held one (an unfrozen sender) is swept by the sweep
      // job: that job has looked since, and left the held address alone.
      const control = await call(c.svc.urls.sandbox, "/checkout/session", {
        headers: c.m.api,
        json: { amount: HELD, currencyType: ct },
      });
      expect(control.status, control.text).toBe(201);
      const controlAddress = control.body.data.walletAddress as string;
      await mintTestToken(c.anvil, coin().token, c.toEvm(controlAddress), units(HELD));
      await mining(c.anvil, () => waitFor(() => sweptOnce(c, controlAddress), 60_000, 200));
      expect(await sweepsFrom(c, h.address)).toEqual([]);
      expect(await testUsdtBalance(c.anvil, coin().token, c.toEvm(h.address))).toBe(units(HELD));
      expect((await transaction(c, h.depositId)).status).toBe("held");
      const withControl = { available: before.available + HELD_NET, held: before.held + HELD };
      expect(await balance(c.svc, c.m.api, ct)).toEqual(withControl);

      // Released by the owner (the sandbox: no step-up), carried out by the worker.
      const r = await call(c.svc.urls.sandbox, `/api/v1/dashboard/transactions/${h.depositId}/release`, {
        headers: c.m.bearer,
        json: {},
      });
      expect(r.status, r.text).toBe(202);
      const done = await waitFor(async () => {
        const t = await transaction(c, h.depositId);
        return t.status === "confirmed" ? t : null;
      }, 15_000);
      expect(done).toMatchObject({ amount: HELD, fee: HELD_FEE, netAmount: HELD_NET });
      const released = { available: withControl.available + HELD_NET, held: before.held };
      expect(await balance(c.svc, c.m.api, ct)).toEqual(released);
      const again = await call(c.svc.urls.sandbox, `/api/v1/dashboard/transactions/${h.depositId}/release`, {
        headers: c.m.bearer,
        json: {},
      });
      expect(again.status, again.text).toBe(409);

      // Swept now, like any deposit: one sweep of what arrived, into the hot wallet.
      await mining(c.anvil, () => waitFor(() => sweptOnce(c, h.address), 60_000, 200));
      const sweeps = await sweepsFrom(c, h.address);
      expect(sweeps.map((s) => [BigInt(s.amount), c.toEvm(s.to_address)])).toEqual([
        [units(HELD), coin().hot],
      ]);
      expect(await testUsdtBalance(c.anvil, coin().token, c.toEvm(h.address))).toBe(0n);
      expect(await testUsdtBalance(c.anvil, coin().token, coin().hot)).toBe(hotBefore + 2n * units(HELD));
      // Credited exactly once: one `confirmed` webhook, the balance as the release left it.
      await sleep(1_000);
      expect(hookStatuses(c.receiver, h.depositId)).toEqual(["held", "confirmed"]);
      expect(await balance(c.svc, c.m.api, ct)).toEqual(released);
    }, 120_000);

    const usdc = spec.name === "USDC-ERC20";
    it.sequential(usdc
      ? `${ct}: a return to a sender Circle still freezes would revert: failed unsent, the deposit held again; once unfrozen, returned in ONE transfer after a gas top-up; held drops when it confirms`
      : `${ct}: another held deposit returned: ONE transfer back to its frozen sender after a gas top-up; held drops when it confirms`, async () => {
      const before = await balance(c.svc, c.m.api, ct);
      const h = await heldDeposit(c, HELD);
      const deposit = c.toEvm(h.address);
      const decideReturn = async () => {
        const r = await call(c.svc.urls.sandbox, `/api/v1/dashboard/transactions/${h.depositId}/return`, {
          headers: c.m.bearer,
          json: {},
        });
        expect(r.status, r.text).toBe(202);
      };
      /** The return transfers from the deposit address not failed (the one that counts). */
      const liveReturns = async () => (await returnsTo(c, h.sender)).filter((x) => x.status !== "failed");
      const expected = ["held", "returned"];
      if (usdc) {
        // Tether's original contract lets a transfer TO a frozen address through; Circle's
        // FiatToken reverts it: the return cannot be made. It fails unsent and the deposit is held
        // again, to be decided anew (README.md#frozen-funds).
        await decideReturn();
        await waitFor(
          async () =>
            hookStatuses(c.receiver, h.depositId).length === 3 &&
            (await transaction(c, h.depositId)).status === "held",
          20_000,
        );
        expect(hookStatuses(c.receiver, h.depositId)).toEqual(["held", "returned", "held"]);
        expect((await returnsTo(c, h.sender)).map((x) => [x.status, x.tx_hash])).toEqual([["failed", null]]);
        expect(await tokenTransfers(c, { from: deposit })).toEqual([]);
        expect(await testUsdtBalance(c.anvil, coin().token, deposit)).toBe(units(HELD));
        expect(await balance(c.svc, c.m.api, ct)).toEqual({
          available: before.available,
          held: before.held + HELD,
        });
        // The issuer lifts the freeze; the owner decides again.
        await unfreezeAddress(c.anvil, coin().token, h.sender, "usdc");
        expected.push("held", "returned");
      }
      // What the reserves hold beyond what the ledger owes, the held deposit still on its address.
      const surplus = await reserveSurplus(c);
      await decideReturn();
      await waitFor(async () => (await transaction(c, h.depositId)).status === "returned", 15_000);
      await waitFor(() => hookStatuses(c.receiver, h.depositId).length === expected.length, 15_000);
      // The books move only when the return confirms.
      expect(await balance(c.svc, c.m.api, ct)).toEqual({
        available: before.available,
        held: before.held + HELD,
      });

      // Mined, not yet confirmed: the reserves count the return in flight (no false shortfall).
      await mineUntil(c.anvil, async () => {
        const [ret] = await liveReturns();
        return ret?.status === "broadcast" && (await testUsdtBalance(c.anvil, coin().token, deposit)) === 0n;
      });
      expect((await liveReturns())[0]!.status).toBe("broadcast");
      expect(await reserveSurplus(c), "the reserves while the return is in flight").toBe(surplus);

      await mining(c.anvil, () =>
        waitFor(async () => (await liveReturns())[0]?.status === "confirmed", 30_000),
      );
      const returns = await liveReturns();
      expect(returns.map((x) => [c.toEvm(x.from_address!), c.toEvm(x.to_address), BigInt(x.amount)])).toEqual(
        [[deposit, h.sender, units(HELD)]],
      );
      // Gas for it came from the gas tank first, exactly as for a sweep.
      const topUp = (await outgoing(c, "gas_topup")).filter((x) => c.toEvm(x.to_address) === deposit);
      expect(topUp.map((x) => [x.status, c.toEvm(x.from_address!)])).toEqual([["confirmed", coin().tank]]);
      expect(returns[0]!.after_intent_id).toBe(topUp[0]!.intent_id);
      // On chain: exactly one token transfer out of the deposit address, to the sender, of what arrived.
      const out = await tokenTransfers(c, { from: deposit });
      expect(out.map((l) => [l.args.to, l.args.value])).toEqual([[h.sender, units(HELD)]]);
      expect(await testUsdtBalance(c.anvil, coin().token, h.sender)).toBe(units(HELD));
      expect(await testUsdtBalance(c.anvil, coin().token, deposit)).toBe(0n);
      // Nothing swept from it; the held balance drops, nothing credited.
      expect(await sweepsFrom(c, h.address)).toEqual([]);
      await waitFor(async () => (await balance(c.svc, c.m.api, ct)).held === before.held, 15_000);
      expect(await balance(c.svc, c.m.api, ct)).toEqual(before);
      expect(await transaction(c, h.depositId)).toMatchObject({ status: "returned", amount: HELD });
      expect(hookStatuses(c.receiver, h.depositId)).toEqual(expected);
      expect(await reserveSurplus(c), "the reserves once the return confirmed").toBe(surplus);
    }, 90_000);

    it.sequential(`${ct}: the hot wallet frozen mid-run: recorded, its coins moved to frozen custody, nothing signed from it; released: the withdrawal completes`, async () => {
      const hot = coin().hot;
      const before = await frozenCustody(c.svc, ct);
      await freezeAddress(c.anvil, coin().token, hot, coin().kind);
      const onHot = await testUsdtBalance(c.anvil, coin().token, hot);
      await mining(c.anvil, () =>
        waitFor(async () => (await frozenCustody(c.svc, ct)).frozen === before.frozen + onHot, 40_000),
      );
      expect(await frozenRow(c, c.fromEvm(hot))).toMatchObject({ role: "hot_wallet", released_at: null });
      const to = freshAccount().address;
      const r = await call(c.svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: c.m.api,
        json: { amount: WITHDRAWAL, currencyType: ct, walletAddress: c.fromEvm(to) },
      });
      expect(r.status, r.text).toBe(201);
      const hotNonce = await c.anvil.publicClient.getTransactionCount({ address: hot });
      // Several sender rounds while blocks are mined: nothing is signed from the frozen hot wallet.
      await mining(c.anvil, () => sleep(3_000));
      const rows = await transfersTo(c, to);
      expect(rows.map((x) => [x.kind, x.status, x.tx_hash])).toEqual([["withdrawal", "queued", null]]);
      expect(await c.anvil.publicClient.getTransactionCount({ address: hot })).toBe(hotNonce);
      expect((await reserves(c)).frozen).toBe(before.frozen + onHot);

      await unfreezeAddress(c.anvil, coin().token, hot, coin().kind);
      const done = await mining(c.anvil, () =>
        waitFor(async () => {
          const w = await call(c.svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
            headers: c.m.api,
          });
          return ["completed", "failed"].includes(w.body.data.status) ? w.body.data : null;
        }, 60_000),
      );
      expect(done.status, JSON.stringify(done)).toBe("completed");
      // Sent once, the fee kept: netAmount arrived.
      expect(await testUsdtBalance(c.anvil, coin().token, to)).toBe(units(done.netAmount));
      expect(done.netAmount).toBeGreaterThan(0);
      expect(await frozenRow(c, c.fromEvm(hot))).toMatchObject({ role: "hot_wallet" });
      expect((await frozenRow(c, c.fromEvm(hot)))?.released_at).not.toBeNull();
      expect(await frozenCustody(c.svc, ct)).toEqual(before);
    }, 150_000);

    // Last: a destroyed balance is a loss that stays in the books.
    const destroys = spec.name !== "USDC-ERC20";
    it.sequential(`${ct}: an own deposit address the issuer freezes is found by its event (no sweep needed): recorded, its coins moved to frozen custody${destroys ? ", destroyed: written off" : ""}; released: back`, async () => {
      const s = await call(c.svc.urls.sandbox, "/checkout/session", {
        headers: c.m.api,
        json: { amount: OWN, currencyType: ct },
      });
      expect(s.status, s.text).toBe(201);
      const address = s.body.data.walletAddress as string;
      await mintTestToken(c.anvil, coin().token, c.toEvm(address), units(OWN));
      await mining(c.anvil, () =>
        waitFor(async () => (await sessionStatus(c, s.body.data.id)) === "confirmed", 40_000),
      );
      const before = await frozenCustody(c.svc, ct);
      // Below the sweep threshold: the sweeper never looks at it; only the event finds the freeze.
      await freezeAddress(c.anvil, coin().token, c.toEvm(address), coin().kind);
      await mining(c.anvil, () =>
        waitFor(async () => (await frozenCustody(c.svc, ct)).frozen === before.frozen + units(OWN), 40_000),
      );
      expect(await frozenRow(c, address)).toMatchObject({ role: "deposit", released_at: null });
      const r = await reserves(c);
      expect(r.frozen).toBe(before.frozen + units(OWN));
      expect(await sweepsFrom(c, address)).toEqual([]);
      const owed = await balance(c.svc, c.m.api, ct);

      let writtenOff = 0n;
      if (destroys) {
        await destroyFrozenFunds(c.anvil, coin().token, c.toEvm(address), "tether");
        await mining(c.anvil, () =>
          waitFor(
            async () => (await frozenCustody(c.svc, ct)).writtenOff === before.writtenOff + units(OWN),
            40_000,
          ),
        );
        writtenOff = units(OWN);
        expect((await frozenCustody(c.svc, ct)).frozen).toBe(before.frozen);
        // Still owed to the merchant; the reserves expect it no longer on chain (afterEach: clean).
        expect(await balance(c.svc, c.m.api, ct)).toEqual(owed);
        expect((await reserves(c)).writtenOff).toBe(before.writtenOff + units(OWN));
      }

      await unfreezeAddress(c.anvil, coin().token, c.toEvm(address), coin().kind);
      await mining(c.anvil, () =>
        waitFor(async () => (await frozenRow(c, address))?.released_at != null, 40_000),
      );
      expect(await frozenCustody(c.svc, ct)).toEqual({
        frozen: before.frozen,
        writtenOff: before.writtenOff + writtenOff,
      });
    }, 120_000);
  });
}

async function sessionStatus(c: Chain, id: string) {
  const r = await call(c.svc.urls.sandbox, `/checkout/session/${id}`, { headers: c.m.api });
  return r.body.data?.status as string | undefined;
}

function frozenRow(c: Chain, address: string) {
  return c.svc.database.db
    .selectFrom("frozen_addresses")
    .select(["role", "released_at", "frozen_amount"])
    .where("network", "=", c.coin.currencyType)
    .where("environment", "=", "sandbox")
    .where("address", "=", address)
    .executeTakeFirst();
}

async function transaction(c: Chain, id: string) {
  const r = await call(c.svc.urls.sandbox, `/api/v1/public/transactions/${id}`, { headers: c.m.api });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

/**
 * A deposit from a sender the token's issuer freezes after it sent but before the deposit has its
 * confirmations: a fresh account holding `amount` pays a new checkout session's address, the issuer
 * freezes it in the next block, then blocks are mined until the watcher hands the transfer off.
 */
async function heldDeposit(c: Chain, amount: number) {
  const { coin } = c;
  const sender = freshAccount();
  await mintTestToken(c.anvil, coin.token, sender.address, units(amount));
  const s = await call(c.svc.urls.sandbox, "/checkout/session", {
    headers: c.m.api,
    json: { amount, currencyType: coin.currencyType },
  });
  expect(s.status, s.text).toBe(201);
  const sessionId = s.body.data.id as string;
  const address = s.body.data.walletAddress as string;
  const send = coin.kind === "tether" ? transferTestUsdt : transferTestToken;
  const sent = await send(c.anvil, coin.token, sender.key, c.toEvm(address), units(amount));
  expect(sent.status).toBe("success");
  const frozen = await freezeAddress(c.anvil, coin.token, sender.address, coin.kind);
  // The freeze is mined before the payment has its confirmations.
  expect(Number(frozen.blockNumber - sent.blockNumber) + 1).toBeLessThan(CONFIRMATIONS);
  const hook = await mining(c.anvil, () =>
    waitFor(
      () =>
        c.receiver.received
          .map((r) => JSON.parse(r.raw.toString("utf8")))
          .find((b) => b.data?.checkoutSessionId === sessionId && b.data?.transactionId !== sessionId)?.data,
      30_000,
    ),
  );
  return {
    sessionId,
    address,
    sender: sender.address,
    txHash: c.emulator ? c.emulator.tronTxId(sent.transactionHash) : sent.transactionHash,
    depositId: hook.transactionId as string,
    hook,
  };
}

function outgoing(c: Chain, kind: "sweep" | "return" | "withdrawal" | "gas_topup") {
  return c.svc.database.db
    .selectFrom("outgoing_transfers")
    .select([
      "intent_id",
      "kind",
      "status",
      "amount",
      "from_address",
      "to_address",
      "tx_hash",
      "after_intent_id",
    ])
    .where("network", "=", c.coin.currencyType)
    .where("environment", "=", "sandbox")
    .where("kind", "=", kind)
    .execute();
}

async function sweepsFrom(c: Chain, address: string) {
  const rows = await outgoing(c, "sweep");
  return rows.filter((r) => r.from_address && c.toEvm(r.from_address) === c.toEvm(address));
}

/** One sweep from `address`, confirmed. */
async function sweptOnce(c: Chain, address: string) {
  const s = await sweepsFrom(c, address);
  return s.length === 1 && s[0]!.status === "confirmed";
}

/** The return transfers to `sender` (one that failed unsigned has no `from_address`). */
async function returnsTo(c: Chain, sender: Hex) {
  const rows = await outgoing(c, "return");
  return rows.filter((r) => c.toEvm(r.to_address) === sender);
}

/** Every outgoing transfer (of any kind) to `to`. */
async function transfersTo(c: Chain, to: Hex) {
  const rows = await c.svc.database.db
    .selectFrom("outgoing_transfers")
    .select(["intent_id", "kind", "status", "tx_hash", "to_address"])
    .where("network", "=", c.coin.currencyType)
    .execute();
  return rows.filter((r) => c.toEvm(r.to_address) === to);
}

/** The token's Transfer events on chain (from genesis), by sender and/or recipient. */
function tokenTransfers(c: Chain, args: { from?: Hex; to?: Hex }) {
  return c.anvil.publicClient.getLogs({
    address: c.coin.token,
    event: TRANSFER,
    args,
    fromBlock: 0n,
    toBlock: "latest",
  });
}

/** Mines one block at a time (300 ms apart) until `cond` holds; no block after it does. */
async function mineUntil(anvil: AnvilNode, cond: () => Promise<boolean>, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error("mineUntil: timed out");
    await mineBlocks(anvil, 1);
    await sleep(300);
  }
}

/** `stablegate reserves reconcile`, this chain's sandbox report. */
async function reserves(c: Chain): Promise<ReserveReport> {
  const ctx = operatorContext(c.svc.config, c.svc.database.db);
  const reports = (await runOperatorCommand(ctx, "reserves.reconcile", {})) as ReserveReport[];
  const report = reports.find((x) => x.network === c.coin.currencyType && x.environment === "sandbox");
  expect(report, c.coin.currencyType).toBeDefined();
  return report!;
}

const show = (r: ReserveReport) => JSON.stringify(r, (_k, v) => (typeof v === "bigint" ? v.toString() : v));

/** The reserves cover what the ledger owes. */
async function expectReservesOk(c: Chain) {
  const r = await reserves(c);
  expect({ ok: r.ok, shortfall: r.shortfall }, show(r)).toEqual({ ok: true, shortfall: 0n });
}

/**
 * What the reserves count beyond what the ledger owes (on chain + in flight − owed). The hot wallet
 * was funded beyond what is owed, so a miscount shows here before it would show as a shortfall.
 */
async function reserveSurplus(c: Chain): Promise<bigint> {
  const r = await reserves(c);
  return r.onChain + r.inFlight - r.owed;
}
