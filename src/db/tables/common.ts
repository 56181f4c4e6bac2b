import type { ColumnType } from "kysely";

/** A `timestamptz` column: read as Date, written as Date or ISO string, optional on insert (defaults). */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
