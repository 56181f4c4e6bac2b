/**
 * Test harness: a local TRON node emulator. An HTTP server (node `http`) that answers the TRON
 * HTTP API endpoints stablegate uses, backed by an anvil chain: a TRON account is the same 20 bytes
 * with a 0x41 prefix, TRON block n is anvil block n, logs and receipts are anvil's.
 *
 * Broadcast transactions are checked like a TRON node would (txID = sha256(raw_data), raw_data_hex
 * is the protobuf encoding of raw_data, the signature recovers to the owner) and then executed on
 * anvil: a `TriggerSmartContract` as the owner (impersonated; the anvil gas is lent, so the owner's
 * TRX balance is what it was), a `TransferContract` (TRX) as a move of the owner's balance, refused
 * like a node when it is short, and the Stake 2.0 contracts (`FreezeBalanceV2`, `UnfreezeBalanceV2`,
 * `WithdrawExpireUnfreeze`, `DelegateResource`, `UnDelegateResource`), each with a marker
 * transaction for its block and receipt. The TRX balance of an account is its anvil balance / 10^12
 * (1 sun = 10^12 wei). Every transaction pays what TRON charges (issue #38, `tron-resources.ts`):
 * bandwidth, energy within `fee_limit`, account creation; what is not covered by stake or the free
 * allowance is burned from the balance. See docs/chains.md for what this proves and what it does not.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { utils as tronUtils } from "tronweb";
import { getAddress, type Hex, keccak256, toBytes, toHex } from "viem";
import { evmAddressFromPublicKey } from "../../../src/chains/evm/address.js";
import { tronAddressFromBytes, tronAddressToBytes } from "../../../src/chains/tron/address.js";
import type { AnvilNode } from "./anvil.js";
import {
  burned,
  type Charges,
  noCharges,
  RESULT_BYTES,
  type TronChainParameters,
  TronRefusal,
  type TronResource,
  TronResources,
} from "./tron-resources.js";

/** The energy of the token's `transfer` on mainnet USDT: to a holder, and to an address holding none. */
export const USDT_TRANSFER_ENERGY = { toHolder: 64_285, toNewHolder: 130_285 };

export interface TronEmulator {
  url: string;
  /** The anvil token contract as a TRON base58 address. */
  tokenAddress: string;
  /** TRON txID of an anvil transaction hash (broadcast ones have their own txID; others reuse the hash). */
  tronTxId(ethHash: Hex): string;
  /**
   * Sets chain parameters (as governance does: the energy price went 420 → 210 → 100 sun); the
   * rest keep their values. `unreported` names parameters `wallet/getchainparameters` leaves out
   * (a node that does not report one; the chain still charges it). Defaults: mainnet's, except
   * the energy price, 210 sun.
   */
  setChainParameters(params: Partial<TronChainParameters>, unreported?: (keyof TronChainParameters)[]): void;
  /** The resource model (stake, delegation, usage) the emulator charges by. */
  resources: TronResources;
  /** Moves the resource clock (usage recovery, lock periods, unstaking delays) forward. */
  advanceTime(ms: number): void;
  /** What a broadcast transaction used and burned (its receipt), by txID. */
  charges(txId: string): Charges | undefined;
  stop(): Promise<void>;
}

type Json = Record<string, unknown>;

interface StoredTx {
  txID: string;
  raw_data: Json;
  raw_data_hex: string;
  signature: string[];
  ethHash: Hex;
}

interface EthReceipt {
  transactionHash: Hex;
  blockNumber: Hex;
  from: Hex;
  to: Hex | null;
  status: Hex;
  gasUsed: Hex;
  logs: { address: Hex; topics: Hex[]; data: Hex }[];
}

interface EthBlock {
  number: Hex;
  hash: Hex;
  parentHash: Hex;
  timestamp: Hex;
  transactions: Hex[];
}

const strip = (h: string) => (h.startsWith("0x") ? h.slice(2) : h).toLowerCase();

/** Hex `41…` or base58 `T…` (requests with `visible: true`) to an EVM address. */
function toEvm(address: unknown): Hex {
  if (typeof address !== "string") throw new Error("address missing");
  if (address.startsWith("T")) return getAddress(toHex(tronAddressToBytes(address)));
  const h = strip(address);
  if (!/^41[0-9a-f]{40}$/.test(h)) throw new Error(`invalid address ${address}`);
  return getAddress(`0x${h.slice(2)}`);
}

