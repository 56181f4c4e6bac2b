import { Type } from "@sinclair/typebox";
import { paySandboxAddress, paySandboxSession, type SandboxPayment } from "../../deposits/index.js";
import { formatAmount } from "../../domain/money.js";
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

/** The payment's sender: by default the simulator's faucet; a test frozen address tests `held`. */
const FromInput = Type.String({
  maxLength: 100,
  description:
    "Send as this address (default: the simulator's faucet). A test frozen address (docs/merchants/sandbox.md#test-frozen-addresses) makes the deposit `held`. Not one of the gateway's own deposit addresses.",
});

function payment({ tx, address, units, currencyType }: SandboxPayment) {
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
 * Sandbox payments (docs/merchants/sandbox.md#simulated-payments, 404 in production): the built-in simulator pays an address of
 * the merchant from its faucet, mined at once. The deposit then takes the real path — the watcher
 * sees the block, the deposit logic confirms and credits, the webhook leaves — so a merchant tests
 * exactly what production does. Answers 202: the payment is on-chain, the deposit follows.
 */
export function sandboxRoutes(app: App, deps: RouteDeps) {
  const pay = { db: deps.database.db, chains: deps.chains };
  const tags = ["Sandbox"];

  app.post(
    "/api/v1/sandbox/checkout/:id/pay",
    {
      config: {
        auth: "merchant",
        tier: "standard",
        permission: "sandbox:pay",
        sandboxOnly: true,
        errors: ["CHAIN_UNAVAILABLE"],
      },
      schema: {
        summary: "Pay a checkout session from the sandbox faucet",
        description:
          "Default amount: the session's full amount. Any amount works, also after expiry (a late payment).",
        tags,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        body: Type.Optional(
          Type.Object(
            { amount: Type.Optional(AmountInput), from: Type.Optional(FromInput) },
            { additionalProperties: false },
          ),
        ),
        response: { 202: ok(SandboxPaymentSchema), ...commonErrors },
      },
      // The body is optional (`curl -X POST …/pay` pays the full amount): an empty or missing body
      // is `{}` (http/json-body.ts).
    },
    async (request, reply) => {
      const paid = await paySandboxSession(pay, principal(request), request.params.id, {
        amount: request.body?.amount,
        from: request.body?.from,
      });
      reply.code(202);
      return { success: true as const, data: payment(paid) };
    },
  );

  app.post(
    "/api/v1/sandbox/wallet/:address/pay",
    {
      config: {
        auth: "merchant",
        tier: "standard",
        permission: "sandbox:pay",
        sandboxOnly: true,
        errors: ["CHAIN_UNAVAILABLE"],
      },
      schema: {
        summary: "Pay one of your deposit addresses from the sandbox faucet",
        tags,
        params: Type.Object({ address: Type.String({ maxLength: 100 }) }),
        body: Type.Object(
          { amount: AmountInput, currencyType: CurrencyTypeSchema, from: Type.Optional(FromInput) },
          { additionalProperties: false },
        ),
        response: { 202: ok(SandboxPaymentSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const paid = await paySandboxAddress(pay, principal(request), {
        address: request.params.address,
        currencyType: request.body.currencyType,
        amount: request.body.amount,
        from: request.body.from,
      });
      reply.code(202);
      return { success: true as const, data: payment(paid) };
    },
  );
}
