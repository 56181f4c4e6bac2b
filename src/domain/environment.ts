/** Every record belongs to exactly one environment (CONTRACT §1). */
export const ENVIRONMENTS = ["production", "sandbox"] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export function isEnvironment(v: unknown): v is Environment {
  return v === "production" || v === "sandbox";
}
