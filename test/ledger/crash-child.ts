/**
 * Child process of the crash test: opens a posting transaction on the database in argv[2] and
 * kills itself with SIGKILL after the balance update, before the journal is written.
 */
import { openDatabase } from "../../src/db/database.js";
import { UNIT } from "../../src/domain/money.js";
import { holdFunds } from "../../src/ledger/operations.js";

const [url, merchantId, transactionId] = process.argv.slice(2) as [string, string, string];
const database = await openDatabase({ kind: "postgres", url, poolSize: 1 });
await database.db.transaction().execute(async (trx) => {
  await holdFunds(
    trx,
    { merchantId, environment: "sandbox", currencyType: "USDT-TRC20", transactionId },
    7n * UNIT,
    {
      afterBalances: async () => {
        process.stdout.write("balances-updated\n");
        process.kill(process.pid, "SIGKILL");
        await new Promise(() => {}); // never continues
      },
    },
  );
});
