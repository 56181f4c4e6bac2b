import { Type } from "@sinclair/typebox";
import { createPaymentLink, deactivateLink, getPaymentLink, listPaymentLinks } from "../../links/index.js";
import type { App, RouteDeps } from "../app-types.js";
import type { AuthMode } from "../context.js";
import { idempotentCall, sendAnswer } from "../idempotency.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { principal } from "../plugins/auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import { CreatePaymentLinkBody, PaymentLinkSchema, presentPaymentLink } from "../schemas/payment-links.js";

const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const LinkListQuery = Type.Composite([
  ListQuerySchema,
  Type.Object({
    active: Type.Optional(Type.Boolean({ description: "Only active (true) or deactivated (false) links" })),
  }),
]);

/**
 * Payment links (docs/api-reference.md#payment-links, issue #41) on the API-key channel
 * (`/api/v1/public/…`, the secret required for writes) and the same on the dashboard channel
 * (`/api/v1/dashboard/…`): create, list, read (with the payments count and total), deactivate.
 * Creating and deactivating need `payments:create` (a link opens checkout sessions), reading
 * `money:read`. The payer's page is `link-page.ts`.
 */
export function paymentLinkRoutes(app: App, deps: RouteDeps) {
  const links = deps.useCases.paymentLinks;
  const tags = ["Payment links"];
  const channels: { prefix: string; auth: AuthMode; tier: "standard" | "dashboard" }[] = [
    { prefix: "/api/v1/public", auth: "apiKey", tier: "standard" },
    { prefix: "/api/v1/dashboard", auth: "dashboard", tier: "dashboard" },
  ];

  for (const { prefix, auth, tier } of channels) {
    app.post(
      `${prefix}/payment-links`,
      {
        config: { auth, tier, permission: "payments:create", requireSecret: true },
        schema: {
          summary: "Create a payment link",
          description:
            "A reusable page (`url`, `{base}/l/{id}`) that opens an ordinary checkout session for each payer: a token " +
            "`amount`, or `priceAmount` + `priceCurrency`, or neither (the payer enters an amount between `minAmount` " +
            "and `maxAmount`). At most `maxPayments` sessions are paid.",
          tags,
          headers: Type.Object({ "idempotency-key": Type.Optional(Type.String()) }),
          body: CreatePaymentLinkBody,
          response: { 201: ok(PaymentLinkSchema), ...commonErrors },
        },
      },
      async (request, reply) => {
        const who = principal(request);
        const answer = await createPaymentLink(
          links,
          who,
          request.body,
          idempotentCall(request, reply, who, 201, (v) => ({
            success: true as const,
            data: presentPaymentLink(v),
          })),
        );
        return sendAnswer(reply, answer);
      },
    );

    app.get(
      `${prefix}/payment-links`,
      {
        config: { auth, tier, permission: "money:read" },
        schema: {
          summary: "List payment links",
          description: "Newest first by default; `sortBy` `createdAt`, `updatedAt` or `amount`.",
          tags,
          querystring: LinkListQuery,
          response: { 200: list(PaymentLinkSchema), ...commonErrors },
        },
      },
      async (request) => {
        const params = listParams(request.query);
        const { rows, total } = await listPaymentLinks(
          links,
          principal(request),
          { active: request.query.active },
          params,
        );
        return {
          success: true as const,
          data: rows.map(presentPaymentLink),
          pagination: pagination(params, total),
        };
      },
    );

    app.get(
      `${prefix}/payment-links/:id`,
      {
        config: { auth, tier, permission: "money:read" },
        schema: {
          summary: "Get a payment link",
          tags,
          params: IdParams,
          response: { 200: ok(PaymentLinkSchema), ...commonErrors },
        },
      },
      async (request) => ({
        success: true as const,
        data: presentPaymentLink(await getPaymentLink(links, principal(request), request.params.id)),
      }),
    );

    app.post(
      `${prefix}/payment-links/:id/deactivate`,
      {
        config: { auth, tier, permission: "payments:create", requireSecret: true },
        schema: {
          summary: "Deactivate a payment link",
          description:
            "The page then says the link is closed and opens no session; sessions already open go on. " +
            "Deactivating an inactive link changes nothing.",
          tags,
          params: IdParams,
          response: { 200: ok(PaymentLinkSchema), ...commonErrors },
        },
      },
      async (request) => ({
        success: true as const,
        data: presentPaymentLink(await deactivateLink(links, principal(request), request.params.id)),
      }),
    );
  }
}
