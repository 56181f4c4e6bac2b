import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, verifyLegacy, waitFor } from "../webhooks/support.js";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "./support.js";

// The same confirmation flow as on the simulator, once on a real EVM node (anvil, 6-decimal ERC20)
// and once on the TRON HTTP API emulator over anvil: the sandbox configured as a "testnet".
const CONFIRMATIONS = 3;

interface Setup {
  svc: TestService;
  receiver: Receiver;
  m: SandboxMerchant;
  anvil: AnvilNode;
  /** Pays `units` to `address`; returns the hash as the chain's own explorer would show it. */
  pay(address: string, units: bigint): Promise<string>;
  stop(): Promise<void>;
}

async function setup(network: "USDT-ERC20" | "USDT-TRC20"): Promise<Setup> {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  let emulator: TronEmulator | undefined;
  let env: Record<string, string>;
  if (network === "USDT-ERC20") {
    env = {
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
    };
  } else {
    emulator = await startTronEmulator(anvil, token);
    env = {
      SANDBOX_TRC20_API_URL: emulator.url,
      SANDBOX_USDT_TRC20_CONTRACT: emulator.tokenAddress,
      CONFIRMATIONS_TRC20: `${CONFIRMATIONS}`,
    };
  }
  const svc = await startTestService({
    env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false", ...env },
  });
  const receiver = await startReceiver();
  const m = await sandboxMerchant(svc, receiver);
  return {
    svc,
    receiver,
    m,
    anvil,
    async pay(address, units) {
      const evmAddress = network === "USDT-ERC20" ? (address as Hex) : tronAddressToEvm(address);
      const receipt = await mintTestUsdt(anvil, token, evmAddress, units);
      return emulator ? emulator.tronTxId(receipt.transactionHash) : receipt.transactionHash;
    },
    async stop() {
      await receiver.close();
      await svc.close();
      await emulator?.stop();
      await anvil.stop();
    },
  };
}

for (const network of ["USDT-ERC20", "USDT-TRC20"] as const) {
  describe(`deposit confirmation on a real ${network} endpoint`, () => {
    let s: Setup;
    beforeAll(async () => {
      s = await setup(network);
    }, 60_000);
    afterAll(async () => {
      await s?.stop();
    });

    it(`confirms after ${CONFIRMATIONS} confirmations, credits, and sends the signed webhook`, async () => {
      const created = await call(s.svc.urls.sandbox, "/checkout/session", {
        headers: s.m.headers,
        json: { amount: 42.5, currencyType: network },
      });
      expect(created.status, created.text).toBe(201);
      const session = created.body.data;
      const txHash = await s.pay(session.walletAddress, 42_500_000n);
      // Not yet: the payment's own block is its first confirmation.
      await mineBlocks(s.anvil, CONFIRMATIONS - 2);
      await new Promise((r) => setTimeout(r, 2_500));
      const early = await call(s.svc.urls.sandbox, `/checkout/session/${session.id}`, {
        headers: s.m.headers,
      });
      expect(early.body.data.status).toBe("pending");
      expect(early.body.data.actualBalance).toBe(0);
      await mineBlocks(s.anvil, 1);
      const done = await waitFor(async () => {
        const r = await call(s.svc.urls.sandbox, `/checkout/session/${session.id}`, { headers: s.m.headers });
        return r.body.data.status === "confirmed" ? r.body.data : null;
      }, 20_000);
      expect(done.actualBalance).toBe(42.5);
      expect(done.blockchainTxHash).toBe(txHash);
      const hook = await waitFor(() => hooksFor(s.receiver, session.id)[0], 10_000);
      expect(hook.body.data).toMatchObject({
        status: "confirmed",
        blockchainTxHash: txHash,
        network,
        amount: 42.5,
      });
      expect(
        verifyLegacy(s.m.webhookSecret, hook.r.raw, hook.r.headers["x-webhook-signature"] as string),
      ).toBe(true);
      expect((await balanceOf(s.svc, s.m.headers, network)).available).toBe(42.5);
    }, 60_000);
  });
}
