export type CheckStatus = "ok" | "degraded" | "down";

/** One line of `/readyz`. A `critical` check that is down makes the instance not ready (503). */
export interface ReadinessCheck {
  name: string;
  critical: boolean;
  check(): Promise<{ status: CheckStatus; detail?: string }>;
}
