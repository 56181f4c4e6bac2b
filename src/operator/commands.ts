import { createAdmin } from "../auth/index.js";
import type { Db } from "../db/database.js";
import { AppError } from "../domain/errors.js";
import { verifyLedger } from "../ledger/index.js";
import { createMerchantWithKeys } from "../merchants/index.js";

/**
 * Operator commands: run in-process against the database, or — when another process holds the
 * embedded database — sent to it over its control socket. One table of commands serves both.
 */
export const operatorCommands = {
  "merchant.create": async (db: Db, args: Record<string, unknown>) => {
    const email = typeof args.email === "string" ? args.email : "";
    const companyName = typeof args.companyName === "string" ? args.companyName : "";
    return createMerchantWithKeys(db, { email, companyName });
  },
  "admin.create": async (db: Db, args: Record<string, unknown>) => {
    const email = typeof args.email === "string" ? args.email : "";
    const password = typeof args.password === "string" ? args.password : "";
    return createAdmin(db, { email, password });
  },
  "ledger.verify": async (db: Db) => verifyLedger(db),
} as const;

export type OperatorCommand = keyof typeof operatorCommands;

export function isOperatorCommand(name: unknown): name is OperatorCommand {
  return typeof name === "string" && Object.hasOwn(operatorCommands, name);
}

export async function runOperatorCommand(
  db: Db,
  name: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  if (!isOperatorCommand(name)) throw AppError.notFound(`unknown operator command ${name}`);
  return operatorCommands[name](db, args);
}
