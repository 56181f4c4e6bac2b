/** Every record belongs to exactly one environment (docs/merchants/authentication.md#two-environments-two-base-urls). */
export const ENVIRONMENTS = ["production", "sandbox"] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export function isEnvironment(v: unknown): v is Environment {
  return v === "production" || v === "sandbox";
}
