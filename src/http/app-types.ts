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
import type { CheckoutDeps } from "../deposits/index.js";
import type { Clock } from "../lib/clock.js";
import type { PaymentLinkDeps } from "../links/index.js";
import type { ApiKeyLookups } from "../merchants/index.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { ReadinessCheck } from "../observability/readiness.js";
import type { PayPages } from "../pay/index.js";
import type { RateLimitStore } from "../ratelimit/index.js";
import type { EndpointDeps, ManualDelivery, WebhookStreamHub } from "../webhooks/index.js";
import type { PayoutDesk } from "../withdrawals/index.js";

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * The use-case objects the routes call, composed once per process by the runtime
 * (`composeUseCases` in runtime.ts). A route never builds one (`npm run lint:deps` checks it).
 */
export interface UseCases {
  /** Checkout sessions and permanent deposit addresses (one index reserve, one insert coalescer). */
  checkout: CheckoutDeps;
  /** Payment links: the merchant's use cases and the payer's page (they open sessions through `checkout`). */
  paymentLinks: PaymentLinkDeps;
  /** Withdrawal requests and payouts (the payout desk: the withdrawal desk and the dashboard kit). */
  withdrawals: PayoutDesk;
  /** The merchant's webhook endpoint: URL, masked secret, rotation. */
  webhookEndpoints: EndpointDeps;
  /** The live webhook streams of `stablegate-dev listen` (closed with the app). */
  webhookStream: WebhookStreamHub;
  /** The API-key channel's lookup (coalesced, never cached): authentication and the streams' re-checks. */
  apiKeyLookups: ApiKeyLookups;
  /** The hosted payment page and its live status (closed with the app). */
  payPages: PayPages;
}

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
  /** Manual retries and test sends of webhooks, on the process's one transport (built once by the runtime). */
  manualWebhooks: ManualDelivery;
  /** The dashboard channel's kit (tokens, OTPs, mailer, secret box), built once by the runtime. */
  authKit: AuthKit;
  /** The use-case objects of the routes, built once by the runtime. */
  useCases: UseCases;
}
