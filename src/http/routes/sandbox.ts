import { Type } from "@sinclair/typebox";
import { normalizeAddress } from "../../chains/index.js";
import { findCheckoutSession } from "../../deposits/index.js";
import type { CurrencyType } from "../../domain/currency.js";
import { AppError } from "../../domain/errors.js";
import { amountField, formatAmount, parseAmount } from "../../domain/money.js";
import type { App, RouteDeps } from "../app-types.js";
import { principal } from "../plugins/auth.js";
import { commonErrors, ok } from "../schemas/common.js";
import { AmountInput } from "../schemas/deposits.js";
import { CurrencyTypeSchema } from "../schemas/transaction.js";

/**
 * The simulator's payment. `blockchainTxHash` and `walletAddress` are the names every other
 * object uses; `txHash` and `address` (the first names of this answer) carry the same values and
 * stay for clients written against them.
 */
const SandboxPaymentSchema = Type.Object(
  {
    blockchainTxHash: Type.String({ description: "The payment's transaction hash on the sandbox chain" }),
    walletAddress: Type.String({ description: "The address paid" }),
    blockNumber: Type.Integer(),
    amount: Type.Number(),
    currencyType: CurrencyTypeSchema,
    txHash: Type.String({ deprecated: true, description: "Deprecated: the same value as blockchainTxHash" }),
    address: Type.String({ deprecated: true, description: "Deprecated: the same value as walletAddress" }),
  },
  { title: "SandboxPayment" },
);

function payment(
  tx: { txHash: string; blockNumber: number },
  address: string,
  units: bigint,
  currencyType: CurrencyType,
) {
  return {
    blockchainTxHash: tx.txHash,
    walletAddress: address,
    blockNumber: tx.blockNumber,
    amount: formatAmount(units),
    currencyType,
    txHash: tx.txHash,
    address,
  };
}

/**
 * Sandbox payments (CONTRACT §4.1, 404 in production): the built-in simulator pays an address of
 * the merchant from its faucet, mined at once. The deposit then takes the real path — the watcher
 * sees the block, the deposit logic confirms and credits, the webhook leaves — so a merchant tests
 * exactly what production does. Answers 202: the payment is on-chain, the deposit follows.
 */
export function sandboxRoutes(app: App, deps: RouteDeps) {
  const db = deps.database.db;
  const tags = ["Sandbox"];

  app.post(
    "/api/v1/sandbox/checkout/:id/pay",
    {
      config: { auth: "merchant", tier: "standard", sandboxOnly: true, errors: ["CHAIN_UNAVAILABLE"] },
      schema: {
        summary: "Pay a checkout session from the sandbox faucet",
        description:
          "Default amount: the session's full amount. Any amount works, also after expiry (a late payment).",
        tags,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        body: Type.Optional(
          Type.Object({ amount: Type.Optional(AmountInput) }, { additionalProperties: false }),
        ),
        response: { 202: ok(SandboxPaymentSchema), ...commonErrors },
      },
      // The body is optional (`curl -X POST …/pay` pays the full amount): an empty or missing body
      // is `{}` (http/json-body.ts).
    },
    async (request, reply) => {
      const who = principal(request);
      if (who.environment !== "sandbox")
        throw AppError.notFound("Sandbox payments exist only in the sandbox.");
      const session = await findCheckoutSession(db, who, request.params.id);
      if (!session) throw AppError.notFound("No checkout session with this id.");
      let units = session.transaction.amount;
      if (request.body?.amount !== undefined) {
        const parsed = amountField("amount", request.body.amount);
        if (parsed.units === undefined) throw AppError.validation(parsed.errors);
        units = parsed.units;
      }
      const chain = deps.chains.simulator(session.network, "sandbox");
      const tx = await chain.pay(session.address, units);
      reply.code(202);
      return { success: true as const, data: payment(tx, session.address, units, session.network) };
    },
  );

  app.post(
    "/api/v1/sandbox/wallet/:address/pay",
    {
      config: { auth: "merchant", tier: "standard", sandboxOnly: true, errors: ["CHAIN_UNAVAILABLE"] },
      schema: {
        summary: "Pay one of your deposit addresses from the sandbox faucet",
        tags,
        params: Type.Object({ address: Type.String({ maxLength: 100 }) }),
        body: Type.Object(
          { amount: AmountInput, currencyType: CurrencyTypeSchema },
          { additionalProperties: false },
        ),
        response: { 202: ok(SandboxPaymentSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const who = principal(request);
      if (who.environment !== "sandbox")
        throw AppError.notFound("Sandbox payments exist only in the sandbox.");
      const { currencyType } = request.body;
      const parsed = parseAmount(request.body.amount);
      if (!parsed.ok) throw AppError.validation([{ field: "amount", message: parsed.message }]);
      let address: string;
      try {
        address = normalizeAddress(currencyType, request.params.address);
      } catch {
        throw AppError.validation([{ field: "address", message: `is not a valid ${currencyType} address` }]);
      }
      // Only the merchant's own deposit addresses: the faucet is not a way to fund arbitrary addresses.
      const watched = await db
        .selectFrom("watched_addresses")
        .select("address")
        .where("network", "=", currencyType)
        .where("environment", "=", "sandbox")
        .where("address", "=", address)
        .where("merchant_id", "=", who.merchantId)
        .executeTakeFirst();
      if (!watched) throw AppError.notFound("No deposit address of yours with this value in the sandbox.");
      const tx = await deps.chains.simulator(currencyType, "sandbox").pay(address, parsed.units);
      reply.code(202);
      return { success: true as const, data: payment(tx, address, parsed.units, currencyType) };
    },
  );
}
