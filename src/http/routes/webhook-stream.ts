import type { Server } from "node:net";
import { PassThrough } from "node:stream";
import { Type } from "@sinclair/typebox";
import { positionToken, type StreamEnd, type StreamedDelivery, startCursor } from "../../webhooks/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { authenticateApiKey } from "../plugins/api-key-auth.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors } from "../schemas/common.js";

/** Reconnection delay an EventSource client uses after a dropped stream (SSE `retry:`). */
const RETRY_MS = 2_000;
const EventId = Type.String({ minLength: 1, maxLength: 100, pattern: "^[A-Za-z0-9_]+$" });

/** One SSE message: `id:` is the webhook event id, `data:` one line of JSON. */
export function sseMessage(d: StreamedDelivery): string {
  return `id: ${d.id}\nevent: webhook\ndata: ${JSON.stringify(d)}\n\n`;
}

/** The last message of a stream the gateway ends: `event: end`, `data:` why (`StreamEnd`). */
export function sseEnd(why: StreamEnd): string {
  return `event: end\ndata: ${JSON.stringify(why)}\n\n`;
}

/**
 * `GET /api/v1/webhook/stream` (issue #24, `stablegate-dev listen`): the webhook deliveries of the
 * key's merchant and environment as Server-Sent Events, each as it is created — the exact body and
 * the signed headers of a delivery made now. API key + secret: the stream carries signed bodies.
 * Logic in `webhooks/stream.ts`.
 */
export function webhookStreamRoutes(app: App, deps: RouteDeps) {
  const hub = deps.useCases.webhookStream;
  // The streams' re-authorisations: the API-key channel's own lookup (coalesced, never cached).
  const keys = deps.useCases.apiKeyLookups;
  app.addHook("preClose", () => hub.close());
  app.addHook("onClose", () => hub.close());

  app.get(
    "/api/v1/webhook/stream",
    {
      config: {
        auth: "apiKey",
        requireSecret: true,
        tier: "standard",
        permission: "webhooks:read",
        errors: ["NOT_FOUND"],
      },
      schema: {
        summary: "Stream webhook deliveries as they are created (Server-Sent Events)",
        description:
          "One long-lived `text/event-stream` of every webhook event of this environment, whether or not a " +
          "webhook URL is set: real events and test deliveries, in order, from the moment of connecting. " +
          "Each message is `id: <webhookEventId>`, `event: webhook` and `data:` one line of JSON " +
          "`{ id, type, transactionStatus, transactionId, isTest, createdAt, headers, body }` where `body` is " +
          "the exact body a delivery sends (forward it byte for byte) and `headers` the headers of a delivery " +
          "made now, signed with this environment's webhook secret (`X-Webhook-Signature` and the Standard " +
          "Webhooks `webhook-id`, `webhook-timestamp`, `webhook-signature`). A comment line every 15 s keeps " +
          "proxies from closing the connection. A new stream's first lines carry its position as `id: pos_…` " +
          "(before any event). To resume after a dropped connection, send the last " +
          "received id (an event id, or that position) as `Last-Event-ID` (or `?lastEventId=`): the stream continues exactly after that " +
          "event, nothing missed and nothing repeated. An event appears about half a second after its " +
          "transaction commits. The stream is re-authorised while it lives: when the key pair is revoked or " +
          "rotated, the merchant suspended, the IP allowlist no longer admits the client, or the member the " +
          "pair acts for is removed or loses `webhooks:read`, it ends within seconds with a last message " +
          '`event: end`, `data: { reason: "access", error: { code, message, details? } }` (what a new request ' +
          "would be answered). It also ends after its maximum lifetime (`WEBHOOK_STREAM_MAX_LIFETIME_SECONDS`, " +
          'default 1 h) with `data: { reason: "lifetime" }`: reconnect at once with `Last-Event-ID`; and on a ' +
          "shutdown (`shutdown`) or when its access cannot be confirmed (`unavailable`): reconnect after the " +
          "`retry:` delay. Open streams are capped per API key, per merchant and in total across the gateway's " +
          "instances (defaults 5, 10 and 200; 429 beyond). " +
          "`stablegate-dev listen` (in `@stablegate/sdk`) forwards this stream to a local URL.",
        tags: ["Webhooks"],
        headers: Type.Object({
          "last-event-id": Type.Optional({
            ...EventId,
            description:
              "Resume after this event, or from this position (the `id:` of the last message received)",
          }),
        }),
        querystring: Type.Object(
          {
            lastEventId: Type.Optional({
              ...EventId,
              description: "The same as the `Last-Event-ID` header, for clients that cannot set it",
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            description: "The event stream",
            content: { "text/event-stream": { schema: Type.String() } },
          },
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const p = apiKeyPrincipal(request);
      const lastEventId = request.headers["last-event-id"] ?? request.query.lastEventId;
      const cursor = await startCursor(deps.database.db, p.merchantId, p.environment, lastEventId);
      // A stream payload keeps Fastify's lifecycle (hook headers, logging, metrics at the end);
      // Fastify destroys it when the client goes away.
      const stream = new PassThrough();
      const usable = () => !stream.writableEnded && !stream.destroyed;
      // Once its listener stops listening (graceful stop) the stream ends, so the drain of
      // in-flight requests does not wait for the shutdown timeout.
      const server = (request.raw.socket as { server?: Server } | null)?.server;
      // Before its first event, the stream's position is its `id:` (resumable as Last-Event-ID).
      const position =
        "fromTime" in cursor ? `id: ${await positionToken(deps.database.db, cursor.fromTime)}\n` : "";
      // Its place first: a refusal (429) is still an error envelope, nothing is written yet.
      const unsubscribe = await hub.subscribe({
        merchantId: p.merchantId,
        environment: p.environment,
        apiKeyId: p.apiKeyId,
        cursor,
        send: (d) =>
          new Promise<void>((resolve) => {
            if (!usable() || stream.write(sseMessage(d))) return resolve();
            const done = () => {
              stream.off("drain", done);
              stream.off("close", done);
              resolve();
            };
            stream.on("drain", done);
            stream.on("close", done);
          }),
        heartbeat: () => {
          if (usable()) stream.write(": keep-alive\n\n");
        },
        alive: () => usable() && server?.listening !== false,
        // The same decision as the request's own authentication (the headers, client address and
        // route config it was opened with), with the key read afresh.
        authorize: async () => {
          await authenticateApiKey(request, deps.config, keys);
        },
        end: (why) => {
          if (usable()) stream.write(sseEnd(why));
          stream.end();
        },
      });
      reply
        .type("text/event-stream; charset=utf-8")
        .header("Cache-Control", "no-cache, no-transform")
        .header("X-Accel-Buffering", "no");
      stream.write(`retry: ${RETRY_MS}\n${position}: connected\n\n`);
      stream.on("close", unsubscribe);
      // The client may have gone while the place was being taken: give it back at once.
      if (request.raw.socket?.destroyed) stream.destroy();
      return reply.send(stream as never); // a stream payload: the schema types the text it carries
    },
  );
}
