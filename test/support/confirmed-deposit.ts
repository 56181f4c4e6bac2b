import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { creditDeposit } from "../../src/ledger/operations.js";
import type { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";

/**
 * A confirmed deposit as the watcher and the deposit logic leave it, in the caller's transaction
 * `trx`: a sandbox deposit address allocated for `merchantId`, its transaction, a handed-off
 * observation of `txHash`, and the ledger credit (received 100 %, no fee). For the sweep's tests and
 * `bench:collect`, whose subject is what happens after a deposit. Returns the address and the
 * credit's result.
 */
export async function confirmedDeposit(
  trx: Db,
  d: {
    deriver: AddressDeriver;
    merchantId: string;
    network: CurrencyType;
    i: number;
    amount: bigint;
    txHash: string;
  },
) {
  const { address } = await allocateDepositAddress(trx, {
    deriver: d.deriver,
    network: d.network,
    environment: "sandbox",
    merchantId: d.merchantId,
    purpose: "wallet",
  });
  const txId = `tx_dep_${d.network}_${d.i}`;
  await trx
    .insertInto("transactions")
    .values({
      id: txId,
      merchant_id: d.merchantId,
      environment: "sandbox",
      type: "deposit",
      status: "confirmed",
      currency_type: d.network,
      amount: d.amount,
      net_amount: d.amount,
      fee: 0n,
      wallet_address: address,
    } as never)
    .execute();
  await trx
    .insertInto("chain_observations")
    .values({
      id: `obs_${d.network}_${d.i}`,
      network: d.network,
      environment: "sandbox",
      address,
      from_address: address,
      tx_hash: d.txHash,
      log_index: d.i,
      block_number: 1,
      block_hash: "0x00",
      amount: d.amount,
      status: "handed_off",
      handed_off_at: new Date(Date.now() - 1_000),
    })
    .execute();
  const credit = await creditDeposit(
    trx,
    { merchantId: d.merchantId, environment: "sandbox", currencyType: d.network, transactionId: txId },
    d.amount,
    0n,
  );
  return { address, credit };
}
