import type { QueryCreator } from "kysely";
import type { DB } from "../db/schema.js";

/**
 * Each merchant's status (`active` or `suspended`), as a sub-query to join in the caller's
 * statement: `.leftJoin(merchantStatuses(db).as("m"), "m.id", …)` (the dashboard session lookup
 * reads its member's merchant's status in its one query).
 */
export function merchantStatuses(db: QueryCreator<DB>) {
  return db.selectFrom("merchants").select(["id", "status"]);
}
