import { createAdmin, createMerchantWithOwner } from "../auth/index.js";
import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { verifyLedger } from "../ledger/index.js";
import type { Clock } from "../lib/clock.js";
import { listOutbox, mailView } from "../mail/index.js";
import { custodialChains, reconcileReserves, recordReserveCheck } from "../reserves/index.js";
import { costsSince, transferCosts } from "../sender/index.js";
import { rescanRange } from "../watcher/index.js";

/**
 * Operator commands: run in-process against the database, or — when another process holds the
 * embedded database — sent to it over its control socket. One table of commands serves both.
 */

/** What a command may use: the database, and the chains (built on first use: most commands need none). */
export interface OperatorContext {
  db: Db;
  clock: Clock;
  chains(): ChainRegistry;
  /** The gateway's addresses (watch-only keys from the configuration): `chain rescan` records only its own. */
  addresses(): Promise<{ address(network: CurrencyType, environment: Environment, index: number): string }>;
  /** The configured cold wallet of a chain (reserves count it), if any. */
  coldWallet?: (network: CurrencyType, environment: "production" | "sandbox") => string | undefined;
}

const int = (v: unknown): number =>
  typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : Number.NaN;

export const operatorCommands = {
  /** A merchant, its key pairs and its owner's login (a password, or a link that sets the first one). */
  "merchant.create": async ({ db, clock }: OperatorContext, args: Record<string, unknown>) => {
    const email = typeof args.email === "string" ? args.email : "";
    const companyName = typeof args.companyName === "string" ? args.companyName : "";
    const password = typeof args.password === "string" ? args.password : undefined;
    const { merchant, ownerId, passwordToken } = await createMerchantWithOwner(
      db,
      { email, companyName, password },
      new Date(clock.now()),
    );
    return { ...merchant, ownerId, passwordToken };
  },
  /** Development only: the local outbox (every recipient's mails, newest first). */
  "mail.list": async ({ db }: OperatorContext, args: Record<string, unknown>) => {
    const to = typeof args.to === "string" && args.to !== "" ? args.to : undefined;
    const limit = Math.min(Math.max(int(args.limit ?? 20), 1), 200);
    if (Number.isNaN(limit))
      throw AppError.validation([{ field: "limit", message: "must be a whole number" }]);
    const { rows, total } = await listOutbox(db, to, limit, 0);
    return { total, mails: rows.map(mailView) };
  },
  "admin.create": async ({ db }: OperatorContext, args: Record<string, unknown>) => {
    const email = typeof args.email === "string" ? args.email : "";
    const password = typeof args.password === "string" ? args.password : "";
    return createAdmin(db, { email, password });
  },
  "ledger.verify": async ({ db }: OperatorContext) => verifyLedger(db),
  /** Issue #38: what the gateway's own transfers cost per network, month and purpose. */
  "costs.report": async ({ db, clock }: OperatorContext, args: Record<string, unknown>) => {
    const months = int(args.months ?? 3);
    if (!Number.isInteger(months) || months < 1 || months > 120)
      throw AppError.validation([{ field: "months", message: "must be a whole number from 1 to 120" }]);
    return transferCosts(db, costsSince(new Date(clock.now()), months));
  },
  /** Issue #22: every available chain's reserves against the ledger (and recorded, as the job does). */
  "reserves.reconcile": async (ctx: OperatorContext, args: Record<string, unknown>) => {
    const tolerance =
      typeof args.tolerance === "string" && /^\d+$/.test(args.tolerance) ? BigInt(args.tolerance) : 0n;
    const reports = [];
    for (const chain of custodialChains(ctx.chains())) {
      const coldWallet = ctx.coldWallet?.(chain.network, chain.environment);
      const report = await reconcileReserves(
        ctx,
        { ...chain, adapter: chain.adapter, coldWallet },
        tolerance,
      );
      await recordReserveCheck(ctx.db, report);
      reports.push(report);
    }
    return reports;
  },
  /** Issue #22: re-read a block range and hand off what the watcher missed (idempotent). */
  "chain.rescan": async (ctx: OperatorContext, args: Record<string, unknown>) => {
    const network = args.network;
    const environment = args.environment;
    if (!(CURRENCY_TYPES as readonly unknown[]).includes(network))
      throw AppError.validation([
        { field: "network", message: `must be one of ${CURRENCY_TYPES.join(", ")}` },
      ]);
    if (environment !== "production" && environment !== "sandbox")
      throw AppError.validation([{ field: "environment", message: "must be production or sandbox" }]);
    const chain = ctx.chains().get(network as CurrencyType, environment);
    const addresses = await ctx.addresses();
    return rescanRange(
      ctx,
      {
        network: chain.network,
        environment,
        adapter: chain.adapter,
        rangeBlocks: chain.scan.maxRangeBlocks,
        derive: (index) => addresses.address(chain.network, environment, index),
      },
      { fromBlock: int(args.from), toBlock: int(args.to) },
    );
  },
} as const;

export type OperatorCommand = keyof typeof operatorCommands;

export function isOperatorCommand(name: unknown): name is OperatorCommand {
  return typeof name === "string" && Object.hasOwn(operatorCommands, name);
}

export async function runOperatorCommand(
  ctx: OperatorContext,
  name: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  if (!isOperatorCommand(name)) throw AppError.notFound(`unknown operator command ${name}`);
  return operatorCommands[name](ctx, args);
}
