/**
 * Test harness: a real `anvil` node (npm `@foundry-rs/anvil-linux-amd64`) on a free port, plus the
 * TestUSDT token (contracts/build/TestUSDT.json), the configurable TestToken
 * (contracts/build/TestToken.json) and helpers to mint, transfer and mine, and to freeze, unfreeze
 * and destroy an address's tokens as their issuers do (`freezeAddress`, issue #40).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Abi,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type PublicClient,
  type TestClient,
  type TransactionReceipt,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { type CurrencyType, currencyOf, type FreezeKind } from "../../../src/domain/currency.js";

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export const ANVIL_BIN = join(
  dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")),
  "bin",
  "anvil",
);

/** Anvil's funded account #0 (`test test ... junk` at m/44'/60'/0'/0/0). */
export const ANVIL_DEPLOYER_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}
export const TEST_USDT = JSON.parse(
  readFileSync(join(root, "contracts", "build", "TestUSDT.json"), "utf8"),
) as Artifact;

/**
 * TestToken (contracts/build/TestToken.json): an ERC20 whose name, symbol, decimals and freeze style
 * are constructor arguments, to emulate e.g. USDC (6 decimals, Circle's blacklist), Binance-Peg
 * USDT/USDC on BNB Smart Chain (18, no freeze) or USDT0 (Tether's blocked list).
 */
export const TEST_TOKEN = JSON.parse(
  readFileSync(join(root, "contracts", "build", "TestToken.json"), "utf8"),
) as Artifact;

export interface AnvilNode {
  rpcUrl: string;
  port: number;
  publicClient: PublicClient;
  testClient: TestClient<"anvil">;
  stop(): Promise<void>;
}

/** Starts anvil on a port it picks itself (`--port 0`) and resolves once it answers JSON-RPC. */
export async function startAnvil(extraArgs: string[] = []): Promise<AnvilNode> {
  const child = spawn(ANVIL_BIN, ["--host", "127.0.0.1", "--port", "0", ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const port = await waitForListening(child);
  const rpcUrl = `http://127.0.0.1:${port}`;
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ chain: foundry, transport, cacheTime: 0 });
  const testClient = createTestClient({ chain: foundry, mode: "anvil", transport });
  await publicClient.getChainId();
  return { rpcUrl, port, publicClient, testClient, stop: () => stopProcess(child) };
}

function waitForListening(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`anvil did not start:\n${out}`)), 20_000);
    const fail = (e: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(e);
    };
    child.on("error", fail);
    child.on("exit", (code) => fail(new Error(`anvil exited with ${code}:\n${out}`)));
    child.stderr?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /Listening on [\d.]+:(\d+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        // Keep draining stdout so anvil never blocks on a full pipe.
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        resolve(Number(m[1]));
      }
    });
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Deploys TestUSDT from anvil's account #0; returns its address. */
export async function deployTestUsdt(node: AnvilNode): Promise<Hex> {
  const hash = await (await chainWallet(node, ANVIL_DEPLOYER_KEY)).deployContract({
    abi: TEST_USDT.abi,
    bytecode: TEST_USDT.bytecode,
  });
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error("TestUSDT deployment failed");
  return receipt.contractAddress;
}

/**
 * A wallet for the chain id the node actually runs (`startAnvil(["--chain-id", "56"])`): viem
 * refuses to sign for a node that reports another id than its chain's.
 */
async function chainWallet(node: AnvilNode, privateKey: Hex) {
  const id = await node.publicClient.getChainId();
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: id === foundry.id ? foundry : defineChain({ ...foundry, id }),
    transport: http(node.rpcUrl),
  });
}

/**
 * Moves `amount` of a test token from `from` without its key: anvil impersonates the account (as
 * if its owner signed), for a test that takes coins out of one of the gateway's own wallets.
 */
export async function moveTestTokenAs(node: AnvilNode, token: Hex, from: Hex, to: Hex, amount: bigint) {
  const id = await node.publicClient.getChainId();
  await node.testClient.impersonateAccount({ address: from });
  // Gas for it, as the other helpers lend it (a deposit address holds no ETH).
  const gas = await node.publicClient.getBalance({ address: from });
  if (gas < 10n ** 18n) await node.testClient.setBalance({ address: from, value: 10n ** 18n });
  try {
    const client = createWalletClient({
      chain: id === foundry.id ? foundry : defineChain({ ...foundry, id }),
      transport: http(node.rpcUrl),
    });
    const hash = await client.writeContract({
      account: from,
      address: token,
      abi: TEST_USDT.abi,
      functionName: "transfer",
      args: [to, amount],
    });
    const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`transfer as ${from} reverted`);
  } finally {
    await node.testClient.stopImpersonatingAccount({ address: from });
  }
}

/** The freeze kinds TestToken emulates (`tether`, the original Tether contract, is TestUSDT's). */
export type TestTokenFreeze = Exclude<FreezeKind, "tether">;

/** TestToken's constructor `freezeStyle_` of each kind it emulates. */
const TEST_TOKEN_FREEZE_STYLE: Readonly<Record<TestTokenFreeze, number>> = {
  none: 0,
  usdc: 1,
  "tether-blocked": 2,
};

