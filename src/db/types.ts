/**
 * Type parsing shared by both drivers: `int8` as bigint (never a JS number), `numeric` as the
 * exact decimal string (money columns are `numeric(38,0)` and are read with `BigInt(...)`).
 */
export const PG_INT8 = 20;
export const PG_NUMERIC = 1700;

export const TYPE_PARSERS: Record<number, (value: string) => unknown> = {
  [PG_INT8]: (v) => BigInt(v),
  [PG_NUMERIC]: (v) => v,
};
