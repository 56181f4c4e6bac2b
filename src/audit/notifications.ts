import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { AuditAction, AuditEntry } from "../domain/audit.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";

/**
 * Security notifications (docs/merchants/authentication.md#security-notifications): "the account owner (and the member concerned) is e-mailed
 * when 2FA is turned on or off, a password changes, a production key pair is created or rotated,
 * a member is invited, removed or changes role, or ownership moves."
 *
 * Driven by the audit log, in one place: every one of those events already writes its audit
 * record (`config.audit` of its route). `recordAudit` writes, in the record's own transaction, one
 * `security_notifications` row per recipient (the owner at that moment and the member concerned,
 * once each): a recorded event cannot lose its mail, and no record can be skipped (a cursor over
 * the audit log's ids could: ids are taken at insert, rows become visible at commit, in another
 * order). The recording process then sends the rows at once (the mail is there when the answer
 * is); any worker sends what is left (`deliverSecurityNotifications`, the job below).
 *
 * Once, across processes: a sender claims a row by moving its `next_attempt_at` past a lease, in
 * a `for update skip locked` statement — two senders never claim one row — and marks it sent; the
 * recording process claims its rows at insert. A failed send backs off and is retried by any
 * worker. Only a process that dies between the SMTP server's acceptance and its update of the row
 * (or a send that outlives its lease) can make a mail go twice: SMTP has no idempotent send.
 *
 * Who is "the member concerned": the login whose own account changed (2FA, password), the member
 * whose session did it (a key pair created or rotated, an invitation sent), the member changed or
 * removed, and for an ownership transfer the new and the former owner.
 */

/** What the notices need of a mailer (the `mail/` feature's `Mailer`, given by the composition). */
export interface NoticeMailer {
  send(mail: { to: string; subject: string; text: string }): Promise<void>;
}

export interface NoticeSending {
  mailer: NoticeMailer;
  clock: { now(): number };
  logger?: Logger | undefined;
}

export const NOTICE_SUBJECT_PREFIX = "stablegate security notice: ";

/** A claimed row is another sender's for this long (a send is cut off well before: SEND_TIMEOUT_MS). */
const LEASE_MS = 5 * 60_000;
const SEND_TIMEOUT_MS = 60_000;
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = 60 * 60_000;
const BATCH = 50;

type Concerned = "actor" | "target" | "actor_and_target";