const toTronHex = (evm: string) => `41${strip(evm)}`;

/** Wei per sun: an account's TRX balance is its anvil balance / 10^12. */
const WEI_PER_SUN = 10n ** 12n;
/** The account that mines a TRX transfer's marker transaction (its block and receipt). */
const MARKER = getAddress("0x00000000000000000000000000000000000f4e11");

export async function startTronEmulator(anvil: AnvilNode, tokenEvmAddress: Hex): Promise<TronEmulator> {
  const byTxId = new Map<string, StoredTx>();
  let clockOffset = 0;
  const resources = new TronResources(() => Date.now() + clockOffset, { getEnergyFee: 210 });
  let unreported = new Set<string>();
  const chargesByTxId = new Map<string, Charges>();
  const txIdByEth = new Map<string, string>();
  const tronTxId = (ethHash: Hex) => txIdByEth.get(ethHash.toLowerCase()) ?? strip(ethHash);
  const rpc = <T>(method: string, params: unknown[]) =>
    anvil.publicClient.request({ method: method as never, params: params as never }) as Promise<T>;

  /** TRON block ids start with the 8-byte block number; the rest comes from the anvil hash. */
  const blockId = (n: number, ethHash: string) => n.toString(16).padStart(16, "0") + strip(ethHash).slice(16);

  async function tronBlock(tag: string): Promise<Json> {
    const b = await rpc<EthBlock | null>("eth_getBlockByNumber", [tag, false]);
    if (!b) return {};
    const n = Number(b.number);
    const transactions = await Promise.all(
      b.transactions.map(async (h) => {
        const r = await rpc<EthReceipt>("eth_getTransactionReceipt", [h]);
        return transactionJson(h, r);
      }),
    );
    return {
      blockID: blockId(n, b.hash),
      block_header: {
        raw_data: {
          number: n,
          txTrieRoot: "0".repeat(64),
          witness_address: toTronHex("0x" + "0".repeat(40)),
          parentHash: n === 0 ? "0".repeat(64) : blockId(n - 1, b.parentHash),
          version: 30,
          timestamp: Number(b.timestamp) * 1000,
        },
        witness_signature: "",
      },
      ...(transactions.length > 0 ? { transactions } : {}),
    };
  }

  function transactionJson(ethHash: Hex, r: EthReceipt | null): Json {
    const stored = byTxId.get(tronTxId(ethHash));
    const charged = chargesByTxId.get(tronTxId(ethHash));
    const ret = [
      {
        contractRet: charged?.outOfEnergy ? "OUT_OF_ENERGY" : r && r.status === "0x1" ? "SUCCESS" : "REVERT",
        ...(charged ? { fee: Number(burned(charged)) } : {}),
      },
    ];
    if (stored)
      return {
        ret,
        signature: stored.signature,
        txID: stored.txID,
        raw_data: stored.raw_data,
        raw_data_hex: stored.raw_data_hex,
      };
    return { ret, txID: tronTxId(ethHash) };
  }

  async function transactionInfo(r: EthReceipt): Promise<Json> {
    const b = await rpc<EthBlock>("eth_getBlockByNumber", [r.blockNumber, false]);
    const id = tronTxId(r.transactionHash);
    const c = chargesByTxId.get(id);
    const ok = r.status === "0x1" && !c?.outOfEnergy;
    // What the transaction used and burned, as java-tron's receipt says it (transactions the
    // emulator did not broadcast, such as a test's mint, used nothing).
    const used = c ?? noCharges();
    return {
      id,
      fee: Number(burned(used)),
      blockNumber: Number(r.blockNumber),
      blockTimeStamp: Number(b.timestamp) * 1000,
      contractResult: [""],
      ...(r.to && r.to !== MARKER ? { contract_address: toTronHex(r.to) } : {}),
      receipt: {
        energy_usage: used.energyUsage,
        energy_fee: Number(used.energyFee),
        energy_usage_total: used.energyTotal,
        net_usage: used.netUsage,
        net_fee: Number(used.netFee),
        result: c?.outOfEnergy ? "OUT_OF_ENERGY" : ok ? "SUCCESS" : "REVERT",
      },
      ...(ok
        ? {
            log: r.logs.map((l) => ({
              address: strip(l.address),
              topics: l.topics.map(strip),
              data: strip(l.data),
            })),
          }
        : {
            result: "FAILED",
            resMessage: toHex(c?.outOfEnergy ? "Not enough energy" : "REVERT opcode executed").slice(2),
          }),
    };
  }

  async function infoById(id: unknown): Promise<Json> {
    if (typeof id !== "string") return {};
    const ethHash = byTxId.get(strip(id))?.ethHash ?? (`0x${strip(id)}` as Hex);
    const r = await rpc<EthReceipt | null>("eth_getTransactionReceipt", [ethHash]).catch(() => null);
    return r ? transactionInfo(r) : {};
  }

  async function triggerSmartContract(body: Json): Promise<Json> {
    const owner = toEvm(body.owner_address);
    const contract = toEvm(body.contract_address);
    const data = callData(body);
    const head = await tronBlock("latest");
    const blockID = head.blockID as string;
    const number = (head.block_header as { raw_data: { number: number } }).raw_data.number;
    const now = Date.now();
    const value: Json = { data, owner_address: toTronHex(owner), contract_address: toTronHex(contract) };
    if (typeof body.call_value === "number" && body.call_value > 0) value.call_value = body.call_value;
    const raw_data: Json = {
      contract: [
        {
          parameter: { value, type_url: "type.googleapis.com/protocol.TriggerSmartContract" },
          type: "TriggerSmartContract",
        },
      ],
      ref_block_bytes: (number & 0xffff).toString(16).padStart(4, "0"),
      ref_block_hash: blockID.slice(16, 32),
      expiration: now + 60_000,
      ...(typeof body.fee_limit === "number" ? { fee_limit: body.fee_limit } : {}),
      timestamp: now,
    };
    const pb = tronUtils.transaction.txJsonToPb({ raw_data, visible: false } as never);
    const raw_data_hex = tronUtils.transaction.txPbToRawDataHex(pb).toLowerCase();
    const txID = bytesToHex(sha256(hexToBytes(raw_data_hex)));
    return { result: { result: true }, transaction: { visible: false, txID, raw_data, raw_data_hex } };
  }

  /**
   * Any view or call of any function (`function_selector` + `parameter`, or `data`), run with
   * `eth_call` at the head. A revert is answered as java-tron does: the call "succeeded"
   * (`result.result` true) with the message `REVERT opcode executed`, the revert data as its
   * constant result and the transaction's `ret` FAILED (tronweb throws on the message).
   */
  async function triggerConstantContract(body: Json): Promise<Json> {
    const from = body.owner_address ? toEvm(body.owner_address) : undefined;
    const to = toEvm(body.contract_address);
    const data = callData(body);
    try {
      const out = await rpc<Hex>("eth_call", [{ from, to, data: `0x${data}` }, "latest"]);
      const energy_used = await energyOf(from, to, data);
      return { result: { result: true }, energy_used, constant_result: [strip(out)] };
    } catch (e) {
      if (!/revert/i.test(String(e)))
        return { result: { code: "CONTRACT_EXE_ERROR", message: toHex(String(e)).slice(2) } };
      return {
        result: { result: true, message: toHex("REVERT opcode executed").slice(2) },
        energy_used: 0,
        constant_result: [strip(revertData(e))],
        transaction: { ret: [{ ret: "FAILED" }] },
      };
    }
  }

  /**
   * The energy a call that succeeds uses: the token's `transfer` as on mainnet USDT (twice as much
   * to an address holding none: a new storage slot), any other call its EVM gas above the
   * intrinsic 21,000 (TRON's energy is close to EVM gas for the same opcodes).
   */
  async function energyOf(from: Hex | undefined, to: Hex, data: string): Promise<number> {
    if (getAddress(to) === getAddress(tokenEvmAddress) && data.startsWith(TRANSFER_SELECTOR)) {
      const recipient = getAddress(`0x${data.slice(8 + 24, 8 + 64)}`);
      const held = await rpc<Hex>("eth_call", [
        { to, data: `0x${BALANCE_OF_SELECTOR}${recipient.slice(2).toLowerCase().padStart(64, "0")}` },
        "latest",
      ]);
      return BigInt(held) > 0n ? contractEnergy.toHolder : contractEnergy.toNewHolder;
    }
    const gas = await rpc<Hex>("eth_estimateGas", [{ from, to, data: `0x${data}` }, "latest"]);
    return Math.max(0, Number(gas) - 21_000);
  }
  const contractEnergy = { ...USDT_TRANSFER_ENERGY };

  /** Transactions being executed (a second broadcast of the same bytes meanwhile is a duplicate). */
  const executing = new Set<string>();

  /** Checks a signed transaction as a node would, then executes it on anvil as its owner. */
  async function broadcast(tx: Json): Promise<Json> {
    const fail = (code: string, message: string) => ({
      result: false,
      code,
      txid: tx.txID,
      message: toHex(message).slice(2),
    });
    const rawHex = typeof tx.raw_data_hex === "string" ? strip(tx.raw_data_hex) : "";
    const txID = typeof tx.txID === "string" ? strip(tx.txID) : "";
    const raw = tx.raw_data as Json | undefined;
    if (!raw || !rawHex) return fail("OTHER_ERROR", "raw_data missing");
    if (bytesToHex(sha256(hexToBytes(rawHex))) !== txID)
      return fail("SIGERROR", "txID is not sha256(raw_data)");
    const encoded = tronUtils.transaction
      .txPbToRawDataHex(tronUtils.transaction.txJsonToPb(tx as never))
      .toLowerCase();
    if (encoded !== rawHex) return fail("OTHER_ERROR", "raw_data_hex does not encode raw_data");
    // The same bytes sent to several providers at once (issue #34) execute once, as on a node.
    if (byTxId.has(txID) || executing.has(txID)) return fail("DUP_TRANSACTION_ERROR", "dup transaction");
    executing.add(txID);
    // One transaction at a time, as a chain orders them: the resource and balance reads of one
    // never interleave with another's writes.
    const run = queue.then(() => execute(tx, txID, rawHex, raw, fail));
    queue = run.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await run;
    } finally {
      executing.delete(txID);
    }
  }
  let queue: Promise<unknown> = Promise.resolve();

  const balance = async (a: Hex) => BigInt(await rpc<Hex>("eth_getBalance", [a, "latest"]));
  const setBalance = (a: Hex, wei: bigint) => rpc("anvil_setBalance", [a, toHex(wei)]);
  /**
   * Sends `tx` from `from` (impersonated), its anvil gas lent: `from` keeps its balance. The
   * balance is put back only once the transaction is mined (anvil may answer the send first, and
   * a sender without the gas would drop it).
   */
  const sendAs = async (from: Hex, tx: Json): Promise<Hex> => {
    const kept = await balance(from);
    await rpc("anvil_impersonateAccount", [from]);
    await setBalance(from, 10n ** 20n);
    try {
      const hash = await rpc<Hex>("eth_sendTransaction", [{ from, ...tx }]);
      // Sent is as good as mined (automine): waited for however long a loaded machine takes. A
      // time-out here would leave a mined transaction the emulator never recorded (a starved bench
      // once saw sweeps mined that no read could find, then re-signed: "would revert").
      await anvil.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 10, timeout: 300_000 });
      return hash;
    } finally {
      await setBalance(from, kept);
      await rpc("anvil_stopImpersonatingAccount", [from]);
    }
  };

  async function execute(
    tx: Json,
    txID: string,
    rawHex: string,
    raw: Json,
    fail: (code: string, message: string) => Json,
  ): Promise<Json> {
    if (typeof raw.expiration !== "number" || raw.expiration < Date.now())
      return fail("TRANSACTION_EXPIRATION_ERROR", "expired");
    const contract = (raw.contract as { type: string; parameter: { value: Json } }[] | undefined)?.[0];
    if (!contract || !EMULATED.has(contract.type))
      return fail("CONTRACT_VALIDATE_ERROR", `only ${[...EMULATED].join(", ")} are emulated`);
    const v = contract.parameter.value;
    const owner = toEvm(v.owner_address);
    const sig = (tx.signature as string[] | undefined)?.[0];
    if (!sig || strip(sig).length !== 130) return fail("SIGERROR", "signature missing");
    let signer: string;
    try {
      const bytes = hexToBytes(strip(sig));
      const v = bytes[64]!;
      const recovery = v >= 27 ? v - 27 : v;
      const point = secp256k1.Signature.fromBytes(bytes.slice(0, 64), "compact")
        .addRecoveryBit(recovery)
        .recoverPublicKey(hexToBytes(txID));
      signer = evmAddressFromPublicKey(point.toBytes(false));
    } catch {
      return fail("SIGERROR", "bad signature");
    }
    if (signer !== owner) return fail("SIGERROR", "signature does not match the owner");
    if (!(await exists(owner)))
      return fail("CONTRACT_VALIDATE_ERROR", `Validate ${contract.type} error, no OwnerAccount.`);

    const balanceSun = async (a: Hex) => (await balance(a)) / WEI_PER_SUN;
    const setBalanceSun = (a: Hex, sun: bigint) => setBalance(a, sun * WEI_PER_SUN);
    // java-tron's size of a transaction: its raw data and signatures (protobuf) plus the result's.
    const sigCount = (tx.signature as string[]).length;
    const rawLen = rawHex.length / 2;
    const bytes = 1 + varintSize(rawLen) + rawLen + sigCount * 67 + RESULT_BYTES;
    const charges = noCharges();
    const resource = (x: unknown): TronResource => (x === "ENERGY" || x === 1 ? "ENERGY" : "BANDWIDTH");
    try {
      let ethHash: Hex;
      if (contract.type === "TriggerSmartContract") {
        const to = toEvm(v.contract_address);
        const data = strip(String(v.data ?? ""));
        const feeLimit = BigInt(typeof raw.fee_limit === "number" ? raw.fee_limit : 0);
        let have = await balanceSun(owner);
        Object.assign(charges, resources.chargeBandwidth(owner, bytes, have, false));
        have -= charges.netFee;
        // The energy the call needs, decided before it runs: a call that would revert uses what
        // it ran (its gas once mined), anything else its energy (`energyOf`).
        const dryRun = await rpc<Hex>("eth_call", [{ from: owner, to, data: `0x${data}` }, "latest"]).then(
          () => true,
          () => false,
        );
        const needed = dryRun ? await energyOf(owner, to, data) : null;
        const energy = needed === null ? null : resources.chargeEnergy(owner, needed, feeLimit, have);
        // Out of energy: mined as a failed transaction (too little gas to run), its effects undone.
        ethHash = await sendAs(owner, {
          to,
          data: `0x${data}`,
          gas: toHex(energy?.outOfEnergy ? intrinsicGas(data) + 100 : 1_000_000),
        });
        if (energy) Object.assign(charges, energy);
        else {
          const receipt = await rpc<EthReceipt>("eth_getTransactionReceipt", [ethHash]);
          Object.assign(
            charges,
            resources.chargeEnergy(owner, Math.max(0, Number(receipt.gasUsed) - 21_000), feeLimit, have),
          );
        }
        await setBalanceSun(owner, (await balanceSun(owner)) - charges.netFee - charges.energyFee);
      } else {
        const have = await balanceSun(owner);
        if (contract.type === "TransferContract") {
          const to = toEvm(v.to_address);
          const amount = BigInt(String(v.amount ?? 0));
          if (amount <= 0n)
            throw new TronRefusal("CONTRACT_VALIDATE_ERROR", "Amount must be greater than 0.");
          if (to === owner)
            throw new TronRefusal("CONTRACT_VALIDATE_ERROR", "Cannot transfer TRX to yourself.");
          const creates = !(await exists(to));
          Object.assign(charges, resources.chargeBandwidth(owner, bytes, have, creates));
          if (creates)
            charges.contractFee = BigInt(resources.parameters.getCreateNewAccountFeeInSystemContract);
          if (have < amount + charges.netFee + charges.contractFee)
            throw new TronRefusal(
              "CONTRACT_VALIDATE_ERROR",
              "Validate TransferContract error, balance is not sufficient.",
            );
          await setBalanceSun(owner, have - amount - burned(charges));
          await setBalanceSun(to, (await balanceSun(to)) + amount);
          resources.activate(to);
        } else {
          Object.assign(charges, resources.chargeBandwidth(owner, bytes, have, false));
          let left = have - charges.netFee;
          const sun = (x: unknown) => BigInt(String(x ?? 0));
          if (contract.type === "FreezeBalanceV2Contract") {
            resources.freeze(owner, sun(v.frozen_balance), resource(v.resource), left);
            left -= sun(v.frozen_balance);
          } else if (contract.type === "UnfreezeBalanceV2Contract") {
            resources.unfreeze(owner, sun(v.unfreeze_balance), resource(v.resource));
          } else if (contract.type === "WithdrawExpireUnfreezeContract") {
            left += resources.withdrawExpired(owner);
          } else if (contract.type === "DelegateResourceContract") {
            const lock = v.lock === true ? Number(v.lock_period ?? 0) : null;
            resources.delegate(owner, toEvm(v.receiver_address), sun(v.balance), resource(v.resource), lock);
          } else {
            resources.undelegate(owner, toEvm(v.receiver_address), sun(v.balance), resource(v.resource));
          }
          await setBalanceSun(owner, left);
        }
        ethHash = await sendAs(MARKER, { to: MARKER, data: `0x${txID}` });
      }
      chargesByTxId.set(txID, charges);
      byTxId.set(txID, {
        txID,
        raw_data: raw,
        raw_data_hex: rawHex,
        signature: tx.signature as string[],
        ethHash,
      });
      txIdByEth.set(ethHash.toLowerCase(), txID);
      return { result: true, txid: txID };
    } catch (e) {
      if (e instanceof TronRefusal) return fail(e.code, e.message);
      throw e;
    }
  }

  /**
   * Whether an account exists on the emulated chain: created by a TRX transfer, or holding TRX
   * (or having sent anything) when first looked at, as a genesis account would (tests fund wallets
   * by setting their anvil balance). A token received creates no account.
   */
  async function exists(a: Hex): Promise<boolean> {
    if (resources.exists(a)) return true;
    const [wei, nonce] = await Promise.all([balance(a), rpc<Hex>("eth_getTransactionCount", [a, "latest"])]);
    if (wei === 0n && BigInt(nonce) === 0n) return false;
    resources.activate(a);
    return true;
  }

  async function account(body: Json): Promise<Json> {
    const a = toEvm(body.address);
    // An account that does not exist answers {}. TRX balance in sun: 1 ETH on anvil = 1 TRX.
    if (!(await exists(a))) return {};
    const sun = (await balance(a)) / WEI_PER_SUN;
    return {
      address: toTronHex(a),
      ...(sun > 0n ? { balance: Number(sun) } : {}),
      ...resources.accountFields(a),
    };
  }

  /** `wallet/getdelegatedresourcev2`: what `fromAddress` delegated to `toAddress`, per resource. */
  function delegatedResource(body: Json): Json {
    const from = toEvm(body.fromAddress);
    const to = toEvm(body.toAddress);
    const found = resources.delegationsOf(from, to);
    if (found.length === 0) return {};
    return {
      delegatedResource: found.map((d) => ({
        from: toTronHex(from),
        to: toTronHex(to),
        ...(d.resource === "ENERGY"
          ? { frozen_balance_for_energy: Number(d.sun), expire_time_for_energy: d.lockedUntil }
          : { frozen_balance_for_bandwidth: Number(d.sun), expire_time_for_bandwidth: d.lockedUntil }),
      })),
    };
  }

  const routes: Record<string, (body: Json) => Promise<unknown>> = {
    "/wallet/getnowblock": () => tronBlock("latest"),
    // tronweb takes the reference block (and the expiration, its time + 60 s) of a transaction it
    // builds itself (TRX transfers) from here. TRON makes a block every 3 s; anvil only when asked,
    // so one is made now and the expiration is a minute from now, as on a live node.
    "/wallet/getblock": async () => {
      await rpc("evm_mine", []);
      return tronBlock("latest");
    },
    "/walletsolidity/getnowblock": () => tronBlock("latest"),
    "/wallet/getblockbynum": (b) => tronBlock(toHex(Number(b.num ?? -1) >= 0 ? Number(b.num) : 2 ** 40)),
    "/wallet/gettransactioninfobyblocknum": async (b) => {
      const receipts = await rpc<EthReceipt[] | null>("eth_getBlockReceipts", [toHex(Number(b.num))]);
      return Promise.all((receipts ?? []).map(transactionInfo));
    },
    "/wallet/gettransactioninfobyid": (b) => infoById(b.value),
    "/walletsolidity/gettransactioninfobyid": (b) => infoById(b.value),
    "/wallet/gettransactionbyid": async (b) => {
      const stored = typeof b.value === "string" ? byTxId.get(strip(b.value)) : undefined;
      if (!stored) return {};
      return transactionJson(
        stored.ethHash,
        await rpc<EthReceipt | null>("eth_getTransactionReceipt", [stored.ethHash]),
      );
    },
    "/wallet/triggersmartcontract": triggerSmartContract,
    "/wallet/triggerconstantcontract": triggerConstantContract,
    "/wallet/broadcasttransaction": broadcast,
    "/wallet/getaccount": account,
    "/walletsolidity/getaccount": account,
    "/wallet/getchainparameters": async () => ({
      chainParameter: Object.entries(resources.parameters)
        .filter(([key]) => !unreported.has(key))
        .map(([key, value]) => ({ key, value })),
    }),
    "/wallet/getaccountresource": async (b) => {
      const a = toEvm(b.address);
      await exists(a);
      return resources.accountResource(a);
    },
    "/wallet/getdelegatedresourcev2": async (b) => delegatedResource(b),
    "/wallet/getcandelegatedmaxsize": async (b) => {
      const max = resources.canDelegate(toEvm(b.owner_address), b.type === 1 ? "ENERGY" : "BANDWIDTH");
      return max > 0n ? { max_size: Number(max) } : {};
    },
  };

  const server = createServer((req, res) => void handle(req, res));
  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://emulator");
    const route = routes[url.pathname];
    let status = 200;
    let payload: unknown;
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString("utf8");
      const body: Json = {
        ...Object.fromEntries(url.searchParams),
        ...(text ? (JSON.parse(text) as Json) : {}),
      };
      if (!route) {
        status = 404;
        payload = { Error: `emulator does not serve ${url.pathname}` };
      } else payload = await route(body);
    } catch (e) {
      payload = { Error: e instanceof Error ? e.message : String(e) };
    }
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(payload));
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tokenAddress: tronAddressFromBytes(toBytes(tokenEvmAddress)),
    tronTxId,
    setChainParameters: (params, hidden = []) => {
      resources.parameters = { ...resources.parameters, ...params };
      unreported = new Set(hidden);
    },
    resources,
    advanceTime: (ms) => {
      clockOffset += ms;
    },
    charges: (txId) => chargesByTxId.get(strip(txId)),
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The transaction types the emulator executes (TRX, contract calls, Stake 2.0). */
const EMULATED = new Set([
  "TriggerSmartContract",
  "TransferContract",
  "FreezeBalanceV2Contract",
  "UnfreezeBalanceV2Contract",
  "WithdrawExpireUnfreezeContract",
  "DelegateResourceContract",
  "UnDelegateResourceContract",
]);