/**
 * The TestToken freeze style of the registry's kind for `currencyType`, for a token that stands for
 * that network's (`deployTestToken(node, { …, freeze: testTokenFreezeOf("USDT-POLYGON") })`). The
 * original Tether contract (`tether`: USDT-ERC20, USDT-TRC20) is TestUSDT's: it throws.
 */
export function testTokenFreezeOf(currencyType: CurrencyType): TestTokenFreeze {
  const kind = currencyOf(currencyType).freeze;
  if (kind === "tether")
    throw new Error(`${currencyType} freezes as Tether's original contract: deploy TestUSDT`);
  return kind;
}

/**
 * Deploys TestToken from anvil's account #0 with the given symbol and decimals (name defaults to the
 * symbol); returns its address. Works on any `--chain-id`.
 *
 * `freeze`: how its issuer freezes addresses (TestToken's freeze style), to match the registry's
 * `FreezeKind` of the network it stands for (`testTokenFreezeOf`); default `usdc` for the symbol
 * USDC, `none` otherwise. A token of another kind than the registry's makes `isFrozen` fail (the
 * views of other kinds revert), e.g. a USDT-POLYGON token needs `freeze: "tether-blocked"`.
 *
 * TestToken's mint/transfer/balanceOf ABI is the same as TestUSDT's, so the TestUSDT helpers encode
 * the right calls for it; every helper signs for the chain id the node runs, and testUsdtBalance only
 * reads, so either token works with either family of helpers on any chain.
 */
export async function deployTestToken(
  node: AnvilNode,
  options: { name?: string; symbol: string; decimals: number; freeze?: TestTokenFreeze },
): Promise<Hex> {
  const freeze = options.freeze ?? (options.symbol === "USDC" ? "usdc" : "none");
  const client = await chainWallet(node, ANVIL_DEPLOYER_KEY);
  const hash = await client.deployContract({
    abi: TEST_TOKEN.abi,
    bytecode: TEST_TOKEN.bytecode,
    args: [options.name ?? options.symbol, options.symbol, options.decimals, TEST_TOKEN_FREEZE_STYLE[freeze]],
  });
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error(`TestToken (${options.symbol}) deployment failed`);
  return receipt.contractAddress;
}

/** mintTestUsdt for any chain id: mints `amount` base units of a TestToken (or TestUSDT) to `to`; returns the receipt. */
export async function mintTestToken(node: AnvilNode, token: Hex, to: Hex, amount: bigint) {
  const client = await chainWallet(node, ANVIL_DEPLOYER_KEY);
  const hash = await client.writeContract({
    address: token,
    abi: TEST_TOKEN.abi,
    functionName: "mint",
    args: [to, amount],
  });
  return node.publicClient.waitForTransactionReceipt({ hash });
}

/** transferTestUsdt for any chain id: `transfer(to, amount)` signed by `fromKey`, after funding the sender for gas. */
export async function transferTestToken(node: AnvilNode, token: Hex, fromKey: Hex, to: Hex, amount: bigint) {
  const client = await chainWallet(node, fromKey);
  await node.testClient.setBalance({ address: client.account.address, value: 10n ** 20n });
  const hash = await client.writeContract({
    address: token,
    abi: TEST_TOKEN.abi,
    functionName: "transfer",
    args: [to, amount],
  });
  return node.publicClient.waitForTransactionReceipt({ hash });
}

/** sendMintTestUsdt for any chain id: sends `mint(to, amount)` without waiting for a block. */
export async function sendMintTestToken(node: AnvilNode, token: Hex, to: Hex, amount: bigint): Promise<Hex> {
  const client = await chainWallet(node, ANVIL_DEPLOYER_KEY);
  return client.writeContract({
    address: token,
    abi: TEST_TOKEN.abi,
    functionName: "mint",
    args: [to, amount],
    gas: 200_000n,
  });
}

/** Mints `amount` base units to `to` (one block with automining); returns the receipt. */
export async function mintTestUsdt(node: AnvilNode, token: Hex, to: Hex, amount: bigint) {
  const hash = await (await chainWallet(node, ANVIL_DEPLOYER_KEY)).writeContract({
    address: token,
    abi: TEST_USDT.abi,
    functionName: "mint",
    args: [to, amount],
  });
  return node.publicClient.waitForTransactionReceipt({ hash });
}

/** `transfer(to, amount)` signed by `fromKey`; funds the sender with ETH for gas first. */
export async function transferTestUsdt(node: AnvilNode, token: Hex, fromKey: Hex, to: Hex, amount: bigint) {
  const client = await chainWallet(node, fromKey);
  await node.testClient.setBalance({ address: client.account.address, value: 10n ** 20n });
  const hash = await client.writeContract({
    address: token,
    abi: TEST_USDT.abi,
    functionName: "transfer",
    args: [to, amount],
  });
  return node.publicClient.waitForTransactionReceipt({ hash });
}

export async function mineBlocks(node: AnvilNode, blocks: number): Promise<void> {
  await node.testClient.mine({ blocks });
}

