import type { Hex } from "viem";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import type { Db } from "../../src/db/database.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import {
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestUsdt,
  keepMining,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import type { DepositFlow, WithdrawalFlow } from "./book.js";
import { DESTINATIONS } from "./flows.js";

/**
 * The cluster's production TRON chain with the energy engine on (issue #38): PRODUCTION
 * USDT-TRC20 is the resource-faithful TRON emulator over anvil; a `signer` process signs; the
 * operator has funded the production resource account, which the engine stakes, so every sweep
 * and hot-wallet withdrawal gets its energy delegated just before signing and reclaimed once final.
 * The faults of the cluster test (worker and api SIGKILLs, every database backend terminated) hit
 * this pipeline while the test pays deposits on chain and asks for withdrawals.
 *
 * `check` then reads the chain and the books: every sending intent confirmed, exactly one attempt
 * of each executed on chain (nothing signed twice into the chain), no sweep or withdrawal burning
 * TRX for energy, as many reclaims as delegations and nothing left delegated, every paid deposit
 * address emptied into the hot wallet, and the hot wallet and the recipient holding exactly what
 * the flows say.
 */

const NETWORK = "USDT-TRC20";
const ENV = "production";
const WEI_PER_SUN = 10n ** 12n;
const TRX = (n: bigint) => n * 1_000_000n;
/** The hot wallet's tokens before the load (it is a holder: a sweep to it costs 64,285 energy). */
const HOT_START = 1_000_000n * 1_000_000n;
/** Confirmations of TRC20 (sandbox simulator included): the strand's pipeline settles in seconds. */
export const TRON_STRAND_CONFIRMATIONS = 3;

export interface TronStrand {
  readonly emulator: TronEmulator;
  /** Added to every role's environment. */
  readonly env: Record<string, string>;
  /** The operator's funding of the production hot wallet, gas tank and resource account. */
  fund(mnemonic: string): Promise<void>;
  /** Pays `amount` to a production deposit address (one payer: payments queue for its nonce). */
  pay(address: string, amount: bigint): Promise<void>;
  /** Waits until the engine staked the resource account's TRX for energy (before it, transfers burn). */
  staked(db: Db, timeoutMs: number): Promise<void>;
  /** The production TRON transfers open now, by kind and status (what a fault hits). */
  inFlight(db: Db): Promise<Record<string, number>>;
  /** Whether the engine's pipeline has nothing in flight (the settle loop's condition). */
  idle(db: Db, paidDeposits: number): Promise<boolean>;
  check(
    db: Db,
    mnemonic: string,
    deposits: readonly DepositFlow[],
    withdrawals: readonly { flow: WithdrawalFlow; status: string | undefined }[],
  ): Promise<{ failures: string[]; figures: Record<string, unknown> }>;
  stop(): Promise<void>;
}

