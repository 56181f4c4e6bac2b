import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { creditDeposit } from "../../src/ledger/operations.js";
import type { PostingContext } from "../../src/ledger/post.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { insertTransaction } from "../../src/transactions/index.js";

let seq = 0;

export async function newMerchant(db: Db): Promise<string> {
  const m = await createMerchantWithKeys(db, {
    email: `ledger${++seq}-${Date.now()}@example.com`,
    companyName: "Ledger Co",
  });
  return m.id;
}

export function ctx(
  merchantId: string,
  transactionId = newId("tx"),
  environment: Environment = "sandbox",
  currencyType: CurrencyType = "USDT-TRC20",
): PostingContext {
  return { merchantId, environment, currencyType, transactionId };
}

/** Records a confirmed deposit of `usdt` and credits it (no fee). */
export async function fund(
  db: Db,
  merchantId: string,
  usdt: bigint,
  environment: Environment = "sandbox",
  currencyType: CurrencyType = "USDT-TRC20",
) {
  const units = usdt * UNIT;
  await db.transaction().execute(async (trx) => {
    const tx = await insertTransaction(trx, {
      id: newId("tx"),
      merchantId,
      environment,
      type: "deposit",
      status: "confirmed",
      currencyType,
      amount: units,
      fee: 0n,
      actualBalance: units,
    });
    await creditDeposit(trx, ctx(merchantId, tx.id, environment, currencyType), units, 0n);
  });
}
