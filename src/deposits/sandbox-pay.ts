import { type ChainRegistry, normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import { type CurrencyType, testFailureAddress } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { amountField, parseAmount } from "../domain/money.js";
import { isIssuedDepositAddress, isMerchantDepositAddress } from "../watcher/index.js";
import { findCheckoutSession } from "./sessions-store.js";

/**
 * Sandbox payments (docs/merchants/sandbox.md#simulated-payments): the built-in simulator pays an address of the merchant from its
 * faucet, mined at once. The deposit then takes the real path (watcher, deposit logic, webhook).
 * Only in the sandbox; only the merchant's own addresses (the faucet funds nothing else).
 */
export interface SandboxPayDeps {
  db: Db;
  chains: Pick<ChainRegistry, "simulator" | "get">;
}

export interface SandboxPayment {
  tx: { txHash: string; blockNumber: number };
  address: string;
  units: bigint;
  currencyType: CurrencyType;
}

type Scope = { merchantId: string; environment: Environment };

function sandboxOnly(scope: Scope): void {
  if (scope.environment !== "sandbox") throw AppError.notFound("Sandbox payments exist only in the sandbox.");
}

/**
 * The sender a sandbox payment names (`from`), or null for the faucet: a valid address of the
 * network that is none of the gateway's deposit addresses (the simulator first funds `from`, which
 * would credit that address's owner).
 */
async function senderOf(
  deps: SandboxPayDeps,
  currencyType: CurrencyType,
  from: unknown,
): Promise<string | null> {
  if (from === undefined) return null;
  let sender: string;
  try {
    sender = normalizeAddress(currencyType, String(from));
  } catch {
    throw AppError.validation([{ field: "from", message: `is not a valid ${currencyType} address` }]);
  }
  if (sender === normalizeAddress(currencyType, testFailureAddress(currencyType)))
    throw AppError.validation([
      { field: "from", message: "is the test failure address: a transfer from it always fails" },
    ]);
  if (await isIssuedDepositAddress(deps.db, [currencyType], sender))
    throw AppError.validation([
      { field: "from", message: "is a deposit address of this gateway, not a sender" },
    ]);
  return sender;
}

/**
 * Pays checkout session `id`: its full amount, or `amount` when given (any amount, also after
 * expiry); from the faucet, or as `from`.
 */
export async function paySandboxSession(
  deps: SandboxPayDeps,
  scope: Scope,
  id: string,
  input: { amount?: unknown; from?: unknown } = {},
): Promise<SandboxPayment> {
  const { amount } = input;
  sandboxOnly(scope);
  const session = await findCheckoutSession(deps.db, scope, id);
  if (!session) throw AppError.notFound("No checkout session with this id.");
  let units = session.transaction.amount;
  if (amount !== undefined) {
    const parsed = amountField("amount", amount);
    if (parsed.units === undefined) throw AppError.validation(parsed.errors);
    units = parsed.units;
  }
  const chain = deps.chains.simulator(session.network, "sandbox");
  const from = await senderOf(deps, session.network, input.from);
  const tx = from
    ? await chain.payFrom(from, session.address, units)
    : await chain.pay(session.address, units);
  return { tx, address: session.address, units, currencyType: session.network };
}

/** Pays one of the merchant's deposit addresses in the sandbox. */
export async function paySandboxAddress(
  deps: SandboxPayDeps,
  scope: Scope,
  input: { address: string; currencyType: CurrencyType; amount: unknown; from?: unknown },
): Promise<SandboxPayment> {
  sandboxOnly(scope);
  const { currencyType } = input;
  // A currency type this deployment does not enable is a 400 on currencyType, as everywhere.
  deps.chains.get(currencyType, "sandbox");
  const parsed = parseAmount(input.amount);
  if (!parsed.ok) throw AppError.validation([{ field: "amount", message: parsed.message }]);
  let address: string;
  try {
    address = normalizeAddress(currencyType, input.address);
  } catch {
    throw AppError.validation([{ field: "address", message: `is not a valid ${currencyType} address` }]);
  }
  // Only the merchant's own deposit addresses: the faucet is not a way to fund arbitrary addresses.
  const watched = await isMerchantDepositAddress(deps.db, {
    merchantId: scope.merchantId,
    network: currencyType,
    environment: "sandbox",
    address,
  });
  if (!watched) throw AppError.notFound("No deposit address of yours with this value in the sandbox.");
  const from = await senderOf(deps, currencyType, input.from);
  const chain = deps.chains.simulator(currencyType, "sandbox");
  const tx = from ? await chain.payFrom(from, address, parsed.units) : await chain.pay(address, parsed.units);
  return { tx, address, units: parsed.units, currencyType };
}
