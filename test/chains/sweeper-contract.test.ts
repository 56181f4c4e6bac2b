/**
 * StablegateSweeper (contracts/StablegateSweeper.sol) on a real anvil node (Prague: EIP-7702): the
 * committed creation code is what the compiler gives, it deploys through the CREATE2 deployer, deposit
 * addresses without ETH delegate to it with authorizations that another account (the gas tank) puts
 * in its own transaction, one `sweepMany` moves their tokens to the hot wallet — and no call, caller,
 * authorization or hostile token moves them anywhere else. A sweeper is bound to one token (one
 * currency type): another token at a delegated address (USDC at a deposit address delegated to USDT's
 * sweeper) cannot be moved by it at all.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Abi,
  concatHex,
  createWalletClient,
  encodeAbiParameters,
  encodeErrorResult,
  encodeFunctionData,
  getAddress,
  getContractAddress,
  type Hex,
  http,
  keccak256,
  parseEther,
  parseEventLogs,
  type SignedAuthorization,
  type TransactionReceipt,
  toHex,
  zeroAddress,
} from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileSweeper } from "../../scripts/compile-sweeper.js";
import { SWEEPER_ABI, SWEEPER_COMPILER, SWEEPER_CREATION_CODE } from "../../src/chains/evm/sweeper-code.js";
import {
  type AnvilNode,
  deployTestToken,
  deployTestUsdt,
  freezeAddress,
  mintTestToken,
  mintTestUsdt,
  startAnvil,
  TEST_USDT,
  testUsdtBalance,
} from "../support/chain/anvil.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const readArtifact = (name: string) =>
  JSON.parse(readFileSync(join(root, "contracts", "build", `${name}.json`), "utf8")) as {
    compiler: string;
    abi: Abi;
    bytecode: Hex;
  };
const HOSTILE = readArtifact("HostileToken");

const CREATE2_DEPLOYER: Hex = "0x4e59b44847b379578588920ca78fbf26c0b4956c";
const SALT: Hex = keccak256(toHex("stablegate.sweeper.v1"));
const USDT = (units: number) => BigInt(units) * 1_000_000n; // 6 decimals

// HostileToken's modes and attempt kinds (contracts/test/HostileToken.sol).
const HONEST = 0;
const ATTACK = 1;
const RETURN_FALSE = 2;
const RETURN_GARBAGE = 3;
const ATTEMPT = {
  1: "reenter sweep",
  2: "forged transfer",
  3: "transferFrom",
  4: "reenter sweepMany",
  5: "unknown selector",
  6: "empty call",
  7: "sweep self",
} as const;

interface Deposit {
  key: Hex;
  account: PrivateKeyAccount;
  address: Hex;
}

describe("StablegateSweeper (EIP-7702) on anvil", () => {
  let node: AnvilNode;
  let usdt: Hex;
  let tank: ReturnType<typeof walletOf>;
  /** The sweeper for (`hot`, `usdt`), deployed through the CREATE2 deployer. */
  let sweeper: Hex;
  const hot = privateKeyToAccount(generatePrivateKey()).address;
  const attacker = privateKeyToAccount(generatePrivateKey()).address;

  function walletOf(key: Hex) {
    return createWalletClient({
      account: privateKeyToAccount(key),
      chain: foundry,
      transport: http(node.rpcUrl),
    });
  }

  /** A fresh account with 100 ETH (a random caller, or the gas tank). */
  async function funded() {
    const wallet = walletOf(generatePrivateKey());
    await node.testClient.setBalance({ address: wallet.account.address, value: parseEther("100") });
    return wallet;
  }

  const receiptOf = (hash: Hex) => node.publicClient.waitForTransactionReceipt({ hash });

  /** The creation code ‖ abi.encode(hotWallet, token). */
  function initCode(hotWallet: Hex, token: Hex): Hex {
    return concatHex([
      SWEEPER_CREATION_CODE,
      encodeAbiParameters([{ type: "address" }, { type: "address" }], [hotWallet, token]),
    ]);
  }

  /** Deploys a sweeper for (`hotWallet`, `token`) through the CREATE2 deployer; returns its predicted address. */
  async function deploySweeper(hotWallet: Hex, token: Hex): Promise<Hex> {
    const address = getContractAddress({
      opcode: "CREATE2",
      from: CREATE2_DEPLOYER,
      salt: SALT,
      bytecode: initCode(hotWallet, token),
    });
    const receipt = await receiptOf(
      await tank.sendTransaction({
        to: CREATE2_DEPLOYER,
        data: concatHex([SALT, initCode(hotWallet, token)]),
      }),
    );
    expect(receipt.status).toBe("success");
    return address;
  }

  /** A fresh deposit key holding `amount` TestUSDT and no ETH. */
  async function deposit(amount: bigint): Promise<Deposit> {
    const key = generatePrivateKey();
    const account = privateKeyToAccount(key);
    if (amount > 0n) await mintTestUsdt(node, usdt, account.address, amount);
    return { key, account, address: account.address };
  }

  /** The deposit's authorization of `contract`, at its current nonce (another account sends it). */
  function authorize(d: Deposit, contract: Hex): Promise<SignedAuthorization> {
    return walletOf(d.key).signAuthorization({ contractAddress: contract });
  }

  /** `sweepMany` from the gas tank to `to` (default the sweeper), with `authorizationList` if given. */
  async function sweepMany(
    token: Hex,
    accounts: Hex[],
    amounts: bigint[],
    options: {
      authorizationList?: SignedAuthorization[];
      to?: Hex;
      from?: ReturnType<typeof walletOf>;
      gas?: bigint;
    } = {},
  ): Promise<TransactionReceipt> {
    const wallet = options.from ?? tank;
    const call = {
      address: options.to ?? sweeper,
      abi: SWEEPER_ABI,
      functionName: "sweepMany",
      args: [token, accounts, amounts],
      gas: options.gas,
    } as const;
    const hash = options.authorizationList
      ? await wallet.writeContract({ ...call, authorizationList: options.authorizationList })
      : await wallet.writeContract(call);
    const receipt = await receiptOf(hash);
    expect(receipt.status).toBe("success");
    return receipt;
  }

  const balance = (address: Hex, token = usdt) => testUsdtBalance(node, token, address);
  const codeOf = async (address: Hex) => (await node.publicClient.getCode({ address })) ?? "0x";
  const delegationTo = (contract: Hex) => concatHex(["0xef0100", contract]).toLowerCase();

  /** The token's Transfer logs of a receipt. */
  function transfers(receipt: TransactionReceipt, token = usdt) {
    return parseEventLogs({ abi: TEST_USDT.abi, logs: receipt.logs, eventName: "Transfer" })
      .filter((l) => l.address.toLowerCase() === token.toLowerCase())
      .map((l) => l.args as unknown as { from: Hex; to: Hex; value: bigint });
  }
  const failedAccounts = (receipt: TransactionReceipt) =>
    parseEventLogs({ abi: SWEEPER_ABI, logs: receipt.logs, eventName: "SweepFailed" }).map((l) =>
      l.args.account.toLowerCase(),
    );

  /** Sends a transaction with a fixed gas limit (no estimate), so a reverting one is mined. */
  async function sendMined(wallet: ReturnType<typeof walletOf>, tx: { to: Hex; data?: Hex; value?: bigint }) {
    return receiptOf(await wallet.sendTransaction({ ...tx, gas: 300_000n }));
  }

  beforeAll(async () => {
    node = await startAnvil(["--hardfork", "prague"]);
    usdt = await deployTestUsdt(node);
    tank = await funded();
    sweeper = await deploySweeper(hot, usdt);
  });

  afterAll(async () => {
    await node?.stop();
  });

  it("is reproducible: solc gives exactly the committed creation code, ABI and compiler", () => {
    const compiled = compileSweeper();
    expect(compiled.compiler).toBe(SWEEPER_COMPILER);
    expect(compiled.bytecode).toBe(SWEEPER_CREATION_CODE);
    expect(compiled.abi).toEqual(SWEEPER_ABI);
    const artifact = readArtifact("StablegateSweeper");
    expect(artifact).toMatchObject({ compiler: SWEEPER_COMPILER, bytecode: SWEEPER_CREATION_CODE });
    expect(artifact.abi).toEqual(SWEEPER_ABI);
    expect(SWEEPER_COMPILER).toMatch(/^solc 0\.8\.37\+commit\./);
  }, 60_000);

  it("deploys through the CREATE2 deployer at the predicted address, for its hot wallet and token", async () => {
    expect(await codeOf(CREATE2_DEPLOYER)).not.toBe("0x");
    expect((await codeOf(sweeper)).length).toBeGreaterThan(2);
    expect(
      await node.publicClient.readContract({ address: sweeper, abi: SWEEPER_ABI, functionName: "hotWallet" }),
    ).toBe(hot);
    expect(
      await node.publicClient.readContract({ address: sweeper, abi: SWEEPER_ABI, functionName: "token" }),
    ).toBe(getAddress(usdt));
    // The same salt and code again: the address is taken, the deployer reverts.
    const again = await sendMined(tank, {
      to: CREATE2_DEPLOYER,
      data: concatHex([SALT, initCode(hot, usdt)]),
    });
    expect(again.status).toBe("reverted");
    // Another token, same hot wallet: another address.
    const otherToken = privateKeyToAccount(generatePrivateKey()).address;
    expect(
      getContractAddress({
        opcode: "CREATE2",
        from: CREATE2_DEPLOYER,
        salt: SALT,
        bytecode: initCode(hot, otherToken),
      }),
    ).not.toBe(sweeper);
  });

  it("two deposits without ETH authorise the sweeper; ONE gas-tank transaction sweeps both", async () => {
    const a = await deposit(USDT(100));
    const b = await deposit(USDT(250) + 7n);
    const hotBefore = await balance(hot);
    const authorizationList = [await authorize(a, sweeper), await authorize(b, sweeper)];
    expect(authorizationList.map((x) => x.nonce)).toEqual([0, 0]);

    const receipt = await sweepMany(usdt, [a.address, b.address], [USDT(100), USDT(250) + 7n], {
      authorizationList,
    });
    const tx = await node.publicClient.getTransaction({ hash: receipt.transactionHash });
    expect(tx.type).toBe("eip7702");
    expect(tx.from.toLowerCase()).toBe(tank.account.address.toLowerCase());
    console.log(
      `sweepMany of 2 accounts WITH their 2 authorizations: gasUsed ${receipt.gasUsed} (${receipt.gasUsed / 2n} per account)`,
    );

    expect(await balance(a.address)).toBe(0n);
    expect(await balance(b.address)).toBe(0n);
    expect(await balance(hot)).toBe(hotBefore + USDT(350) + 7n);
    expect(transfers(receipt)).toEqual([
      { from: a.address, to: hot, value: USDT(100) },
      { from: b.address, to: hot, value: USDT(250) + 7n },
    ]);
    expect(failedAccounts(receipt)).toEqual([]);
    for (const d of [a, b]) {
      expect(await node.publicClient.getBalance({ address: d.address })).toBe(0n);
      expect(await codeOf(d.address)).toBe(delegationTo(sweeper));
      // The authorization used the account's nonce 0.
      expect(await node.publicClient.getTransactionCount({ address: d.address })).toBe(1);
    }

    // Already delegated: the next sweepMany needs no authorization; an exact partial amount moves
    // only that amount.
    await mintTestUsdt(node, usdt, a.address, USDT(40));
    await mintTestUsdt(node, usdt, b.address, USDT(60));
    const second = await sweepMany(usdt, [a.address, b.address], [USDT(40), USDT(60) - 1_234n]);
    console.log(
      `sweepMany of 2 accounts WITHOUT authorizations (already delegated): gasUsed ${second.gasUsed} (${second.gasUsed / 2n} per account)`,
    );
    expect(await balance(a.address)).toBe(0n);
    expect(await balance(b.address)).toBe(1_234n);
    expect(await balance(hot)).toBe(hotBefore + USDT(450) + 7n - 1_234n);
    expect(transfers(second).map((t) => t.to)).toEqual([hot, hot]);
    expect(await node.publicClient.getBalance({ address: a.address })).toBe(0n);
  });

  it("gas: batches of 1 and 5 accounts, with and without authorizations", async () => {
    const lines: string[] = [];
    for (const n of [1, 5]) {
      const ds: Deposit[] = [];
      // One after the other: the mints share the deployer's nonce.
      for (let i = 0; i < n; i++) ds.push(await deposit(USDT(10)));
      const authorizationList: SignedAuthorization[] = [];
      for (const d of ds) authorizationList.push(await authorize(d, sweeper));
      const amounts = ds.map(() => USDT(10));
      const first = await sweepMany(
        usdt,
        ds.map((d) => d.address),
        amounts,
        { authorizationList },
      );
      for (const d of ds) await mintTestUsdt(node, usdt, d.address, USDT(10));
      const again = await sweepMany(
        usdt,
        ds.map((d) => d.address),
        amounts,
      );
      expect(transfers(first)).toHaveLength(n);
      expect(transfers(again)).toHaveLength(n);
      lines.push(
        `${n} account(s): with authorizations ${first.gasUsed} (${first.gasUsed / BigInt(n)}/account), without ${again.gasUsed} (${again.gasUsed / BigInt(n)}/account)`,
      );
    }
    console.log(`sweepMany gasUsed (each sweep empties the deposit):\n  ${lines.join("\n  ")}`);
  });

  describe("another destination: nothing reaches anywhere but the hot wallet", () => {
    let a: Deposit;
    beforeAll(async () => {
      a = await deposit(USDT(10));
      await sweepMany(usdt, [a.address], [0n], { authorizationList: [await authorize(a, sweeper)] });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper));
    });

    it("sweep called directly on a delegated account by a random caller pays the hot wallet", async () => {
      const stranger = await funded();
      const hotBefore = await balance(hot);
      const receipt = await receiptOf(
        await stranger.writeContract({
          address: a.address,
          abi: SWEEPER_ABI,
          functionName: "sweep",
          args: [usdt, USDT(3)],
        }),
      );
      expect(receipt.status).toBe("success");
      expect(transfers(receipt)).toEqual([{ from: a.address, to: hot, value: USDT(3) }]);
      expect(await balance(hot)).toBe(hotBefore + USDT(3));
      expect(await balance(a.address)).toBe(USDT(7));
    });

    it("raw calldata (unknown selectors, a forged transfer(address,uint256)) reverts: no fallback", async () => {
      const stranger = await funded();
      const before = await balance(a.address);
      const forged = encodeFunctionData({
        abi: TEST_USDT.abi,
        functionName: "transfer",
        args: [attacker, before],
      });
      const approve = encodeFunctionData({
        abi: TEST_USDT.abi,
        functionName: "approve",
        args: [attacker, 2n ** 256n - 1n],
      });
      const calls: Hex[] = [
        "0xdeadbeef",
        forged,
        approve,
        // execute(address,uint256,bytes), a smart account's usual entry point.
        encodeFunctionData({
          abi: [
            {
              type: "function",
              name: "execute",
              inputs: [
                { name: "to", type: "address" },
                { name: "value", type: "uint256" },
                { name: "data", type: "bytes" },
              ],
              outputs: [],
              stateMutability: "nonpayable",
            },
          ],
          functionName: "execute",
          args: [usdt, 0n, forged],
        }),
      ];
      for (const data of calls) {
        await expect(node.publicClient.call({ to: a.address, data })).rejects.toThrow();
        const receipt = await sendMined(stranger, { to: a.address, data });
        expect(receipt.status, data).toBe("reverted");
      }
      // The sweeper contract itself has no fallback either.
      expect((await sendMined(stranger, { to: sweeper, data: forged })).status).toBe("reverted");
      expect(await balance(a.address)).toBe(before);
      expect(await balance(attacker)).toBe(0n);
    });

    it("plain ETH to a delegated address is taken, as by an account without code (a gas top-up for a held deposit's return); ETH with a sweep call reverts", async () => {
      const stranger = await funded();
      const withSweep = await sendMined(stranger, {
        to: a.address,
        value: 1n,
        data: encodeFunctionData({ abi: SWEEPER_ABI, functionName: "sweep", args: [usdt, 1n] }),
      });
      expect(withSweep.status).toBe("reverted");
      expect(await node.publicClient.getBalance({ address: a.address })).toBe(0n);
      const before = await balance(a.address);
      const plain = await sendMined(stranger, { to: a.address, value: parseEther("1") });
      expect(plain.status).toBe("success");
      expect(await node.publicClient.getBalance({ address: a.address })).toBe(parseEther("1"));
      // The ETH moved nothing else, and no call of the contract sends it anywhere.
      expect(await balance(a.address)).toBe(before);
      expect(
        SWEEPER_ABI.filter((f) => f.type === "function")
          .map((f) => f.name)
          .sort(),
      ).toEqual(["hotWallet", "sweep", "sweepMany", "token"]);
    });

    it("a token without code fails the sweep (no silent success)", async () => {
      const codeless = privateKeyToAccount(generatePrivateKey()).address;
      // Not a's sweeper's token: refused before any call.
      await expect(
        node.publicClient.simulateContract({
          address: a.address,
          abi: SWEEPER_ABI,
          functionName: "sweep",
          args: [codeless, 1n],
        }),
      ).rejects.toThrow(/WrongToken/);
      // A sweeper bound to an address without code: its transfer "succeeds" with no return data,
      // which the sweeper does not take for a success.
      const bound = await deploySweeper(hot, codeless);
      await expect(
        node.publicClient.simulateContract({
          address: bound,
          abi: SWEEPER_ABI,
          functionName: "sweep",
          args: [codeless, 1n],
        }),
      ).rejects.toThrow(/TransferFailed/);
    });
  });

  describe("another caller", () => {
    it("any account may call sweepMany (on the sweeper or on a delegated account); funds reach only the hot wallet", async () => {
      const a = await deposit(USDT(5));
      const b = await deposit(USDT(6));
      const stranger = await funded();
      const hotBefore = await balance(hot);
      // The stranger even brings the authorizations (they are public once used, and only name the sweeper).
      const first = await sweepMany(usdt, [a.address, b.address], [USDT(5), USDT(6)], {
        authorizationList: [await authorize(a, sweeper), await authorize(b, sweeper)],
        from: stranger,
      });
      expect(transfers(first).map((t) => t.to)).toEqual([hot, hot]);

      // sweepMany run as a delegated account's code: a sweeps b.
      await mintTestUsdt(node, usdt, b.address, USDT(2));
      const viaAccount = await sweepMany(usdt, [b.address], [USDT(2)], { to: a.address, from: stranger });
      expect(transfers(viaAccount)).toEqual([{ from: b.address, to: hot, value: USDT(2) }]);
      expect(await balance(hot)).toBe(hotBefore + USDT(13));
      expect(await balance(stranger.account.address)).toBe(0n);
    });

    it("an account without code in the batch succeeds doing nothing (the caller reads the Transfer logs)", async () => {
      const plain = await deposit(USDT(1));
      const receipt = await sweepMany(usdt, [plain.address], [USDT(1)]);
      expect(failedAccounts(receipt)).toEqual([]);
      expect(transfers(receipt)).toEqual([]);
      expect(await balance(plain.address)).toBe(USDT(1));
    });
  });

  describe("re-delegation", () => {
    let a: Deposit;
    let evilSweeper: Hex;
    beforeAll(async () => {
      // A sweeper whose "hot wallet" is the attacker's: delegating to it would pay the attacker.
      evilSweeper = await deploySweeper(attacker, usdt);
      a = await deposit(USDT(10));
      await sweepMany(usdt, [a.address], [0n], { authorizationList: [await authorize(a, sweeper)] });
    });

    it("an authorization for our account signed by someone else does not apply to it", async () => {
      const mallory = privateKeyToAccount(generatePrivateKey());
      const nonce = await node.publicClient.getTransactionCount({ address: a.address });
      // Mallory signs "delegate to the attacker's sweeper": it can only ever delegate Mallory's own
      // address (the authority is whoever signed).
      const byMallory = await mallory.signAuthorization({
        address: evilSweeper,
        chainId: foundry.id,
        nonce: 0,
      });
      // A's genuine signature moved onto another tuple: it recovers to some other address.
      const genuine = await a.account.signAuthorization({ address: sweeper, chainId: foundry.id, nonce });
      const transplanted: SignedAuthorization = { ...genuine, address: evilSweeper };

      const receipt = await sweepMany(usdt, [a.address], [USDT(1)], {
        authorizationList: [byMallory, transplanted],
      });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper));
      expect(await node.publicClient.getTransactionCount({ address: a.address })).toBe(nonce);
      expect(await codeOf(mallory.address)).toBe(delegationTo(evilSweeper));
      expect(transfers(receipt)).toEqual([{ from: a.address, to: hot, value: USDT(1) }]);
      expect(await balance(attacker)).toBe(0n);
    });

    it("an authorization with a stale nonce is ignored", async () => {
      const nonce = await node.publicClient.getTransactionCount({ address: a.address });
      expect(nonce).toBeGreaterThan(0);
      // An old (leaked) authorization of the attacker's sweeper, signed at a used nonce.
      const stale = await a.account.signAuthorization({
        address: evilSweeper,
        chainId: foundry.id,
        nonce: nonce - 1,
      });
      const receipt = await sweepMany(usdt, [a.address], [USDT(1)], { authorizationList: [stale] });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper));
      expect(await node.publicClient.getTransactionCount({ address: a.address })).toBe(nonce);
      expect(transfers(receipt)).toEqual([{ from: a.address, to: hot, value: USDT(1) }]);
      // Nor does an authorization for another chain.
      const otherChain = await a.account.signAuthorization({ address: evilSweeper, chainId: 1, nonce });
      await sweepMany(usdt, [a.address], [0n], { authorizationList: [otherChain] });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper));
      expect(await balance(attacker)).toBe(0n);
    });

    it("the key re-delegating to a sweeper for another hot wallet sends to the new hot wallet only", async () => {
      const hot2 = privateKeyToAccount(generatePrivateKey()).address;
      const sweeper2 = await deploySweeper(hot2, usdt);
      const hotBefore = await balance(hot);
      const receipt = await sweepMany(usdt, [a.address], [USDT(2)], {
        to: sweeper2,
        authorizationList: [await authorize(a, sweeper2)],
      });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper2));
      expect(transfers(receipt)).toEqual([{ from: a.address, to: hot2, value: USDT(2) }]);
      // Whichever sweeper contract runs the batch, a's code is sweeper2's: the old one pays hot2 too.
      const viaOld = await sweepMany(usdt, [a.address], [USDT(1)]);
      expect(transfers(viaOld)).toEqual([{ from: a.address, to: hot2, value: USDT(1) }]);
      expect(await balance(hot2)).toBe(USDT(3));
      expect(await balance(hot)).toBe(hotBefore);
    });
  });

  /** A fresh HostileToken and the sweeper for (`hot`, it): the only sweeper that moves it. */
  async function deployHostile(): Promise<{ hostile: Hex; hostileSweeper: Hex }> {
    const hostile = (
      await receiptOf(await tank.deployContract({ abi: HOSTILE.abi, bytecode: HOSTILE.bytecode }))
    ).contractAddress as Hex;
    return { hostile, hostileSweeper: await deploySweeper(hot, hostile) };
  }

  /** Calls a HostileToken function (mint, configure, setRefuses, setGasBurn) from the gas tank. */
  async function hostileCall(hostile: Hex, functionName: string, args: unknown[]) {
    const receipt = await receiptOf(
      await tank.writeContract({ address: hostile, abi: HOSTILE.abi, functionName, args }),
    );
    expect(receipt.status).toBe("success");
  }

  describe("a hostile token re-entering the sweeper", () => {
    it("its own sweeper moves only it, to the hot wallet; re-entries for another token are refused; its failing account does not revert the batch", async () => {
      // The sweeper bound to the hostile token (the gateway would never deploy one, but it is the
      // only sweeper whose sweep calls the hostile token's transfer, hence lets it re-enter).
      const { hostile, hostileSweeper } = await deployHostile();
      const a = await deposit(USDT(20)); // sweeps the hostile token: its transfer attacks
      const refusing = await deposit(USDT(30)); // its hostile transfer attacks, then reverts
      const c = await deposit(USDT(40)); // attacked in turn
      // Never in the batch, delegated to USDT's sweeper: the re-entered sweepMany goes for its USDT.
      const victim = await deposit(USDT(50));
      const batch = [a, refusing, c];
      await sweepMany(
        hostile,
        batch.map((d) => d.address),
        batch.map(() => 0n),
        {
          to: hostileSweeper,
          authorizationList: await Promise.all(batch.map((d) => authorize(d, hostileSweeper))),
        },
      );
      await sweepMany(usdt, [victim.address], [0n], {
        authorizationList: [await authorize(victim, sweeper)],
      });
      for (const d of batch) expect(await codeOf(d.address)).toBe(delegationTo(hostileSweeper));
      for (const d of batch) await hostileCall(hostile, "mint", [d.address, 1_000n]);
      await hostileCall(hostile, "configure", [ATTACK, usdt, attacker, [victim.address]]);
      await hostileCall(hostile, "setRefuses", [refusing.address, true]);
      const hotBefore = await balance(hot);

      // A fixed, ample gas limit: the hostile token catches its own attempts' failures, so at a lower
      // limit some would fail for want of gas instead of for what the sweeper allows.
      const receipt = await sweepMany(
        hostile,
        batch.map((d) => d.address),
        [1_000n, 1_000n, 1_000n],
        { to: hostileSweeper, gas: 3_000_000n },
      );

      expect(failedAccounts(receipt)).toEqual([refusing.address.toLowerCase()]);
      // No TestUSDT moved at all: the re-entered sweeps of it were refused (WrongToken).
      expect(transfers(receipt)).toEqual([]);
      // Every hostile-token transfer of the transaction went to the hot wallet (the 0 of each
      // attack's sweep of the hostile token itself, then the account's 1,000).
      expect(transfers(receipt, hostile)).toEqual([
        { from: a.address, to: hot, value: 0n },
        { from: a.address, to: hot, value: 1_000n },
        { from: c.address, to: hot, value: 0n },
        { from: c.address, to: hot, value: 1_000n },
      ]);
      expect(await balance(attacker)).toBe(0n);
      expect(await balance(hot)).toBe(hotBefore);
      expect(await balance(a.address)).toBe(USDT(20));
      expect(await balance(refusing.address)).toBe(USDT(30));
      expect(await balance(c.address)).toBe(USDT(40));
      expect(await balance(victim.address)).toBe(USDT(50));
      // The hostile token itself: a's and c's went to the hot wallet, the refusing account kept its.
      expect(await balance(hot, hostile)).toBe(2_000n);
      expect(await balance(refusing.address, hostile)).toBe(1_000n);
      expect(await balance(attacker, hostile)).toBe(0n);

      // What each attack achieved: only the empty call (receive, which moves nothing) and the sweep
      // of the hostile token itself (0, to the hot wallet) succeeded.
      const attempts = parseEventLogs({ abi: HOSTILE.abi, logs: receipt.logs, eventName: "Attempt" }).map(
        (l) => {
          const args = l.args as unknown as { kind: number; ok: boolean };
          return `${ATTEMPT[args.kind as keyof typeof ATTEMPT]}: ${args.ok}`;
        },
      );
      const once = [
        "reenter sweep: false",
        "forged transfer: false",
        "transferFrom: false",
        "reenter sweepMany: false",
        "unknown selector: false",
        "empty call: true",
        "sweep self: true",
      ];
      // Logged by a and c (the refusing account's were reverted with it).
      expect(attempts).toEqual([...once, ...once]);
    });

    it("a token returning false or a non-bool fails that account's sweep (SweepFailed), nothing moves", async () => {
      const { hostile, hostileSweeper } = await deployHostile();
      const a = await deposit(0n);
      await sweepMany(hostile, [a.address], [0n], {
        to: hostileSweeper,
        authorizationList: [await authorize(a, hostileSweeper)],
      });
      await hostileCall(hostile, "mint", [a.address, 5n]);
      for (const mode of [RETURN_FALSE, RETURN_GARBAGE, HONEST]) {
        await hostileCall(hostile, "configure", [mode, usdt, attacker, []]);
        const receipt = await sweepMany(hostile, [a.address], [5n], { to: hostileSweeper });
        expect(failedAccounts(receipt), `mode ${mode}`).toEqual(
          mode === HONEST ? [] : [a.address.toLowerCase()],
        );
      }
      expect(await balance(hot, hostile)).toBe(5n);
    });
  });

  describe("another token at a delegated address (one sweeper per currency type)", () => {
    let usdc: Hex;
    let usdcSweeper: Hex;
    const hotUsdc = privateKeyToAccount(generatePrivateKey()).address;
    beforeAll(async () => {
      usdc = await deployTestToken(node, { symbol: "USDC", decimals: 6 });
      usdcSweeper = await deploySweeper(hotUsdc, usdc);
    });

    it("USDC at an address delegated to USDT's sweeper: sweep and sweepMany of it revert WrongToken, from anyone", async () => {
      const a = await deposit(USDT(10));
      const b = await deposit(USDT(20));
      await sweepMany(usdt, [a.address, b.address], [0n, 0n], {
        authorizationList: [await authorize(a, sweeper), await authorize(b, sweeper)],
      });
      await mintTestToken(node, usdc, a.address, USDT(7));
      await mintTestToken(node, usdc, b.address, USDT(8));
      const stranger = await funded();
      const usdcAt = async () => [await balance(a.address, usdc), await balance(b.address, usdc)];

      // sweep(USDC, …) on the delegated account, by a stranger, by the gas tank, by the account itself.
      for (const wallet of [stranger, tank, walletOf(a.key)]) {
        await expect(
          node.publicClient.simulateContract({
            account: wallet.account,
            address: a.address,
            abi: SWEEPER_ABI,
            functionName: "sweep",
            args: [usdc, USDT(7)],
          }),
        ).rejects.toThrow(/WrongToken/);
      }
      const sweepData = encodeFunctionData({
        abi: SWEEPER_ABI,
        functionName: "sweep",
        args: [usdc, USDT(7)],
      });
      expect((await sendMined(stranger, { to: a.address, data: sweepData })).status).toBe("reverted");

      // sweepMany(USDC, …) on USDT's sweeper and on a delegated account: the whole batch reverts up
      // front, even with a valid USDT account in it.
      const manyData = encodeFunctionData({
        abi: SWEEPER_ABI,
        functionName: "sweepMany",
        args: [usdc, [a.address, b.address], [USDT(7), USDT(8)]],
      });
      for (const to of [sweeper, a.address, b.address]) {
        await expect(
          node.publicClient.simulateContract({
            account: stranger.account,
            address: to,
            abi: SWEEPER_ABI,
            functionName: "sweepMany",
            args: [usdc, [a.address, b.address], [USDT(7), USDT(8)]],
          }),
        ).rejects.toThrow(/WrongToken/);
        const mined = await sendMined(stranger, { to, data: manyData });
        expect(mined.status, to).toBe("reverted");
        expect(mined.logs).toEqual([]);
      }

      expect(await usdcAt()).toEqual([USDT(7), USDT(8)]);
      expect(await balance(hot, usdc)).toBe(0n);
      expect(await balance(hotUsdc, usdc)).toBe(0n);
      expect(await balance(stranger.account.address, usdc)).toBe(0n);
      expect(await balance(attacker, usdc)).toBe(0n);
      // The USDT there is untouched too.
      expect([await balance(a.address), await balance(b.address)]).toEqual([USDT(10), USDT(20)]);
    });

    it("USDC's own batch re-authorises the address to USDC's sweeper; USDT's batch then reports it failed until re-authorised back", async () => {
      const a = await deposit(USDT(10));
      const b = await deposit(USDT(20));
      await sweepMany(usdt, [a.address, b.address], [0n, 0n], {
        authorizationList: [await authorize(a, sweeper), await authorize(b, sweeper)],
      });
      await mintTestToken(node, usdc, a.address, USDT(7));
      const hotBefore = await balance(hot);

      // USDC's batch: a re-delegates to USDC's sweeper, which moves the USDC to USDC's hot wallet only.
      const usdcBatch = await sweepMany(usdc, [a.address], [USDT(7)], {
        to: usdcSweeper,
        authorizationList: [await authorize(a, usdcSweeper)],
      });
      expect(await codeOf(a.address)).toBe(delegationTo(usdcSweeper));
      expect(transfers(usdcBatch, usdc)).toEqual([{ from: a.address, to: hotUsdc, value: USDT(7) }]);
      expect(transfers(usdcBatch)).toEqual([]);

      // USDT's batch without an authorization: a's code is now USDC's sweeper, which refuses USDT
      // (SweepFailed); b is swept.
      const usdtBatch = await sweepMany(usdt, [a.address, b.address], [USDT(10), USDT(20)]);
      expect(failedAccounts(usdtBatch)).toEqual([a.address.toLowerCase()]);
      expect(transfers(usdtBatch)).toEqual([{ from: b.address, to: hot, value: USDT(20) }]);
      expect(await balance(a.address)).toBe(USDT(10));
      // Nor can USDC's sweeper be told to move USDT from a.
      await expect(
        node.publicClient.simulateContract({
          address: a.address,
          abi: SWEEPER_ABI,
          functionName: "sweep",
          args: [usdt, USDT(10)],
        }),
      ).rejects.toThrow(/WrongToken/);

      // USDT's batch with a's authorization of USDT's sweeper: swept to USDT's hot wallet.
      const back = await sweepMany(usdt, [a.address], [USDT(10)], {
        authorizationList: [await authorize(a, sweeper)],
      });
      expect(await codeOf(a.address)).toBe(delegationTo(sweeper));
      expect(transfers(back)).toEqual([{ from: a.address, to: hot, value: USDT(10) }]);
      expect(await balance(hot)).toBe(hotBefore + USDT(30));
      expect(await balance(hot, usdc)).toBe(0n);
      expect(await balance(hotUsdc)).toBe(0n);
    });
  });

  it("a frozen (blacklisted) account in a batch emits SweepFailed; the others are swept", async () => {
    const ds = [await deposit(USDT(1)), await deposit(USDT(2)), await deposit(USDT(3))];
    const frozen = ds[1]!;
    await freezeAddress(node, usdt, frozen.address, "tether");
    const hotBefore = await balance(hot);
    const receipt = await sweepMany(
      usdt,
      ds.map((d) => d.address),
      [USDT(1), USDT(2), USDT(3)],
      { authorizationList: await Promise.all(ds.map((d) => authorize(d, sweeper))) },
    );
    expect(failedAccounts(receipt)).toEqual([frozen.address.toLowerCase()]);
    expect(await balance(frozen.address)).toBe(USDT(2));
    expect(await balance(hot)).toBe(hotBefore + USDT(4));
    // The frozen account was still delegated (the authorization does not depend on the token).
    expect(await codeOf(frozen.address)).toBe(delegationTo(sweeper));
  });

  describe("a gas limit too low reverts the whole batch (InsufficientGas)", () => {
    /**
     * Sends the same sweepMany (on the same state: anvil snapshots) with gas limits from
     * eth_estimateGas's down to `lowest`: each either reverts or sweeps every account — never sweeps
     * some and reports the others, starved of gas, as failed. Returns how many of each.
     */
    async function scanGasLimits(
      token: Hex,
      accounts: Hex[],
      amounts: bigint[],
      lowest: bigint,
      step: bigint,
      to = sweeper,
    ) {
      const args = [token, accounts, amounts] as const;
      const estimate = await node.publicClient.estimateContractGas({
        account: tank.account,
        address: to,
        abi: SWEEPER_ABI,
        functionName: "sweepMany",
        args,
      });
      let swept = 0;
      let reverted = 0;
      for (let gas = estimate; gas > lowest; gas -= step) {
        const snapshot = await node.testClient.snapshot();
        const receipt = await receiptOf(
          await tank.writeContract({
            address: to,
            abi: SWEEPER_ABI,
            functionName: "sweepMany",
            args,
            gas,
          }),
        );
        if (receipt.status === "reverted") reverted++;
        else {
          expect(failedAccounts(receipt), `gas ${gas}`).toEqual([]);
          expect(transfers(receipt, token), `gas ${gas}`).toHaveLength(accounts.length);
          swept++;
        }
        await node.testClient.revert({ id: snapshot });
      }
      return { estimate, swept, reverted };
    }

    /** `n` deposits of `amount` TestUSDT, delegated to `to` (the sweeper of `token`). */
    async function delegated(n: number, amount: bigint, token = usdt, to = sweeper): Promise<Hex[]> {
      const ds: Deposit[] = [];
      for (let i = 0; i < n; i++) ds.push(await deposit(amount));
      const accounts = ds.map((d) => d.address);
      await sweepMany(
        token,
        accounts,
        accounts.map(() => 0n),
        {
          to,
          authorizationList: await Promise.all(ds.map((d) => authorize(d, to))),
        },
      );
      return accounts;
    }

    it("TestUSDT: from the estimate down to the intrinsic gas", async () => {
      const accounts = await delegated(3, USDT(1));
      const r = await scanGasLimits(usdt, accounts, [USDT(1), USDT(1), USDT(1)], 30_000n, 1_000n);
      console.log(
        `sweepMany of 3 TestUSDT: estimate ${r.estimate}; ${r.swept} limits swept all, ${r.reverted} reverted`,
      );
      expect(r.swept).toBeGreaterThan(0);
      expect(r.reverted).toBeGreaterThan(0);
    });

    it("an expensive token (150,000 gas a transfer), whose starved sweep leaves enough gas to log SweepFailed", async () => {
      const { hostile: token, hostileSweeper } = await deployHostile();
      const accounts = await delegated(2, 0n, token, hostileSweeper);
      await hostileCall(token, "setGasBurn", [150_000n]);
      for (const a of accounts) await hostileCall(token, "mint", [a, 1_000n]);
      const r = await scanGasLimits(token, accounts, [1_000n, 1_000n], 30_000n, 4_000n, hostileSweeper);
      console.log(
        `sweepMany of 2 expensive: estimate ${r.estimate}; ${r.swept} limits swept all, ${r.reverted} reverted`,
      );
      expect(r.swept).toBeGreaterThan(0);
      expect(r.reverted).toBeGreaterThan(0);
    });
  });

  it("sweepMany with mismatched lengths reverts", async () => {
    await expect(
      node.publicClient.simulateContract({
        account: tank.account,
        address: sweeper,
        abi: SWEEPER_ABI,
        functionName: "sweepMany",
        args: [usdt, [hot, attacker], [1n]],
      }),
    ).rejects.toThrow(/LengthMismatch/);
  });

  it.each([
    ["hot wallet", "ZeroHotWallet" as const, () => [zeroAddress, usdt] as const],
    [
      "token",
      "ZeroToken" as const,
      () => [privateKeyToAccount(generatePrivateKey()).address, zeroAddress] as const,
    ],
  ])(
    "the constructor rejects the zero %s (directly and through the CREATE2 deployer)",
    async (_, error, argsOf) => {
      const [hotWallet, token] = argsOf();
      await expect(
        tank.deployContract({ abi: SWEEPER_ABI, bytecode: SWEEPER_CREATION_CODE, args: [hotWallet, token] }),
      ).rejects.toThrow(
        // viem reports a constructor's custom error by its selector.
        new RegExp(`${error}|custom error ${encodeErrorResult({ abi: SWEEPER_ABI, errorName: error })}`, "i"),
      );
      const viaDeployer = await sendMined(tank, {
        to: CREATE2_DEPLOYER,
        data: concatHex([SALT, initCode(hotWallet, token)]),
      });
      expect(viaDeployer.status).toBe("reverted");
      const predicted = getContractAddress({
        opcode: "CREATE2",
        from: CREATE2_DEPLOYER,
        salt: SALT,
        bytecode: initCode(hotWallet, token),
      });
      expect(await codeOf(predicted)).toBe("0x");
    },
  );
});