const TRANSFER_SELECTOR = "a9059cbb";
const BALANCE_OF_SELECTOR = "70a08231";

/** Bytes of a protobuf varint. */
function varintSize(n: number): number {
  let size = 1;
  for (let x = n; x >= 0x80; x = Math.floor(x / 0x80)) size += 1;
  return size;
}

/**
 * The least gas an EVM call with `data` (hex) may be sent with: its intrinsic gas, and since Prague
 * (EIP-7623) at least the calldata floor. A little above it, a call runs out at its first storage read.
 */
function intrinsicGas(data: string): number {
  let zero = 0;
  let nonZero = 0;
  for (let i = 0; i < data.length; i += 2) {
    if (data.slice(i, i + 2) === "00") zero += 1;
    else nonZero += 1;
  }
  const intrinsic = 21_000 + zero * 4 + nonZero * 16;
  const floor = 21_000 + 10 * (zero + 4 * nonZero);
  return Math.max(intrinsic, floor);
}

/** The revert data an `eth_call` error carries (JSON-RPC `error.data`, somewhere in viem's causes), or 0x. */
function revertData(e: unknown): string {
  for (let c: unknown = e; c && typeof c === "object"; c = (c as { cause?: unknown }).cause) {
    const data = (c as { data?: unknown }).data;
    if (typeof data === "string" && /^0x[0-9a-fA-F]*$/.test(data)) return data;
  }
  return "0x";
}

/** The call data of a trigger request: `data`, or keccak(function_selector)[0..4] + `parameter`. */
function callData(body: Json): string {
  if (typeof body.data === "string" && body.data) return strip(body.data);
  if (typeof body.function_selector !== "string") throw new Error("function_selector missing");
  const selector = keccak256(toBytes(body.function_selector.replace(/\s/g, ""))).slice(2, 10);
  return selector + (typeof body.parameter === "string" ? strip(body.parameter) : "");
}
