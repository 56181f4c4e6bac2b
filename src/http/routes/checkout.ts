import { Type } from "@sinclair/typebox";
import { getCheckoutSession, openCheckoutSession, openDepositWallet } from "../../deposits/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { idempotentCall, sendAnswer } from "../idempotency.js";
import { requireVerifiedSecret } from "../plugins/api-key-auth.js";
import { principal } from "../plugins/auth.js";
import { commonErrors, ok } from "../schemas/common.js";
import {
  CheckoutSessionSchema,
  CreateCheckoutSessionBody,
  DepositWalletSchema,
  GenerateWalletBody,
  presentCheckoutSession,
} from "../schemas/deposits.js";

const IdempotencyHeaders = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({ description: "Replays the stored response for 24 h when the same request is sent again" }),
  ),
});

/**
 * A generated deposit address. `walletAddress` is the name every other object uses for it;
 * `address` (the contract's first name for this field) carries the same value and stays for
 * clients written against it.
 */
const GeneratedWalletSchema = Type.Object(
  {
    ...DepositWalletSchema.properties,
    address: Type.String({ deprecated: true, description: "Deprecated: the same value as walletAddress" }),
    walletAddress: Type.String({ description: "The permanent deposit address" }),
  },
  {
    title: "DepositWallet",
    description: "A permanent deposit address: every payment to it is its own deposit",
    examples: [
      {
        id: "dw_01JD81B2C3D4E5F6G7H8J9K0L1",
        address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
        walletAddress: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
        currencyType: "USDT-TRC20",
        network: "USDT-TRC20",
        label: "main",
        externalUserId: "user-311",
        createdAt: "2026-01-15T10:00:00.000Z",
      },
    ],
  },
);

/**
 * Deposits (docs/api-reference.md#deposits): `POST /checkout/session`, `GET /checkout/session/{id}`,
 * `POST /wallet/generate` — at the root, without `/api/v1` (docs/api-reference.md#deposits). Both credential channels:
 * the API key of a merchant's server, or the dashboard session (its "create a test session").
 */
export function checkoutRoutes(app: App, deps: RouteDeps) {
  const checkout = deps.useCases.checkout;
  const tags = ["Deposits"];

  app.post(
    "/checkout/session",
    {
      config: {
        auth: "merchant",
        tier: "standard",
        permission: "payments:create",
        errors: ["CHAIN_UNAVAILABLE", "RATE_UNAVAILABLE"],
      },
      schema: {
        summary: "Create a checkout session",
        description:
          "A fresh deposit address for one payment of `amount`, a hosted page (`checkoutUrl`) and a timer. " +
          "The session becomes `confirmed` when the address has received `amount` with the required " +
          "confirmations, or `failed` at `expiresAt`; a `deposit` webhook reports either. A price in fiat " +
          "(`priceAmount` + `priceCurrency` instead of `amount`) is converted at the exchange rate locked now.",
        tags,
        headers: IdempotencyHeaders,
        body: CreateCheckoutSessionBody,
        response: { 201: ok(CheckoutSessionSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const who = principal(request);
      const body = request.body;
      // Before anything else (validation resolves the URL; an Idempotency-Key replay must not skip it).
      if (body.callbackUrl !== undefined) requireVerifiedSecret(who, "Setting callbackUrl");
      const answer = await openCheckoutSession(
        checkout,
        who,
        body,
        idempotentCall(request, reply, who, 201, (view) => ({
          success: true as const,
          data: presentCheckoutSession(view.session, view.checkoutUrl, view.detection),
        })),
      );
      return sendAnswer(reply, answer);
    },
  );

  app.get(
    "/checkout/session/:id",
    {
      config: { auth: "merchant", tier: "standard", permission: "money:read" },
      schema: {
        summary: "Get a checkout session",
        tags,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        response: { 200: ok(CheckoutSessionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const who = principal(request);
      const view = await getCheckoutSession(checkout, who, request.params.id);
      return {
        success: true as const,
        data: presentCheckoutSession(view.session, view.checkoutUrl, view.detection),
      };
    },
  );

  app.post(
    "/wallet/generate",
    {
      config: {
        auth: "merchant",
        tier: "wallet",
        permission: "payments:create",
        errors: ["CHAIN_UNAVAILABLE"],
      },
      schema: {
        summary: "Generate a permanent deposit address",
        description:
          "Every payment to the address becomes its own `confirmed` deposit (with its webhook), for as " +
          "long as the address exists. Tie it to one of your users with `externalUserId`.",
        tags,
        headers: IdempotencyHeaders,
        body: GenerateWalletBody,
        response: { 201: ok(GeneratedWalletSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const who = principal(request);
      const body = request.body;
      const answer = await openDepositWallet(
        checkout,
        who,
        body,
        idempotentCall(request, reply, who, 201, (wallet) => ({
          success: true as const,
          data: { ...wallet, walletAddress: wallet.address, createdAt: wallet.createdAt.toISOString() },
        })),
      );
      return sendAnswer(reply, answer);
    },
  );
}
