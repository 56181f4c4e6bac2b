import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import { AppError } from "../domain/errors.js";
import type { ListParams } from "../domain/list.js";

/** A merchant as the platform admin's read-only views show it. */
export interface AdminMerchantView {
  id: string;
  email: string;
  companyName: string;
  status: "active" | "suspended";
  createdAt: Date;
  /** Active API keys per environment. */
  activeApiKeys: { production: number; sandbox: number };
}

type MerchantRow = {
  id: string;
  email: string;
  company_name: string;
  status: "active" | "suspended";
  created_at: Date | string;
};

/** Active API keys per merchant and environment, for the given merchants. */
async function activeKeyCounts(db: Db, ids: string[]) {
  if (ids.length === 0) return new Map<string, { production: number; sandbox: number }>();
  const counts = await db
    .selectFrom("api_keys")
    .select(["merchant_id", "environment", (eb) => eb.fn.countAll<string>().as("n")])
    .where("merchant_id", "in", ids)
    .where("status", "=", "active")
    .groupBy(["merchant_id", "environment"])
    .execute();
  const out = new Map<string, { production: number; sandbox: number }>();
  for (const c of counts) {
    const entry = out.get(c.merchant_id) ?? { production: 0, sandbox: 0 };
    entry[c.environment] = Number(c.n);
    out.set(c.merchant_id, entry);
  }
  return out;
}

async function views(db: Db, rows: MerchantRow[]): Promise<AdminMerchantView[]> {
  const keys = await activeKeyCounts(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((m) => ({
    id: m.id,
    email: m.email,
    companyName: m.company_name,
    status: m.status,
    createdAt: new Date(m.created_at),
    activeApiKeys: keys.get(m.id) ?? { production: 0, sandbox: 0 },
  }));
}

/** One page of all merchants (sorted by `status`, `updatedAt` or else `createdAt`) and their total. */
export async function listMerchantsForAdmin(
  db: Db,
  page: ListParams,
): Promise<{ rows: AdminMerchantView[]; total: number }> {
  const sortColumn =
    page.sortBy === "status" ? "status" : page.sortBy === "updatedAt" ? "updated_at" : "created_at";
  const { rows, total } = await paginate(db.selectFrom("merchants"), page, (q) =>
    q.selectAll().orderBy(sortColumn, page.order).orderBy("id", page.order),
  );
  return { rows: await views(db, rows), total };
}

/** One merchant for the admin, or undefined. */
export async function findMerchantForAdmin(db: Db, id: string): Promise<AdminMerchantView | undefined> {
  const m = await db.selectFrom("merchants").selectAll().where("id", "=", id).executeTakeFirst();
  if (!m) return undefined;
  const [view] = await views(db, [m]);
  return view;
}

/** The admin's `GET /api/v1/admin/merchants/{id}`: one merchant, else 404 NOT_FOUND. */
export async function getMerchantForAdmin(db: Db, id: string): Promise<AdminMerchantView> {
  const m = await findMerchantForAdmin(db, id);
  if (!m) throw AppError.notFound("No such merchant.");
  return m;
}
