import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import type { AuditEntry } from "../domain/audit.js";
import {
  isNotified,
  type NoticeSending,
  type QueuedNotice,
  queueNotices,
  sendClaimedNotices,
} from "./notifications.js";

/** A user agent longer than this is cut: it is client text, kept for reading, not for parsing. */
const MAX_USER_AGENT = 512;

function row(e: AuditEntry) {
  return {
    environment: e.environment,
    actor_type: e.actor.type,
    actor_id: e.actor.id,
    actor_email: e.actor.type === "user" ? e.actor.email : null,
    actor_role: e.actor.type === "user" ? e.actor.role : null,
    action: e.action,
    target_type: e.target?.type ?? null,
    target_id: e.target?.id ?? null,
    details: JSON.stringify(e.details ?? {}),
    client_ip: e.clientIp,
    user_agent: e.userAgent === null ? null : e.userAgent.slice(0, MAX_USER_AGENT),
    request_id: e.requestId,
  };
}

/**
 * Appends one record inside the caller's transaction `trx`, with the notices of a security-relevant
 * action queued in it; `claimed`: claimed for this process, which sends them after the commit
 * (`sendClaimedNotices`), else left to the worker. Returns what was queued.
 */
export async function appendAudit(
  trx: Db,
  e: AuditEntry,
  now: Date,
  claimed: boolean,
): Promise<QueuedNotice[]> {
  if (!isNotified(e.action)) {
    await trx
      .insertInto("audit_log")
      .values({ ...row(e), merchant_id: e.merchantId })
      .execute();
    return [];
  }
  const record = await trx
    .insertInto("audit_log")
    .values({ ...row(e), merchant_id: e.merchantId })
    .returning(["id", "created_at"])
    .executeTakeFirstOrThrow();
  return queueNotices(trx, { id: record.id, createdAt: new Date(record.created_at) }, e, now, claimed);
}

/**
 * Appends one record. A security-relevant action (`notifications.ts`) also queues its e-mailed
 * notices in the same transaction; with `notify`, this process sends them at once, after the
 * commit (a failed send stays queued for the worker: never an error of the caller's).
 */
export async function recordAudit(db: Db, e: AuditEntry, notify?: NoticeSending): Promise<void> {
  const now = new Date(notify ? notify.clock.now() : Date.now());
  // Inside a caller's transaction the rows commit with it, later: the worker sends them then.
  const inline = notify !== undefined && !db.isTransaction;
  const queued = await inTransaction(db, (trx) => appendAudit(trx, e, now, inline));
  if (!inline || queued.length === 0) return;
  try {
    await sendClaimedNotices(db, notify, queued);
  } catch (err) {
    notify.logger?.error({ err }, "security notices not sent now; the worker retries after their lease");
  }
}

/**
 * Appends a failed sign-in for `email`. Whoever tried is unknown, so the actor has no id and the
 * e-mail tried (trimmed, at most 254 characters); the login with that e-mail, read in the same
 * statement, is the target, and its merchant the record's (none for an unknown e-mail).
 */
export async function recordFailedSignIn(db: Db, email: string, e: Omit<AuditEntry, "merchantId">) {
  const tried = email.trim().slice(0, 254);
  const values = row({ ...e, merchantId: null, actor: { type: "user", id: null, email: tried, role: null } });
  await db
    .insertInto("audit_log")
    .values({
      ...values,
      merchant_id: sql<
        string | null
      >`(select merchant_id from dashboard_users where lower(email) = lower(${tried}))`,
      target_type: "user",
      target_id: sql<string | null>`(select id from dashboard_users where lower(email) = lower(${tried}))`,
    })
    .execute();
}
