import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { AuthKit } from "../auth/index.js";
import type { ChainRegistry } from "../chains/index.js";
import type { Config } from "../config/config.js";
import type { ResolvedSecrets } from "../config/secrets.js";
import type { Database } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { ReadinessCheck } from "../observability/readiness.js";
import type { RateLimitStore } from "../ratelimit/index.js";
import type { AddressDeriver } from "../wallet/index.js";
import type { ManualDelivery } from "../webhooks/index.js";
import type { RequestTransfer } from "../withdrawals/index.js";

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface RouteDeps {
  config: Config;
  /** Resolved secrets (JWT_SECRET, SECRET_ENCRYPTION_KEY, ...); the dashboard channel needs them. */
  secrets: ResolvedSecrets;
  database: Database;
  rateLimitStore: RateLimitStore;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  readiness: ReadinessCheck[];
  /** Every (network, environment) chain (deposits check availability; the sandbox pays through the simulator). */
  chains: ChainRegistry;
  /** Queues an outgoing transfer in the caller's transaction (the sending pipeline of chains part 2). */
  requestTransfer: RequestTransfer;
  /** Watch-only address derivation for new deposit addresses (no private keys). */
  addressDeriver: AddressDeriver;
  /** Manual retries and test sends of webhooks, on the process's one transport (built once by the runtime). */
  manualWebhooks: ManualDelivery;
  /** The dashboard channel's kit (tokens, OTPs, mailer, secret box), built once by the runtime. */
  authKit: AuthKit;
}
