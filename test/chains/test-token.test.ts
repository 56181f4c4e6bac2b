import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AnvilNode,
  deployTestToken,
  mintTestToken,
  startAnvil,
  TEST_TOKEN,
  testUsdtBalance,
  transferTestToken,
} from "../support/chain/anvil.js";

describe("TestToken on anvil (BNB Smart Chain emulation)", () => {
  let node: AnvilNode;
  let token: Hex;

  beforeAll(async () => {
    node = await startAnvil(["--chain-id", "56"]);
    token = await deployTestToken(node, { name: "Binance-Peg BSC-USD", symbol: "USDT", decimals: 18 });
  });

  afterAll(async () => {
    await node?.stop();
  });

  it("runs on chain id 56", async () => {
    expect(await node.publicClient.getChainId()).toBe(56);
  });

  it("has the name, symbol and decimals chosen at deployment", async () => {
    const read = (functionName: "name" | "symbol" | "decimals") =>
      node.publicClient.readContract({ address: token, abi: TEST_TOKEN.abi, functionName });
    expect(await read("decimals")).toBe(18);
    expect(await read("symbol")).toBe("USDT");
    expect(await read("name")).toBe("Binance-Peg BSC-USD");
  });

  it("defaults the name to the symbol", async () => {
    const usdc = await deployTestToken(node, { symbol: "USDC", decimals: 6 });
    const read = (functionName: "name" | "decimals") =>
      node.publicClient.readContract({ address: usdc, abi: TEST_TOKEN.abi, functionName });
    expect(await read("name")).toBe("USDC");
    expect(await read("decimals")).toBe(6);
  });

  it("mints 18-decimal amounts and reads the balance back", async () => {
    const to: Hex = "0x00000000000000000000000000000000000000b5";
    const amount = 10_000_000_123_400_000_000n; // 10.0000001234 tokens at 18 decimals
    const receipt = await mintTestToken(node, token, to, amount);
    expect(receipt.status).toBe("success");
    expect(await testUsdtBalance(node, token, to)).toBe(amount);
  });

  it("transfers on chain 56", async () => {
    const fromKey = generatePrivateKey();
    const from = privateKeyToAccount(fromKey).address;
    const to: Hex = "0x00000000000000000000000000000000000000b6";
    await mintTestToken(node, token, from, 5n * 10n ** 18n);
    const receipt = await transferTestToken(node, token, fromKey, to, 1_500_000_000_000_000_000n);
    expect(receipt.status).toBe("success");
    expect(await testUsdtBalance(node, token, to)).toBe(1_500_000_000_000_000_000n);
    expect(await testUsdtBalance(node, token, from)).toBe(3_500_000_000_000_000_000n);
  });
});
