import type { Server } from "node:net";
import { PassThrough } from "node:stream";
import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { SecretBox } from "../../lib/secret-box.js";
import { type StreamedDelivery, startCursor, WebhookStreamHub } from "../../webhooks/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors } from "../schemas/common.js";

/**
 * Open streams per API key at most, per process (decision: a developer runs one `listen`, maybe
 * a few terminals; each stream holds a connection and a poll, so one leaked key must not open
 * hundreds). Counted in memory: behind several `api` processes the bound is per process.
 */
export const MAX_STREAMS_PER_KEY = 5;
/** Reconnection delay an EventSource client uses after a dropped stream (SSE `retry:`). */
const RETRY_MS = 2_000;
const EventId = Type.String({ minLength: 1, maxLength: 100, pattern: "^[A-Za-z0-9_]+$" });

/** One SSE message: `id:` is the webhook event id, `data:` one line of JSON. */
export function sseMessage(d: StreamedDelivery): string {
  return `id: ${d.id}\nevent: webhook\ndata: ${JSON.stringify(d)}\n\n`;
}

/**
 * `GET /api/v1/webhook/stream` (issue #24, `stablegate-dev listen`): the webhook deliveries of the
 * key's merchant and environment as Server-Sent Events, each as it is created — the exact body and
 * the signed headers of a delivery made now. API key + secret: the stream carries signed bodies.
 * Logic in `webhooks/stream.ts`.
 */
export function webhookStreamRoutes(app: App, deps: RouteDeps) {
  const hub = new WebhookStreamHub({
    database: deps.database,
    box: new SecretBox(deps.secrets.SECRET_ENCRYPTION_KEY),
    logger: deps.logger,
  });
  const open = new Map<string, number>();
  app.addHook("preClose", () => hub.close());
  app.addHook("onClose", () => hub.close());

  app.get(
    "/api/v1/webhook/stream",
    {
      config: { auth: "apiKey", requireSecret: true, tier: "standard", errors: ["NOT_FOUND"] },
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
          "proxies from closing the connection. To resume after a dropped connection, send the last " +
          "received id as `Last-Event-ID` (or `?lastEventId=`): the stream continues exactly after that " +
          "event, nothing missed and nothing repeated. An event appears about half a second after its " +
          "transaction commits. At most 5 open streams per API key (429 beyond). " +
          "`stablegate-dev listen` (in `@stablegate/sdk`) forwards this stream to a local URL.",
        tags: ["Webhooks"],
        headers: Type.Object({
          "last-event-id": Type.Optional({
            ...EventId,
            description: "Resume after this event (the `id:` of the last message received)",
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
      if (!cursor) {
        throw AppError.notFound("No webhook event with this Last-Event-ID in this environment.");
      }
      const count = open.get(p.apiKeyId) ?? 0;
      if (count >= MAX_STREAMS_PER_KEY) {
        throw AppError.rateLimited(
          `At most ${MAX_STREAMS_PER_KEY} webhook streams may be open per API key; close one first.`,
          5,
        );
      }
      open.set(p.apiKeyId, count + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const n = (open.get(p.apiKeyId) ?? 1) - 1;
        if (n <= 0) open.delete(p.apiKeyId);
        else open.set(p.apiKeyId, n);
      };

      // A stream payload keeps Fastify's lifecycle (hook headers, logging, metrics at the end);
      // Fastify destroys it when the client goes away.
      const stream = new PassThrough();
      const usable = () => !stream.writableEnded && !stream.destroyed;
      reply
        .type("text/event-stream; charset=utf-8")
        .header("Cache-Control", "no-cache, no-transform")
        .header("X-Accel-Buffering", "no");
      stream.write(`retry: ${RETRY_MS}\n: connected\n\n`);
      // Once its listener stops listening (graceful stop) the stream ends, so the drain of
      // in-flight requests does not wait for the shutdown timeout.
      const server = (request.raw.socket as { server?: Server } | null)?.server;
      const unsubscribe = hub.subscribe({
        merchantId: p.merchantId,
        environment: p.environment,
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
        end: () => {
          release();
          stream.end();
        },
      });
      stream.on("close", () => {
        release();
        unsubscribe();
      });
      return reply.send(stream as never); // a stream payload: the schema types the text it carries
    },
  );
}