interface Notice {
  title: string;
  concerned: Concerned;
  /** Only for production key pairs. */
  productionKeyOnly?: boolean;
  /** Only for a change of the production environment (the record's environment). */
  productionOnly?: boolean;
  /** Another member told besides the actor and the target (a user id read off the record). */
  also?: (e: AuditEntry) => string | null;
  describe(e: AuditEntry, who: string): string;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

const NOTICES: Partial<Record<AuditAction, Notice>> = {
  "auth.two_factor_enable": {
    title: "two-factor authentication turned on",
    concerned: "actor",
    describe: (_e, who) => `Two-factor authentication was turned on for the login ${who}.`,
  },
  "auth.two_factor_disable": {
    title: "two-factor authentication turned off",
    concerned: "actor",
    describe: (_e, who) => `Two-factor authentication was turned off for the login ${who}.`,
  },
  "auth.password_change": {
    title: "password changed",
    concerned: "actor",
    describe: (_e, who) => `The password of the login ${who} was changed.`,
  },
  "auth.password_reset": {
    title: "password changed",
    concerned: "actor",
    describe: (_e, who) => `The password of the login ${who} was reset with an e-mailed link.`,
  },
  "api_key.create": {
    title: "production API key pair created",
    concerned: "actor",
    productionKeyOnly: true,
    describe: (e) => `A production API key pair was created (${e.target?.id ?? "new pair"}).`,
  },
  "api_key.rotate": {
    title: "production API key pair rotated",
    concerned: "actor",
    productionKeyOnly: true,
    describe: (e) =>
      `The production API key pair ${e.target?.id ?? ""} was rotated: a new pair replaces it.`.replace(
        "  ",
        " ",
      ),
  },
  // Added by the outside review of #34 (docs/merchants/authentication.md#security-notifications lists them): who a production pair acts for, and the
  // production controls and delivery target a session or a key pair changes.
  "api_key.reassign": {
    title: "production API key pair taken over",
    concerned: "actor",
    productionKeyOnly: true,
    also: (e) => str(e.details?.from) || null,
    describe: (e) =>
      `The production API key pair ${e.target?.id ?? ""} was taken over: it acts for the member who took it, with a new secret (the old one stopped).`.replace(
        "  ",
        " ",
      ),
  },
  "settings.update": {
    title: "production settings changed",
    concerned: "actor",
    productionOnly: true,
    describe: (e) =>
      `Production settings were changed${Array.isArray(e.details?.fields) ? ` (${(e.details.fields as unknown[]).map(String).join(", ")})` : ""}: auto-withdraw, approval thresholds, IP allowlist or tolerance.`,
  },
  "webhook.url_update": {
    title: "production webhook URL changed",
    concerned: "actor",
    productionOnly: true,
    describe: () => "The production webhook URL was changed: signed deliveries now go to the new address.",
  },
  "webhook.secret_rotate": {
    title: "production webhook secret rotated",
    concerned: "actor",
    productionOnly: true,
    describe: () => "The production webhook signing secret was rotated.",
  },
  "member.invite": {
    title: "member invited",
    concerned: "actor",
    describe: (e) =>
      `${str(e.details?.email) || "Someone"} was invited to join the account as ${str(e.details?.role) || "a member"}.`,
  },
  "member.role_change": {
    title: "member role changed",
    concerned: "target",
    describe: (e) =>
      `The role of ${str(e.details?.email) || "a member"} changed from ${str(e.details?.before) || "?"} to ${str(e.details?.after) || "?"}.`,
  },
  "member.remove": {
    title: "member removed",
    concerned: "target",
    describe: (e) => `${str(e.details?.email) || "A member"} was removed from the account.`,
  },
  "ownership.transfer": {
    title: "account ownership transferred",
    concerned: "actor_and_target",
    describe: (e) =>
      `Ownership of the account moved from ${str(e.details?.formerOwner) || "the former owner"} to ${str(e.details?.newOwner) || "a member"}; the former owner is now an admin.`,
  },
};

/** Whether an action sends security notices (then its record and its notices share a transaction). */
export function isNotified(action: AuditAction): boolean {
  return NOTICES[action] !== undefined;
}

export interface QueuedNotice {
  id: string;
  recipient: string;
  subject: string;
  body: string;
  attempts: number;
}

async function emailOf(trx: Db, userId: string | null | undefined): Promise<string | null> {
  if (!userId) return null;
  const row = await trx
    .selectFrom("dashboard_users")
    .select("email")
    .where("id", "=", userId)
    .executeTakeFirst();
  return row?.email ?? null;
}

/** The environment of the key pair a record is about: the pair's own, else what the record says. */
async function keyEnvironment(trx: Db, e: AuditEntry): Promise<string | null> {
  if (e.target?.id && e.merchantId) {
    const row = await trx
      .selectFrom("api_keys")
      .select("environment")
      .where("id", "=", e.target.id)
      .where("merchant_id", "=", e.merchantId)
      .executeTakeFirst();
    if (row) return row.environment;
  }
  return str(e.details?.environment) || e.environment;
}

/**
 * Writes the notices of a just-written audit record in its transaction and returns them. `claimed`:
 * the caller sends them itself right after the commit (their lease is the caller's).
 */
export async function queueNotices(
  trx: Db,
  record: { id: bigint | number | string; createdAt: Date },
  e: AuditEntry,
  now: Date,
  claimed: boolean,
): Promise<QueuedNotice[]> {
  const notice = NOTICES[e.action];
  if (!notice) return [];
  if (notice.productionKeyOnly && (await keyEnvironment(trx, e)) !== "production") return [];
  if (notice.productionOnly && e.environment !== "production") return [];
  const actorId = e.actor.type === "user" ? e.actor.id : null;
  const actorEmail = (await emailOf(trx, actorId)) ?? (e.actor.type === "user" ? e.actor.email : null);
  const concerned: (string | null)[] = [];
  if (notice.concerned !== "target") concerned.push(actorEmail);
  if (notice.concerned !== "actor") concerned.push(await emailOf(trx, e.target?.id));
  if (notice.also) concerned.push(await emailOf(trx, notice.also(e)));
  const owner = e.merchantId
    ? await trx
        .selectFrom("dashboard_users")
        .select("email")
        .where("merchant_id", "=", e.merchantId)
        .where("member_role", "=", "owner")
        .where("removed_at", "is", null)
        .executeTakeFirst()
    : undefined;
  const company = e.merchantId
    ? await trx
        .selectFrom("merchants")
        .select("company_name")
        .where("id", "=", e.merchantId)
        .executeTakeFirst()
    : undefined;

  const recipients = new Map<string, string>();
  for (const email of [owner?.email ?? null, ...concerned])
    if (email && !recipients.has(email.toLowerCase())) recipients.set(email.toLowerCase(), email);
  if (recipients.size === 0) return [];

  const who = actorEmail ?? (e.actor.type === "api_key" ? `API key ${e.actor.id}` : "someone");
  const subject = `${NOTICE_SUBJECT_PREFIX}${notice.title}`;
  const body = [
    notice.describe(e, who),
    "",
    ...(company ? [`Account: ${company.company_name}`] : []),
    `By: ${who}${e.actor.type === "user" && e.actor.role ? ` (${e.actor.role})` : ""}`,
    `When: ${record.createdAt.toISOString()}`,
    `From: ${e.clientIp ?? "unknown address"}${e.userAgent ? `, ${e.userAgent}` : ""}`,
    ...(e.requestId ? [`Request id: ${e.requestId}`] : []),
    "",
    "If this was you or your team, there is nothing to do.",
    "If it was not: sign in, change your password, turn two-factor authentication on, and check the",
    "team members and the API key pairs of the account (the audit log shows what was done).",
  ].join("\n");
  const rows = await trx
    .insertInto("security_notifications")
    .values(
      [...recipients.values()].map((recipient) => ({
        audit_id: String(record.id),
        merchant_id: e.merchantId,
        recipient,
        subject,
        body,
        created_at: now,
        next_attempt_at: claimed ? new Date(now.getTime() + LEASE_MS) : now,
        attempts: claimed ? 1 : 0,
      })),
    )
    .returning(["id", "recipient", "subject", "body", "attempts"])
    .execute();
  return rows.map((r) => ({ ...r, id: String(r.id) }));
}

function retryDelay(attempts: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), MAX_RETRY_MS);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`mail not sent within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Sends claimed notices one by one; each is marked sent, or backed off on failure. Returns how many went. */
export async function sendClaimedNotices(
  db: Db,
  deps: NoticeSending,
  notices: QueuedNotice[],
): Promise<number> {
  let sent = 0;
  for (const n of notices) {
    try {
      await withTimeout(
        deps.mailer.send({ to: n.recipient, subject: n.subject, text: n.body }),
        SEND_TIMEOUT_MS,
      );
    } catch (err) {
      const now = deps.clock.now();
      deps.logger?.error(
        { err, notice: n.id, attempts: n.attempts },
        "security notice not sent; retried later",
      );
      await db
        .updateTable("security_notifications")
        .set({
          next_attempt_at: new Date(now + retryDelay(n.attempts)),
          last_error: String((err as Error)?.message ?? err).slice(0, 500),
        })
        .where("id", "=", sql<bigint>`${n.id}::bigint`)
        .where("sent_at", "is", null)
        .execute();
      continue;
    }
    await db
      .updateTable("security_notifications")
      .set({ sent_at: new Date(deps.clock.now()), last_error: null })
      .where("id", "=", sql<bigint>`${n.id}::bigint`)
      .where("sent_at", "is", null)
      .execute();
    sent++;
  }
  return sent;
}

/**
 * Claims up to `limit` due notices (any number of workers at once: each row goes to one) and sends
 * them. Returns how many were sent.
 */
export async function deliverSecurityNotifications(
  db: Db,
  deps: NoticeSending,
  limit = BATCH,
): Promise<number> {
  const now = new Date(deps.clock.now());
  const lease = new Date(now.getTime() + LEASE_MS);
  const claimed = await sql<QueuedNotice & { id: string }>`
    update security_notifications set next_attempt_at = ${lease}, attempts = attempts + 1
    where id in (
      select id from security_notifications
      where sent_at is null and next_attempt_at <= ${now}
      order by id
      limit ${limit}
      for update skip locked)
    returning id::text as id, recipient, subject, body, attempts`.execute(db);
  return sendClaimedNotices(db, deps, claimed.rows);
}

/** The worker's job: sends the notices the recording process could not (a failed or interrupted send). */
export function securityNotificationJob(deps: NoticeSending & { db: Db; everyMs?: number }): Job {
  return {
    name: "security-notifications",
    everyMs: deps.everyMs ?? 5_000,
    async run(signal) {
      while (!signal.aborted) {
        const sent = await deliverSecurityNotifications(deps.db, deps);
        if (sent < BATCH) return;
      }
    },
  };
}
