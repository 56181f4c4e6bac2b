import { sql } from "kysely";
import { expect } from "vitest";
import type { Db } from "../../src/db/database.js";
import { insertCheckoutSession } from "../../src/deposits/sessions-store.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { newId } from "../../src/domain/ids.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { call, keysOf, type TestService } from "../support/harness.js";

/**
 * A session written straight to the database through the real repositories (what
 * `createCheckoutSession` writes), for states the API cannot reach in a test: production sessions
 * (production chains are not configured) and exact end states.
 */
export async function insertSession(
  db: Db,
  s: {
    merchantId: string;
    environment: Environment;
    network: CurrencyType;
    address: string;
    amount: bigint;
    expiresAt: Date;
    orderId?: string;
    metadata?: Record<string, unknown>;
    callbackUrl?: string;
  },
): Promise<string> {
  const id = newId("tx");
  await db.transaction().execute(async (trx) => {
    await insertTransaction(trx, {
      id,
      merchantId: s.merchantId,
      environment: s.environment,
      type: "deposit",
      status: "pending",
      currencyType: s.network,
      amount: s.amount,
      fee: 0n,
      walletAddress: s.address,
      orderId: s.orderId ?? null,
      metadata: s.metadata ?? null,
      actualBalance: 0n,
    });
    await insertCheckoutSession(trx, {
      id,
      merchantId: s.merchantId,
      environment: s.environment,
      network: s.network,
      address: s.address,
      expiresAt: s.expiresAt,
      callbackUrl: s.callbackUrl ?? null,
    });
  });
  return id;
}

/**
 * Moves a session the way the deposit flow does (status, received total, hash, confirmation time,
 * `closed_at` for end states) — without the ledger, which the page never reads.
 */
export async function setSessionState(
  db: Db,
  id: string,
  s: { status: "pending" | "confirmed" | "failed"; actualBalance: bigint; txHash?: string; at?: Date },
) {
  const at = s.at ?? new Date();
  await db
    .updateTable("transactions")
    .set({
      status: s.status,
      actual_balance: s.actualBalance.toString(),
      // As the deposit logic writes it: a closed deposit's netAmount is what was credited, less the fee.
      net_amount: sql<string>`case when ${s.status} = 'pending' then amount - fee else ${s.actualBalance.toString()}::numeric - fee end`,
      blockchain_tx_hash: s.txHash ?? null,
      confirmed_at: s.status === "confirmed" ? at : null,
      updated_at: at,
    })
    .where("id", "=", id)
    .execute();
  if (s.status !== "pending") {
    await db.updateTable("checkout_sessions").set({ closed_at: at }).where("id", "=", id).execute();
  }
}

/** A sandbox session through the real API. */
export async function createSandboxSession(
  svc: TestService,
  headers: Record<string, string>,
  body: Record<string, unknown>,
) {
  const r = await call(svc.urls.sandbox, "/checkout/session", {
    headers,
    json: { currencyType: "USDT-TRC20", ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data as { id: string; walletAddress: string; expiresAt: string; amount: number };
}

export function sandboxHeaders(m: Awaited<ReturnType<TestService["createMerchant"]>>) {
  const k = keysOf(m, "sandbox");
  return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
}

export interface SseEvent {
  event: string | undefined;
  data: string | undefined;
  retry: number | undefined;
  comment: string | undefined;
}

/** A live `text/event-stream` connection, parsed block by block. */
export async function openEvents(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const queue: SseEvent[] = [];
  const waiters: ((e: SseEvent | null) => void)[] = [];
  let ended = false;
  let resolveEnd!: () => void;
  const endedPromise = new Promise<void>((r) => {
    resolveEnd = r;
  });
  const push = (e: SseEvent | null) => {
    const w = waiters.shift();
    if (w) w(e);
    else if (e) queue.push(e);
  };
  (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let sep = buffer.indexOf("\n\n");
        while (sep >= 0) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep + 2);
          const e: SseEvent = { event: undefined, data: undefined, retry: undefined, comment: undefined };
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) e.comment = line.slice(1).trim();
            else if (line.startsWith("event: ")) e.event = line.slice(7);
            else if (line.startsWith("data: ")) e.data = line.slice(6);
            else if (line.startsWith("retry: ")) e.retry = Number(line.slice(7));
          }
          push(e);
          sep = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // aborted by close()
    } finally {
      ended = true;
      resolveEnd();
      while (waiters.length > 0) waiters.shift()?.(null);
    }
  })();
  return {
    res,
    /** The next block, or null once the stream has ended. */
    next(timeoutMs = 15_000): Promise<SseEvent | null> {
      const queued = queue.shift();
      if (queued) return Promise.resolve(queued);
      if (ended) return Promise.resolve(null);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no SSE event in time")), timeoutMs);
        waiters.push((e) => {
          clearTimeout(timer);
          resolve(e);
        });
      });
    },
    /** The next `status` event's data (skipping comments and `retry:`), or null at the end. */
    async nextStatus(timeoutMs = 15_000): Promise<Record<string, unknown> | null> {
      for (;;) {
        const e = await this.next(timeoutMs);
        if (!e) return null;
        if (e.event === "status" && e.data) return JSON.parse(e.data);
      }
    },
    ended: endedPromise,
    close: () => controller.abort(),
  };
}
