import { Type } from "@sinclair/typebox";
import { DEFAULT_LIMIT } from "../domain/list.js";

export {
  DEFAULT_LIMIT,
  type ListParams,
  listParams,
  MAX_LIMIT,
  pagination,
  SORT_FIELDS,
  type SortField,
} from "../domain/list.js";

/** The query schema every list route shares (the rules themselves live in `domain/list.ts`). */
export const ListQuerySchema = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: DEFAULT_LIMIT })),
  sortBy: Type.Optional(Type.String({ maxLength: 64 })),
  order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")])),
});