/** Turns anvil's automining off (or on): transactions then wait in the pool until a block is mined. */
export async function setAutomine(node: AnvilNode, on: boolean): Promise<void> {
  await node.testClient.setAutomine(on);
}

/** Sends `mint(to, amount)` without waiting for a block (automine off: it waits in the pool). */
export async function sendMintTestUsdt(node: AnvilNode, token: Hex, to: Hex, amount: bigint): Promise<Hex> {
  return (await chainWallet(node, ANVIL_DEPLOYER_KEY)).writeContract({
    address: token,
    abi: TEST_USDT.abi,
    functionName: "mint",
    args: [to, amount],
    gas: 200_000n,
  });
}

/** Mines one block whose timestamp is `timestampSec` (what the pool holds goes into it); returns its number. */
export async function mineBlockAt(node: AnvilNode, timestampSec: number): Promise<number> {
  await node.testClient.setNextBlockTimestamp({ timestamp: BigInt(timestampSec) });
  await node.testClient.mine({ blocks: 1 });
  return Number(await node.publicClient.getBlockNumber());
}

/** The test token's balance of `address`, read from the chain. */
export function testUsdtBalance(node: AnvilNode, token: Hex, address: string): Promise<bigint> {
  return node.publicClient.readContract({
    address: token,
    abi: TEST_USDT.abi,
    functionName: "balanceOf",
    args: [address as Hex],
  }) as Promise<bigint>;
}

/** The issuer-side freeze functions of each kind: TestUSDT's for `tether`, TestToken's for the others. */
const FREEZE_FUNCTIONS: Readonly<
  Record<Exclude<FreezeKind, "none">, { abi: Abi; freeze: string; unfreeze: string }>
> = {
  tether: {
    abi: TEST_USDT.abi,
    freeze: "addBlackList",
    unfreeze: "removeBlackList",
  },
  "tether-blocked": {
    abi: TEST_TOKEN.abi,
    freeze: "addToBlockedList",
    unfreeze: "removeFromBlockedList",
  },
  usdc: { abi: TEST_TOKEN.abi, freeze: "blacklist", unfreeze: "unBlacklist" },
};

/** Tether's functions that destroy a frozen address's tokens (Circle's FiatToken has none). */
const DESTROY_FUNCTIONS = {
  tether: { abi: TEST_USDT.abi, destroy: "destroyBlackFunds" },
  "tether-blocked": { abi: TEST_TOKEN.abi, destroy: "destroyBlockedFunds" },
} as const;

/** Sends `functionName(address)` to `token` from the deployer (the tokens' owner) and waits for it. */
async function ownerCall(node: AnvilNode, token: Hex, abi: Abi, functionName: string, address: Hex) {
  const client = await chainWallet(node, ANVIL_DEPLOYER_KEY);
  const hash = await client.writeContract({ address: token, abi, functionName, args: [address] });
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`${functionName}(${address}) reverted`);
  return receipt;
}

/**
 * Freezes `address` on a deployed token as its issuer does, from the deployer (its owner): `kind`
 * says which token and function — `tether`: TestUSDT `addBlackList`; `usdc`: TestToken (style 1)
 * `blacklist`; `tether-blocked`: TestToken (style 2) `addToBlockedList`. Returns the receipt
 * (`AddedBlackList`, `Blacklisted` or `BlockPlaced` in its logs).
 */
export function freezeAddress(
  node: AnvilNode,
  token: Hex,
  address: Hex,
  kind: Exclude<FreezeKind, "none">,
): Promise<TransactionReceipt> {
  const f = FREEZE_FUNCTIONS[kind];
  return ownerCall(node, token, f.abi, f.freeze, address);
}

/** Undoes `freezeAddress`: `removeBlackList`, `unBlacklist` or `removeFromBlockedList`. */
export function unfreezeAddress(
  node: AnvilNode,
  token: Hex,
  address: Hex,
  kind: Exclude<FreezeKind, "none">,
): Promise<TransactionReceipt> {
  const f = FREEZE_FUNCTIONS[kind];
  return ownerCall(node, token, f.abi, f.unfreeze, address);
}

/**
 * Destroys what a frozen `address` holds, as Tether does: `tether`: TestUSDT `destroyBlackFunds`
 * (balance zeroed, supply lowered, `DestroyedBlackFunds`, no Transfer event); `tether-blocked`:
 * TestToken `destroyBlockedFunds` (a burn: Transfer to the zero address, then
 * `DestroyedBlockedFunds`). The address must be frozen first. Circle cannot destroy (no `usdc`).
 */
export function destroyFrozenFunds(
  node: AnvilNode,
  token: Hex,
  address: Hex,
  kind: "tether" | "tether-blocked",
): Promise<TransactionReceipt> {
  const f = DESTROY_FUNCTIONS[kind];
  return ownerCall(node, token, f.abi, f.destroy, address);
}

/** Mines a block every `everyMs` in the background (transfers get their confirmations while a test waits); returns the stop. */
export function keepMining(node: AnvilNode, everyMs = 300): () => void {
  const timer = setInterval(() => void mineBlocks(node, 1).catch(() => {}), everyMs);
  return () => clearInterval(timer);
}
