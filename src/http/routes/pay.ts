import { randomBytes } from "node:crypto";
import type { Server } from "node:net";
import { PassThrough } from "node:stream";
import { Type } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import { AppError } from "../../domain/errors.js";
import { formatAmount } from "../../domain/money.js";
import { findLogoByHash } from "../../merchants/index.js";
import {
  chooseLanguage,
  contentSecurityPolicy,
  isFinal,
  type LiveSnapshot,
  remainingAmount,
  renderNotFoundPage,
} from "../../pay/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ErrorEnvelope, RateLimitedEnvelope } from "../schemas/common.js";

/** Reconnection delay the browser uses after a dropped stream (SSE `retry:`). */
export const SSE_RETRY_MS = 3_000;

const Html = (description: string) => ({
  description,
  content: { "text/html": { schema: Type.String() } },
});
const Params = Type.Object({ id: Type.String({ description: "The checkout session id" }) });

/** The SSE event of a snapshot: the session fields the page shows, amounts in USDT as in the API. */
export function statusEvent(s: LiveSnapshot): string {
  const data = {
    status: s.status,
    actualBalance: formatAmount(s.actualBalance),
    remaining: formatAmount(remainingAmount(s)),
    confirmedAt: s.confirmedAt ? s.confirmedAt.toISOString() : null,
    blockchainTxHash: s.blockchainTxHash,
    detectedAmount: formatAmount(s.detectedAmount),
    confirmations: { ...s.confirmations },
  };
  return `event: status\ndata: ${JSON.stringify(data)}\n\n`;
}

function pageHeaders(reply: FastifyReply, nonce: string) {
  reply
    .type("text/html; charset=utf-8")
    .header("Content-Security-Policy", contentSecurityPolicy(nonce))
    .header("Cache-Control", "no-store")
    .header("Referrer-Policy", "no-referrer")
    .header("X-Frame-Options", "DENY");
}

/**
 * The hosted payment page (docs/api-reference.md#hosted-payment-page, issue #7): `GET /pay/{id}` (server-rendered HTML: amount,
 * network, address, QR code, countdown, status; works without JavaScript) and `GET /pay/{id}/events`
 * (its live status as Server-Sent Events over one long-lived connection). Public Page tier, no
 * credentials; a session is visible only on the base URL of its environment. The page never carries
 * the merchant's secrets, `callbackUrl` or `metadata`.
 */
