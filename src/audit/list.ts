import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { AuditLogRow } from "../db/tables/audit.js";
import type { AuditAction } from "../domain/audit.js";
import type { Environment } from "../domain/environment.js";
import type { ListParams } from "../domain/list.js";

export interface AuditFilter {
  action?: AuditAction | undefined;
  actorId?: string | undefined;
  environment?: Environment | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

/** One record as the API presents it. */
export function presentAuditRecord(r: AuditLogRow) {
  return {
    id: String(r.id),
    createdAt: r.created_at.toISOString(),
    action: r.action as AuditAction,
    environment: r.environment,
    actor: { type: r.actor_type, id: r.actor_id, email: r.actor_email, role: r.actor_role },
    target: r.target_type === null ? null : { type: r.target_type, id: r.target_id },
    details: r.details,
    clientIp: r.client_ip,
    userAgent: r.user_agent,
    requestId: r.request_id,
  };
}

export type AuditRecordView = ReturnType<typeof presentAuditRecord>;

/**
 * A page of a merchant's audit log, both environments and account-wide actions alike (an audit log
 * answers "who did what to this account"), filtered; `order` by time (`sortBy` has one meaning here).
 */
export async function listAuditLog(
  db: Db,
  merchantId: string,
  filter: AuditFilter,
  page: ListParams,
): Promise<{ rows: AuditRecordView[]; total: number }> {
  let q = db.selectFrom("audit_log").where("merchant_id", "=", merchantId);
  if (filter.action) q = q.where("action", "=", filter.action);
  if (filter.actorId) q = q.where("actor_id", "=", filter.actorId);
  if (filter.environment) q = q.where("environment", "=", filter.environment);
  if (filter.from) q = q.where("created_at", ">=", filter.from);
  if (filter.to) q = q.where("created_at", "<", filter.to);
  const { rows, total } = await paginate(q, page, (x) =>
    x.selectAll().orderBy("created_at", page.order).orderBy("id", page.order),
  );
  return { rows: rows.map(presentAuditRecord), total };
}
