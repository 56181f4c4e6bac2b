import { type Hex, keccak256, toHex } from "viem";
import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { type AnvilNode, mintTestUsdt } from "./chain/anvil.js";
import { confirmedDeposit } from "./confirmed-deposit.js";

/**
 * Deposits on an anvil token as the watcher leaves them, for the sweep tests of an EVM network
 * (issue #39): `deposit` allocates a fresh sandbox deposit address with a confirmed, credited
 * deposit (test/support/confirmed-deposit.ts) and then mints the tokens there; `redeposit` sends an
 * address more and records it handed off after the address's last look (so the sweeper looks again).
 */
export interface EvmDeposits {
  db: Db;
  node: AnvilNode;
  token: Hex;
  deriver: AddressDeriver;
  merchantId: string;
  network: CurrencyType;
}

export async function deposit(
  d: EvmDeposits,
  i: number,
  amount: bigint,
): Promise<{ address: Hex; index: number }> {
  const address = (await d.db.transaction().execute(async (trx) => {
    const { address } = await confirmedDeposit(trx, {
      deriver: d.deriver,
      merchantId: d.merchantId,
      network: d.network,
      i,
      amount,
      txHash: keccak256(toHex(`deposit ${d.network} ${i}`)),
    });
    return address;
  })) as Hex;
  await mintTestUsdt(d.node, d.token, address, amount);
  const row = await d.db
    .selectFrom("watched_addresses")
    .select("derivation_index")
    .where("address", "=", address)
    .where("network", "=", d.network)
    .executeTakeFirstOrThrow();
  return { address, index: Number(row.derivation_index) };
}

export async function redeposit(d: EvmDeposits, address: Hex, tag: string, amount: bigint): Promise<void> {
  const r = await mintTestUsdt(d.node, d.token, address, amount);
  await d.db
    .insertInto("chain_observations")
    .values({
      id: `obs_again_${tag}_${r.transactionHash}`,
      network: d.network,
      environment: "sandbox",
      address,
      from_address: address,
      tx_hash: r.transactionHash,
      log_index: 0,
      block_number: 1,
      block_hash: "0x00",
      amount,
      status: "handed_off",
      handed_off_at: new Date(Date.now() + 1_000),
    })
    .execute();
}
