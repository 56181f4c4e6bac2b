import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import { type OperatorContext, runOperatorCommand } from "../../src/operator/commands.js";
import type { RescanResult } from "../../src/watcher/index.js";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "../deposits/support.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";

// Issue #22 "Rescan": a provider drops the log of a payment while the watcher passes its block
// (the watcher skips it, as a real provider's bad answer would make it); `chain rescan` over the
// range (the operator command the CLI and the control socket run) credits it once; a second
// rescan credits nothing.

const CONFIRMATIONS = 2;
let anvil: AnvilNode;
let token: Hex;
let proxy: RpcProxy;
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
let ctx: OperatorContext;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  proxy = await startRpcProxy(anvil.rpcUrl);
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      SANDBOX_ERC20_RPC_URL: proxy.url,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
  ctx = operatorContext(svc.config, svc.database.db);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await proxy?.stop();
  await anvil?.stop();
});

const rescan = (from: number, to: number) =>
  runOperatorCommand(ctx, "chain.rescan", {
    network: "USDT-ERC20",
    environment: "sandbox",
    from,
    to,
  }) as Promise<RescanResult>;

async function cursor(): Promise<number> {
  const row = await svc.database.db
    .selectFrom("chain_cursors")
    .select("cursor_block")
    .where("network", "=", "USDT-ERC20")
    .where("environment", "=", "sandbox")
    .executeTakeFirst();
  return row ? Number(row.cursor_block) : -1;
}

describe("chain rescan", () => {
  it("credits a transfer the watcher skipped, once; a second rescan credits nothing", async () => {
    const created = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.headers,
      json: { amount: 7.25, currencyType: "USDT-ERC20" },
    });
    expect(created.status, created.text).toBe(201);
    const session = created.body.data as { id: string; walletAddress: Hex };
    const topic = `0x${session.walletAddress.slice(2).toLowerCase().padStart(64, "0")}`;
    // The provider leaves out every log to this address: the watcher scans past the payment.
    proxy.rewriteResponse = (answer) => {
      const a = answer as { result?: unknown };
      if (Array.isArray(a.result))
        a.result = a.result.filter((l: { topics?: string[] }) => l.topics?.[2]?.toLowerCase() !== topic);
      return answer;
    };
    const receipt = await mintTestUsdt(anvil, token, session.walletAddress, 7_250_000n);
    const paidIn = Number(receipt.blockNumber);
    await waitFor(async () => {
      await mineBlocks(anvil, 1);
      return (await cursor()) > paidIn + CONFIRMATIONS;
    }, 30_000);
    proxy.rewriteResponse = undefined;
    const skipped = await call(svc.urls.sandbox, `/checkout/session/${session.id}`, { headers: m.headers });
    expect(skipped.body.data.status).toBe("pending");
    expect((await balanceOf(svc, m.headers, "USDT-ERC20")).available).toBe(0);

    const from = Math.max(0, paidIn - 3);
    const first = await rescan(from, paidIn + 3);
    expect(first).toMatchObject({ fromBlock: from, toBlock: paidIn + 3, scannedBlocks: paidIn + 4 - from });
    expect(first).toMatchObject({ matched: 1, recorded: 1, alreadyKnown: 0 });
    const done = await waitFor(async () => {
      await mineBlocks(anvil, 1);
      const r = await call(svc.urls.sandbox, `/checkout/session/${session.id}`, { headers: m.headers });
      return r.body.data.status === "confirmed" ? r.body.data : null;
    }, 30_000);
    expect(done.actualBalance).toBe(7.25);
    expect(done.blockchainTxHash).toBe(receipt.transactionHash);
    await waitFor(() => hooksFor(receiver, session.id).length >= 1, 10_000);

    const second = await rescan(from, paidIn + 3);
    expect(second).toMatchObject({ matched: 1, recorded: 0, alreadyKnown: 1 });
    await mineBlocks(anvil, 3);
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await balanceOf(svc, m.headers, "USDT-ERC20")).available).toBe(7.25);
    expect(hooksFor(receiver, session.id).map((h) => h.body.data.status)).toEqual(["confirmed"]);
  }, 90_000);

  it("refuses a bad range, network or environment with a validation error naming the field", async () => {
    const head = Number(await anvil.publicClient.getBlockNumber());
    const fieldOf = async (args: Record<string, unknown>) => {
      try {
        await runOperatorCommand(ctx, "chain.rescan", {
          network: "USDT-ERC20",
          environment: "sandbox",
          ...args,
        });
        return "accepted";
      } catch (err) {
        return (
          (err as { details?: { fields?: { field: string }[] } }).details?.fields?.[0]?.field ?? String(err)
        );
      }
    };
    expect(await fieldOf({ from: 5, to: 4 })).toBe("to");
    expect(await fieldOf({ from: -1, to: 4 })).toBe("from");
    expect(await fieldOf({ from: "x", to: 4 })).toBe("from");
    expect(await fieldOf({ from: 0, to: head + 1000 })).toBe("to");
    expect(await fieldOf({ from: 0, to: 200_000 })).toBe("to");
    expect(await fieldOf({ network: "USDT-FOO", from: 0, to: 1 })).toBe("network");
    expect(await fieldOf({ environment: "staging", from: 0, to: 1 })).toBe("environment");
  });
});