export async function startTronStrand(): Promise<TronStrand> {
  const anvil: AnvilNode = await startAnvil();
  const token = await deployTestUsdt(anvil);
  const emulator = await startTronEmulator(anvil, token);
  const stopMining = keepMining(anvil, 500);
  const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  let payments: Promise<unknown> = Promise.resolve();
  const evm = (address: string) => tronAddressToEvm(address) as Hex;

  const transfers = (db: Db) =>
    db
      .selectFrom("outgoing_transfers")
      .select([
        "intent_id",
        "kind",
        "status",
        "asset",
        "tx_hash",
        "to_address",
        "amount",
        "reason",
        "last_error",
      ])
      .where("network", "=", NETWORK)
      .where("environment", "=", ENV)
      .execute();

  return {
    emulator,
    env: {
      TRC20_API_URL: emulator.url,
      USDT_TRC20_CONTRACT: emulator.tokenAddress,
      CONFIRMATIONS_TRC20: String(TRON_STRAND_CONFIRMATIONS),
    },

    async fund(mnemonic) {
      const keys = AddressDeriver.fromMnemonic(mnemonic);
      const at = (i: number) => evm(keys.address(NETWORK, ENV, i));
      await mintTestUsdt(anvil, token, at(HOT_WALLET_INDEX), HOT_START);
      await anvil.testClient.setBalance({ address: at(HOT_WALLET_INDEX), value: TRX(1_000n) * WEI_PER_SUN });
      await anvil.testClient.setBalance({ address: at(GAS_TANK_INDEX), value: TRX(100_000n) * WEI_PER_SUN });
      // Enough stake that no transfer of the run waits for energy (the engine stakes it).
      await anvil.testClient.setBalance({
        address: at(RESOURCE_ACCOUNT_INDEX),
        value: TRX(5_000_000n) * WEI_PER_SUN,
      });
    },

    async pay(address, amount) {
      const mine = payments.then(() => mintTestUsdt(anvil, token, evm(address), amount));
      payments = mine.catch(() => undefined);
      await mine;
    },

    async staked(db, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const rows = await transfers(db);
        if (rows.some((r) => r.kind === "resource_stake" && r.status === "confirmed" && r.asset === "energy"))
          return;
        if (Date.now() > until)
          throw new Error(`the engine did not stake within ${timeoutMs} ms: ${JSON.stringify(rows)}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },

    async inFlight(db) {
      const open: Record<string, number> = {};
      for (const r of await transfers(db))
        if (r.status === "queued" || r.status === "signed" || r.status === "broadcast")
          open[`${r.kind}:${r.status}`] = (open[`${r.kind}:${r.status}`] ?? 0) + 1;
      return open;
    },

    async idle(db, paidDeposits) {
      const rows = await transfers(db);
      const open = rows.filter(
        (r) => r.status === "queued" || r.status === "signed" || r.status === "broadcast",
      );
      const count = (kind: string) => rows.filter((r) => r.kind === kind && r.status === "confirmed").length;
      return (
        open.length === 0 &&
        count("sweep") >= paidDeposits &&
        count("resource_reclaim") === count("resource_delegation")
      );
    },

    async check(db, mnemonic, deposits, withdrawals) {
      const failures: string[] = [];
      const fail = (s: string) => failures.push(`TRON (engine on): ${s}`);
      const keys = AddressDeriver.fromMnemonic(mnemonic);
      const hot = keys.address(NETWORK, ENV, HOT_WALLET_INDEX);
      const resource = keys.address(NETWORK, ENV, RESOURCE_ACCOUNT_INDEX);
      const rows = await transfers(db);
      const byKind: Record<string, number> = {};
      for (const r of rows) byKind[`${r.kind}:${r.status}`] = (byKind[`${r.kind}:${r.status}`] ?? 0) + 1;

      // A delegation asked for by a worker whose gate read the energy before an earlier delegation
      // landed finds the transfers finished (served by that one): it fails unsigned, never sent.
      const unneeded = (r: (typeof rows)[number]) =>
        r.kind === "resource_delegation" &&
        r.status === "failed" &&
        r.tx_hash === null &&
        (r.reason ?? "").startsWith("energy_unneeded: ");
      for (const r of rows.filter((x) => x.status !== "confirmed" && !unneeded(x)))
        fail(`${r.kind} ${r.intent_id} is ${r.status} (${r.reason ?? r.last_error ?? ""})`);
      const confirmed = (kind: string) => rows.filter((r) => r.kind === kind && r.status === "confirmed");
      const paid = deposits.filter((d) => d.paid === "yes" && d.address);
      if (confirmed("sweep").length < paid.length)
        fail(`${confirmed("sweep").length} sweeps for ${paid.length} paid deposits`);
      if (confirmed("resource_delegation").length === 0)
        fail("no energy was ever delegated: the engine was off");
      if (confirmed("resource_reclaim").length !== confirmed("resource_delegation").length)
        fail(
          `${confirmed("resource_delegation").length} delegations, ${confirmed("resource_reclaim").length} reclaims`,
        );

      // Each intent: exactly one attempt the chain executed, the one its row records (a new attempt
      // is signed only once the earlier one expired unbroadcast: never two that could both be mined).
      const attempts = await db
        .selectFrom("outgoing_transfer_attempts")
        .select(["intent_id", "tx_hash"])
        .where("intent_id", "in", rows.length > 0 ? rows.map((r) => r.intent_id) : ["-"])
        .orderBy("intent_id")
        .orderBy("seq")
        .execute();
      let resigned = 0;
      for (const r of rows) {
        const mine = attempts.filter((a) => a.intent_id === r.intent_id);
        const executed = mine.filter((a) => emulator.charges(a.tx_hash) !== undefined).map((a) => a.tx_hash);
        if (unneeded(r)) {
          if (mine.length > 0) fail(`${r.kind} ${r.intent_id}: failed unneeded, yet ${mine.length} attempts`);
          continue;
        }
        if (executed.length !== 1 || executed[0] !== r.tx_hash)
          fail(`${r.kind} ${r.intent_id}: executed ${JSON.stringify(executed)}, recorded ${r.tx_hash}`);
        resigned += Math.max(0, mine.length - 1);
      }

      // Energy: delegated, never burned; none left delegated on chain.
      let burnedForEnergy = 0n;
      for (const r of [...confirmed("sweep"), ...confirmed("withdrawal")]) {
        const c = r.tx_hash ? emulator.charges(r.tx_hash) : undefined;
        if (!c) continue;
        burnedForEnergy += c.energyFee;
        if (c.energyFee !== 0n || c.outOfEnergy)
          fail(
            `${r.kind} ${r.intent_id} burned ${c.energyFee} sun for energy${c.outOfEnergy ? " (OUT_OF_ENERGY)" : ""}`,
          );
      }
      const left = emulator.resources.delegationsOf(evm(resource));
      if (left.length > 0)
        fail(`still delegated: ${JSON.stringify(left, (_, v) => (typeof v === "bigint" ? `${v}` : v))}`);

      // Tokens: every paid deposit address emptied; the hot wallet and the recipient hold what the flows say.
      let swept = 0n;
      for (const d of paid) {
        const balance = await writer.tokenBalance(d.address as string);
        if (balance !== 0n) fail(`deposit address ${d.address} still holds ${balance}`);
        swept += d.amount;
      }
      let sent = 0n;
      for (const { flow, status } of withdrawals)
        if (status === "completed" && flow.fee !== undefined) sent += flow.amount - flow.fee;
      const hotBalance = await writer.tokenBalance(hot);
      if (hotBalance !== HOT_START + swept - sent)
        fail(`hot wallet holds ${hotBalance}, the flows say ${HOT_START + swept - sent}`);
      const recipient = await writer.tokenBalance(DESTINATIONS[NETWORK].ordinary);
      if (recipient !== sent)
        fail(`the withdrawals' recipient holds ${recipient}, the completed ones sent ${sent}`);

      return {
        failures,
        figures: {
          paidDeposits: paid.length,
          withdrawals: withdrawals.length,
          transfers: byKind,
          resignedAfterExpiry: resigned,
          burnedForEnergySun: String(burnedForEnergy),
        },
      };
    },

    async stop() {
      stopMining();
      await emulator.stop();
      await anvil.stop();
    },
  };
}
