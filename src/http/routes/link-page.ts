import { randomBytes } from "node:crypto";
import { Type } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { linkPage, openLinkSession } from "../../links/index.js";
import {
  chooseLanguage,
  isClosed,
  type LinkPageInput,
  linkPageSecurityPolicy,
  renderLinkMessagePage,
  renderLinkPage,
} from "../../pay/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ErrorEnvelope, RateLimitedEnvelope } from "../schemas/common.js";

const Html = (description: string) => ({
  description,
  content: { "text/html": { schema: Type.String() } },
});
const Params = Type.Object({ id: Type.String({ maxLength: 100, description: "The payment link id" }) });
const Query = Type.Object({
  lang: Type.Optional(
    Type.String({
      maxLength: 16,
      description: "Page language (`en`, `de`, `fr`, `es`, `pt`, `tr`, `ru`, `zh`)",
    }),
  ),
});
const FormBody = Type.Object(
  {
    currencyType: Type.Optional(Type.String({ maxLength: 64, description: "The network the payer chose" })),
    amount: Type.Optional(
      Type.String({ maxLength: 64, description: "Open amount only: what the payer entered" }),
    ),
  },
  { additionalProperties: false },
);

/** A form body is small: two fields. */
const FORM_BODY_LIMIT = 4096;

function pageHeaders(reply: FastifyReply, nonce: string, lang: string) {
  reply
    .type("text/html; charset=utf-8")
    .header("Content-Security-Policy", linkPageSecurityPolicy(nonce))
    .header("Cache-Control", "no-store")
    .header("Referrer-Policy", "no-referrer")
    .header("X-Frame-Options", "DENY")
    .header("Content-Language", lang)
    .header("Vary", "Accept-Language");
}

/**
 * A form post from another site is refused (CSRF): when the browser says where the form came from
 * (`Sec-Fetch-Site`, `Origin`), it must be this origin — the request's `Host`, or the environment's
 * configured base URL (a proxy in front may rewrite `Host`). Clients that send neither (not a
 * browser) are let through: they could post directly anyway; the Public Page tier limits them.
 */
function sameOrigin(request: FastifyRequest, baseUrl: string): boolean {
  const site = request.headers["sec-fetch-site"];
  if (typeof site === "string" && site !== "same-origin" && site !== "none") return false;
  // The browser itself vouches for it (a page cannot set `Sec-Fetch-*`). Its `Origin` is then
  // `null`: the page's referrer policy is `no-referrer` (the Playwright tour found the 403).
  if (site === "same-origin") return true;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  if (typeof origin !== "string" || origin === "null") return false;
  try {
    const host = new URL(origin).host;
    return host === request.headers.host || host === new URL(baseUrl).host;
  } catch {
    return false;
  }
}

/**
 * The payer's page of a payment link (docs/merchants/payment-links.md, issue #41): `GET /l/{id}`
 * shows it (410 once the link is closed: deactivated, expired or all payments received);
 * `POST /l/{id}` (the page's form) opens an ordinary checkout session and answers 303 to its
 * `/pay/{id}`, or the page again with why not (400 entry refused, 409 every slot taken, 410 closed,
 * 503 chain or rate unavailable) — nothing created then. Public Page tier, no credentials; a link
 * is visible only on the base URL of its environment.
 */
export function linkPageRoutes(app: App, deps: RouteDeps) {
  const links = deps.useCases.paymentLinks;
  const tags = ["Hosted payment page"];

  app.get(
    "/l/:id",
    {
      config: { tier: "publicPage" },
      schema: {
        summary: "Payment link page",
        description:
          "HTML page of a payment link for the payer: title, description, the amount (or a field for it), " +
          "a network picker and a button. No credentials.",
        tags,
        params: Params,
        querystring: Query,
        response: {
          200: Html("The link's page"),
          404: Html("No payment link with this id in this environment"),
          410: Html("The link is closed: deactivated, expired or all its payments received"),
          429: RateLimitedEnvelope,
          500: ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
      const nonce = randomBytes(16).toString("base64");
      pageHeaders(reply, nonce, lang);
      const page = await linkPage(links, request.environment, request.params.id);
      if (!page) return reply.code(404).send(renderLinkMessagePage(lang, nonce, "notFound"));
      const input: LinkPageInput = {
        lang,
        nonce,
        title: page.link.title,
        description: page.link.description,
        price: page.link.price,
        networks: page.networks,
        state: page.state,
      };
      return reply.code(isClosed(page.state) ? 410 : 200).send(renderLinkPage(input));
    },
  );

  // The form's body type is parsed for this route only (encapsulated).
  app.register(async (scope) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: FORM_BODY_LIMIT },
      (_request, body, done) => {
        const fields: Record<string, string> = {};
        for (const [k, v] of new URLSearchParams(body as string)) fields[k] = v;
        done(null, fields);
      },
    );
    (scope as unknown as App).post(
      "/l/:id",
      {
        config: { tier: "publicPage" },
        schema: {
          summary: "Pay through a payment link",
          description:
            "The page's form (`application/x-www-form-urlencoded`): opens an ordinary checkout session " +
            "(`paymentLinkId` on it and its transaction) and answers 303 to its `/pay/{id}`. Refused from " +
            "another site's page (403). Nothing is created when the link is closed or full, or the entry is refused.",
          tags,
          params: Params,
          querystring: Query,
          body: FormBody,
          response: {
            303: {
              description: "The session is open: continue on its hosted page (`Location`)",
              type: "null",
            },
            400: Html("The entry was refused (amount outside the link's bounds, no network chosen)"),
            403: Html("The form was posted from another site"),
            404: Html("No payment link with this id in this environment"),
            409: Html("Every payment the link accepts is taken by a payment in progress; try again later"),
            410: Html("The link is closed"),
            429: RateLimitedEnvelope,
            500: ErrorEnvelope,
            503: Html("The chosen network or the exchange rate is unavailable"),
          },
        },
      },
      async (request, reply) => {
        const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
        const nonce = randomBytes(16).toString("base64");
        pageHeaders(reply, nonce, lang);
        const page = await linkPage(links, request.environment, request.params.id);
        if (!page) return reply.code(404).send(renderLinkMessagePage(lang, nonce, "notFound"));
        const { http } = deps.config;
        const baseUrl = request.environment === "production" ? http.productionBaseUrl : http.sandboxBaseUrl;
        if (!sameOrigin(request, baseUrl))
          return reply.code(403).send(renderLinkMessagePage(lang, nonce, "forbidden"));
        const choice = { currencyType: request.body.currencyType, amount: request.body.amount };
        const result = await openLinkSession(links, request.environment, request.params.id, choice);
        if (result.kind === "opened") {
          return reply
            .code(303)
            .header("Location", `/pay/${encodeURIComponent(result.sessionId)}`)
            .send();
        }
        if (result.kind === "not_found")
          return reply.code(404).send(renderLinkMessagePage(lang, nonce, "notFound"));
        const view = result.view;
        const input: LinkPageInput = {
          lang,
          nonce,
          title: view.link.title,
          description: view.link.description,
          price: view.link.price,
          networks: view.networks,
          state: view.state,
          chosen: choice,
        };
        if (result.kind === "invalid")
          return reply.code(400).send(renderLinkPage({ ...input, errors: result.errors }));
        if (result.kind === "unavailable")
          return reply.code(503).send(renderLinkPage({ ...input, notice: "unavailable" }));
        if (view.state === "full") return reply.code(409).send(renderLinkPage({ ...input, notice: "full" }));
        return reply.code(410).send(renderLinkPage(input));
      },
    );
  });
}