export function payRoutes(app: App, deps: RouteDeps) {
  const tags = ["Hosted payment page"];
  const pages = deps.useCases.payPages;
  app.addHook("preClose", async () => pages.close());
  app.addHook("onClose", async () => pages.close());

  app.get(
    "/pay/:id",
    {
      config: { tier: "publicPage" },
      schema: {
        summary: "Hosted payment page",
        description:
          "HTML page of a checkout session for the paying customer: amount, network, address with a QR " +
          "code, countdown and live status. No credentials. Language from `lang` or `Accept-Language`.",
        tags,
        params: Params,
        querystring: Type.Object({
          lang: Type.Optional(
            Type.String({ description: "Page language: `en`, `de`, `fr`, `es`, `pt`, `tr`, `ru` or `zh`" }),
          ),
        }),
        response: {
          200: Html("The payment page"),
          404: Html("No session with this id in this environment"),
          429: RateLimitedEnvelope,
          500: ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
      const nonce = randomBytes(16).toString("base64");
      pageHeaders(reply, nonce);
      reply.header("Content-Language", lang).header("Vary", "Accept-Language");
      const page = await pages.page(request.environment, request.params.id, lang, nonce);
      if (page === null) return reply.code(404).send(renderNotFoundPage(lang, nonce));
      return reply.send(page);
    },
  );

  app.get(
    "/pay/logo/:file",
    {
      config: { tier: "publicPage" },
      schema: {
        summary: "A merchant's logo on the hosted payment page",
        description:
          "The logo file a merchant uploaded (PNG, JPEG or WebP, checked by its bytes), by its SHA-256: " +
          "its exact `Content-Type`, `X-Content-Type-Options: nosniff`, `Content-Security-Policy: " +
          "default-src 'none'; sandbox`, and cached for a year (`immutable`: a new logo is a new path).",
        tags,
        params: Type.Object({
          file: Type.String({ maxLength: 64, description: "The logo's SHA-256, 64 lowercase hex digits" }),
        }),
        response: {
          200: {
            description: "The image",
            content: {
              "image/png": { schema: Type.String({ format: "binary" }) },
              "image/jpeg": { schema: Type.String({ format: "binary" }) },
              "image/webp": { schema: Type.String({ format: "binary" }) },
            },
          },
          404: ErrorEnvelope,
          429: RateLimitedEnvelope,
          500: ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const logo = await findLogoByHash(deps.database.db, request.params.file);
      if (!logo) throw AppError.notFound("No logo with this name.");
      return reply
        .type(logo.contentType) // exactly what the bytes are; never a charset, never sniffed
        .header("X-Content-Type-Options", "nosniff")
        .header("Content-Security-Policy", "default-src 'none'; sandbox")
        .header("Cross-Origin-Resource-Policy", "same-origin")
        .header("Cache-Control", "public, max-age=31536000, immutable")
        .header("ETag", `"${request.params.file}"`)
        .header("Content-Disposition", "inline")
        .send(logo.bytes as never); // raw bytes: the schema documents the image
    },
  );

  app.get(
    "/pay/:id/events",
    {
      config: { tier: "publicPage" },
      schema: {
        summary: "Live status of the hosted payment page (Server-Sent Events)",
        description:
          "One long-lived `text/event-stream` (one request of the Public Page tier): an `event: status` " +
          "with `{ status, actualBalance, remaining, confirmedAt, blockchainTxHash, detectedAmount, " +
          "confirmations: { current, required } }` at once and on every " +
          "change, a comment line every 15 s, `retry: 3000`. The stream ends after `confirmed` or `failed`.",
        tags,
        params: Params,
        response: {
          200: {
            description: "The event stream",
            content: { "text/event-stream": { schema: Type.String() } },
          },
          404: ErrorEnvelope,
          429: RateLimitedEnvelope,
          500: ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      const live = await pages.liveStatus(request.environment, request.params.id);

      // A stream payload keeps Fastify's lifecycle (headers set by hooks, logging, metrics at the end);
      // Fastify destroys it when the client goes away. Node's requestTimeout only bounds receiving the
      // request, so a long response is not cut.
      const stream = new PassThrough();
      const write = (chunk: string) => {
        if (!stream.writableEnded && !stream.destroyed) stream.write(chunk);
      };
      reply
        .type("text/event-stream; charset=utf-8")
        .header("Cache-Control", "no-cache, no-transform")
        .header("X-Accel-Buffering", "no"); // nginx: do not buffer the stream
      const first = live.first;
      write(`retry: ${SSE_RETRY_MS}\n\n`);
      write(statusEvent(first));
      // A closed session never changes; a HEAD request (Fastify drains its payload) must not subscribe.
      if (isFinal(first) || request.method === "HEAD") {
        stream.end();
        return reply.send(stream as never); // a stream payload: the schema types the text it carries
      }
      // The listener's server: once it stops listening (graceful stop) the stream ends, so the
      // drain of in-flight requests does not wait for the shutdown timeout.
      const server = (request.raw.socket as { server?: Server } | null)?.server;
      const unsubscribe = pages.subscribe(
        {
          sessionId: live.sessionId,
          onChange: (s) => {
            write(statusEvent(s));
            if (isFinal(s)) stream.end();
          },
          onHeartbeat: () => write(": keep-alive\n\n"),
          alive: () => server?.listening !== false,
          onEnd: () => stream.end(),
        },
        first,
      );
      stream.on("close", unsubscribe);
      return reply.send(stream as never);
    },
  );
}
