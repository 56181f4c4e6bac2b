import path from "node:path";
import { Redis } from "ioredis";
import { recordAudit } from "./audit/index.js";
import { type AuthKit, createAuthKit } from "./auth/index.js";
import {
  buildChainRegistry,
  type ChainRegistry,
  providerReadinessChecks,
  registerProviderMetrics,
} from "./chains/index.js";
import { coldWalletOf, configuredContract } from "./config/chains.js";
import type { Config } from "./config/config.js";
import { keyMaterialForRole } from "./config/key-custody.js";
import { type ResolvedSecrets, resolveSecrets } from "./config/secrets.js";
import { type Database, openDatabase } from "./db/database.js";
import { acquireEmbeddedLock } from "./db/embedded-lock.js";
import {
  type CheckoutDeps,
  checkoutDeps,
  createDepositHandler,
  depositSenderCheck,
} from "./deposits/index.js";
import { registerEnergyOutcomes } from "./energy/index.js";
import type { RouteDeps, UseCases } from "./http/app-types.js";
import { type Clock, systemClock } from "./lib/clock.js";
import { SecretBox } from "./lib/secret-box.js";
import { ApiKeyLookups } from "./merchants/index.js";
import { createProcessLogger, type Logger } from "./observability/logger.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import type { ReadinessCheck } from "./observability/readiness.js";
import { PayPages } from "./pay/index.js";
import {
  FallbackRateLimitStore,
  MemoryRateLimitStore,
  type RateLimitStore,
  RedisRateLimitStore,
} from "./ratelimit/index.js";
import { createRateSource } from "./rates/index.js";
import { registerReserveMetrics, reserveReadinessChecks } from "./reserves/index.js";
import { createScreening, type Screening, type ScreeningRecorder } from "./screening/index.js";
import {
  registerSendingMetrics,
  requestTransfer,
  sendingReadinessChecks,
  TransferOutcomes,
} from "./sender/index.js";
import { createRoleSigner, type Signer } from "./signer/index.js";
import { registerColdForwardOutcomes, registerReturnOutcomes, registerSweepOutcomes } from "./sweep/index.js";
import { findAnyTransaction } from "./transactions/index.js";
import { type AccountKeys, type AddressDeriver, resolveAccountKeys } from "./wallet/index.js";
import { chainReadinessChecks, DepositHandoff, merchantOfDepositAddress } from "./watcher/index.js";
import {
  createWebhookSending,
  registerWebhookMetrics,
  WebhookStreamHub,
  type WebhookTransport,
  webhookReadinessCheck,
} from "./webhooks/index.js";
import { type RequestTransfer, registerWithdrawalOutcomes } from "./withdrawals/index.js";
import { liveWorkers } from "./worker/heartbeat.js";

/** Everything a process role needs, built once from the configuration. */
export interface Runtime extends RouteDeps {
  secrets: ResolvedSecrets;
  redis: Redis | undefined;
  /** The operator control socket path, when this process holds the embedded database. */
  controlSocket: string | null;
  /** Every (network, environment) chain; production chains without an endpoint are "unavailable". */
  chains: ChainRegistry;
  /** Watch-only HD address derivation (`allocateDepositAddress`): from `MASTER_XPUBS`, or the mnemonic. */
  addressDeriver: AddressDeriver;
  /** Queues an outgoing transfer in the caller's transaction (the sending pipeline). */
  requestTransfer: RequestTransfer;
  /** Where `addressDeriver`'s keys came from (docs/decisions/custody-and-faults.md#key-custody), for the start-up log. */
  accountKeysSource: AccountKeys["source"];
  /** Where the deposit logic registers the handler of confirmed transfers (the watcher calls it). */
  depositHandoff: DepositHandoff;
  /** Where withdrawals/payouts (and the sweeper) register for the final state of their transfers. */
  transferOutcomes: TransferOutcomes;
  /** Signs outgoing transfers: in-process in `serve`, the signer role over HTTP (`SIGNER_URL`) in `worker`, else null. */
  signer: Signer | null;
  /** The process's one webhook transport (the delivery job and `manualWebhooks` share it). */
  webhookTransport: WebhookTransport;
  /** The screening provider's client (off without SCREENING_URL), shared by every check. */
  screening: Screening;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  role: string;
  logger?: Logger;
  clock?: Clock;
  /** Tests pass an already-open database (a per-file PostgreSQL database or in-memory PGlite). */
  database?: Database;
  metrics?: Metrics;
  /** Tests: the signer to use instead of the role's default. */
  signer?: Signer | null;
}

export function controlSocketPath(dataDir: string): string {
  return path.join(dataDir, "control.sock");
}

/**
 * The database of a process: `DATABASE_URL`'s PostgreSQL, or the embedded PGlite under `DATA_DIR`
 * (which one process holds at a time: the lock, and the operator control socket for the others).
 */
export async function openRoleDatabase(
  config: Config,
  role: string,
): Promise<{ database: Database; controlSocket: string | null; close(): Promise<void> }> {
  if (config.database.url) {
    const database = await openDatabase({
      kind: "postgres",
      url: config.database.url,
      poolSize: config.database.poolSize,
      applicationName: `stablegate-${role}`,
    });
    return { database, controlSocket: null, close: () => database.close() };
  }
  const controlSocket = controlSocketPath(config.dataDir);
  const lock = await acquireEmbeddedLock(config.dataDir, { role, controlSocket });
  let database: Database;
  try {
    database = await openDatabase({ kind: "pglite", dataDir: path.join(config.dataDir, "pglite") });
  } catch (err) {
    await lock.release();
    throw err;
  }
  return {
    database,
    controlSocket,
    async close() {
      try {
        await database.close();
      } finally {
        await lock.release();
      }
    },
  };
}

export async function createRuntime(config: Config, options: RuntimeOptions): Promise<Runtime> {
  const logger = options.logger ?? createProcessLogger(config);
  const clock = options.clock ?? systemClock;
  const secrets = await resolveSecrets(config, options.role);
  // docs/decisions/custody-and-faults.md#key-custody: production refuses the mnemonic where it is not needed.
  const keyMaterial = keyMaterialForRole(config, options.role);
  if (keyMaterial === "none")
    throw new Error(`the ${options.role} role derives no addresses: it has no runtime`);
  const accountKeys = await resolveAccountKeys(config, keyMaterial);
  const addressDeriver = accountKeys.deriver;
  const closers: (() => Promise<void>)[] = [];

  let database = options.database;
  let controlSocket: string | null = null;
  if (!database) {
    const opened = await openRoleDatabase(config, options.role);
    database = opened.database;
    controlSocket = opened.controlSocket;
    closers.unshift(() => opened.close());
  }

  let redis: Redis | undefined;
  let rateLimitStore: RateLimitStore;
  if (config.redisUrl) {
    redis = new Redis(config.redisUrl, {
      lazyConnect: false,
      enableOfflineQueue: false, // fail fast while disconnected; the fallback store takes over
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
      // Commands issued in the same tick (concurrent requests' rate-limit hits) share one write.
      enableAutoPipelining: true,
    });
    let lastLog = 0;
    redis.on("error", (err: Error) => {
      if (Date.now() - lastLog > 60_000) {
        lastLog = Date.now();
        logger.warn({ err: err.message }, "redis connection error");
      }
    });
    const r = redis;
    // Commands fail fast while disconnected, so wait (briefly) for the first connection; if Redis
    // is down at start-up the service starts anyway, limiting in memory until it comes back.
    if (!(await connected(r, 2_000)))
      logger.warn("redis not reachable at start-up; limiting per instance in memory");
    rateLimitStore = new FallbackRateLimitStore(
      new RedisRateLimitStore(r, `${config.redisKeyPrefix}rl:`),
      logger,
    );
    closers.unshift(async () => {
      r.disconnect();
    });
  } else {
    rateLimitStore = new MemoryRateLimitStore();
  }
  const store = rateLimitStore;
  closers.unshift(() => store.close());

  const db = database;
  const readiness: ReadinessCheck[] = [
    {
      name: "database",
      critical: true,
      async check() {
        await db.ping();
        return { status: "ok", detail: db.driver };
      },
    },
    {
      name: "rateLimitStore",
      critical: false,
      async check() {
        if (!redis) return { status: "ok", detail: "memory (single instance)" };
        try {
          await Promise.race([
            redis.ping(),
            new Promise((_, reject) => setTimeout(() => reject(new Error("ping timed out")), 1_000).unref()),
          ]);
          return { status: "ok", detail: "redis" };
        } catch (err) {
          return {
            status: "degraded",
            detail: `redis unreachable (${err instanceof Error ? err.message : String(err)}); limiting per instance in memory`,
          };
        }
      },
    },
    {
      name: "workers",
      critical: false,
      async check() {
        const n = await liveWorkers(db.db, new Date(clock.now()));
        return n > 0
          ? { status: "ok", detail: `${n} live` }
          : { status: "degraded", detail: "no live worker" };
      },
    },
  ];

  const metrics = options.metrics ?? createMetrics();
  const providerMetrics = registerProviderMetrics(metrics.registry, db.db, clock);
  const chains = buildChainRegistry(config, {
    db: db.db,
    clock,
    // Issue #22: a transfer one provider reported and no other confirmed waits; say so loudly.
    onDisagreement: (e) => {
      providerMetrics.disagreements.inc({
        network: e.network,
        environment: e.environment ?? "",
        provider: e.provider,
      });
      logger.warn(
        {
          alert: "chain_providers_disagree",
          subject: e.subject ?? "transfers",
          detail: e.detail,
          network: e.network,
          environment: e.environment,
          provider: e.provider,
          confirmers: e.confirmers,
          fromBlock: e.fromBlock,
          toBlock: e.toBlock,
          unconfirmed: e.unconfirmed.map((t) => ({
            txHash: t.txHash,
            logIndex: t.logIndex,
            to: t.to,
            amount: String(t.amount),
          })),
        },
        "chain providers disagree: the transfers wait",
      );
    },
  });
  readiness.push(...providerReadinessChecks(chains, db.db, clock));
  // Confirmed transfers to watched addresses reach the deposit logic through this one hand-off.
  const depositHandoff = new DepositHandoff();
  // One screening client per process (off without SCREENING_URL): deposit senders, and withdrawal
  // and payout destinations at request time and before signing (README.md#frozen-funds).
  const screening = createScreening({
    ...config.screening,
    logger,
    registry: metrics.registry,
    clock,
    record: screeningAuditRecorder(db.db),
  });
  depositHandoff.register(createDepositHandler({ clock, fees: config.fees }));
  depositHandoff.registerSenderCheck(depositSenderCheck(chains, screening));
  readiness.push(...chainReadinessChecks(chains, db.db, clock));
  const transferOutcomes = new TransferOutcomes();
  registerSweepOutcomes(transferOutcomes);
  registerEnergyOutcomes(transferOutcomes, logger);
  registerReturnOutcomes(transferOutcomes, clock);
  registerColdForwardOutcomes(transferOutcomes);
  registerWithdrawalOutcomes(transferOutcomes, clock);
  readiness.push(...sendingReadinessChecks(chains, db.db, clock));
  readiness.push(...reserveReadinessChecks(chains, db.db, config.reserves.checkEveryMs, () => clock.now()));
  registerReserveMetrics(metrics.registry, db.db);
  registerSendingMetrics(metrics, chains, db.db, (n, e) => coldWalletOf(config.chains, n, e)?.max);
  registerWebhookMetrics(metrics, db.db);
  readiness.push(webhookReadinessCheck(db.db));
  const webhooks = createWebhookSending(config.webhooks, {
    db: db.db,
    logger,
    secretEncryptionKey: secrets.SECRET_ENCRYPTION_KEY,
  });
  closers.unshift(() => webhooks.transport.close());
  const signer =
    options.signer !== undefined
      ? options.signer
      : await createRoleSigner(config, options.role, secrets, {
          db: db.db,
          logger,
          registry: metrics.registry,
        });

  // The dashboard channel's kit and the routes' use cases, built once on first use (a role that
  // serves no HTTP never builds its mailer, page hub or stream hub).
  let authKit: AuthKit | undefined;
  let useCases: UseCases | undefined;
  let closed = false;
  const kit = () => {
    authKit ??= createAuthKit({ config, db: db.db, clock, logger, secrets });
    return authKit;
  };
  return {
    config,
    secrets,
    get authKit() {
      return kit();
    },
    get useCases() {
      if (!useCases) {
        const built = composeUseCases({
          config,
          secrets,
          database,
          clock,
          logger,
          chains,
          addressDeriver,
          screening,
          kit: kit(),
        });
        closers.unshift(() => built.webhookStream.close());
        closers.unshift(async () => built.payPages.close());
        useCases = built;
      }
      return useCases;
    },
    logger,
    clock,
    database,
    redis,
    rateLimitStore,
    metrics,
    readiness,
    controlSocket,
    chains,
    addressDeriver,
    accountKeysSource: accountKeys.source,
    depositHandoff,
    // The sending pipeline (chains part 2): queues the intent in the caller's transaction.
    requestTransfer,
    transferOutcomes,
    signer,
    screening,
    webhookTransport: webhooks.transport,
    manualWebhooks: webhooks.manual,
    async close() {
      if (closed) return;
      closed = true;
      for (const close of closers) {
        try {
          await close();
        } catch (err) {
          logger.warn({ err }, "error while closing");
        }
      }
    },
  };
}

/**
 * The use-case objects the routes call (`RouteDeps.useCases`), composed once per process: a route
 * parses, calls one of them (or a plain use-case function of a feature) and presents; it never
 * builds one (ARCHITECTURE.md "One route shape").
 */
function composeUseCases(parts: {
  config: Config;
  secrets: ResolvedSecrets;
  database: Database;
  clock: Clock;
  logger: Logger;
  chains: ChainRegistry;
  addressDeriver: AddressDeriver;
  screening: Screening;
  kit: AuthKit;
}): UseCases {
  const { config, database, clock, chains } = parts;
  const db = database.db;
  const box = new SecretBox(parts.secrets.SECRET_ENCRYPTION_KEY);
  const idempotency = { db, clock, leaseMs: config.idempotency.leaseMs };
  const stream = config.webhooks.stream;
  const baseUrl: CheckoutDeps["baseUrl"] = (environment) =>
    environment === "production" ? config.http.productionBaseUrl : config.http.sandboxBaseUrl;
  const checkout = checkoutDeps({
    db,
    clock,
    idempotencyLeaseMs: config.idempotency.leaseMs,
    chains,
    addressDeriver: parts.addressDeriver,
    fees: config.fees,
    checkout: config.checkout,
    callbackUrls: {
      allowCidrs: config.webhooks.ssrfAllowCidrs,
      allowedPorts: config.webhooks.allowedPorts,
    },
    baseUrl,
    rates: createRateSource(config.rates, clock, (r) =>
      parts.logger.error(
        {
          alert: "exchange_rate_jump",
          source: r.source,
          pair: r.pair,
          last: String(r.last),
          quoted: String(r.quoted),
        },
        "ALERT: the ticker's quote moved too far from the last good one and was not taken; fiat prices get no rate once the last one is too old",
      ),
    ),
  });
  return {
    checkout,
    // Payment links open ordinary sessions through the same creation path (issue #41).
    paymentLinks: {
      db,
      clock,
      idempotency,
      enabledCurrencyTypes: () => chains.enabledCurrencyTypes(),
      baseUrl,
      checkout,
    },
    withdrawals: {
      db,
      idempotency,
      chains,
      addresses: parts.addressDeriver,
      screening: parts.screening,
      kit: parts.kit,
      fees: config.fees,
      requestTransfer,
      now: () => new Date(clock.now()),
    },
    webhookEndpoints: { db, box, webhooks: config.webhooks },
    webhookStream: new WebhookStreamHub({
      database,
      box,
      logger: parts.logger,
      limits: { perKey: stream.maxPerKey, perMerchant: stream.maxPerMerchant, total: stream.maxTotal },
      maxLifetimeMs: stream.maxLifetimeMs,
      reauthMs: stream.reauthMs,
    }),
    apiKeyLookups: new ApiKeyLookups(db),
    payPages: new PayPages({
      db,
      clock,
      chains,
      tokenContract: (n, e) => configuredContract(config.chains, n, e),
      logger: parts.logger,
    }),
  };
}

function connected(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      redis.off("ready", onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.once("ready", onReady);
  });
}

/**
 * Every screening decision in the audit log (issue #40: `screening.decision`, actor `system`
 * `screening`), in the log of the merchant whose money it is for: named by the caller, or read from
 * the withdrawal or payout being signed, or from the deposit address a transfer arrived at.
 */
function screeningAuditRecorder(db: Database["db"]): ScreeningRecorder {
  return async (q, d) => {
    const s = q.subject;
    const merchantId =
      s?.merchantId ??
      (s?.transactionId
        ? ((await findAnyTransaction(db, s.transactionId))?.merchantId ?? null)
        : s?.depositAddress
          ? await merchantOfDepositAddress(db, {
              network: q.network,
              environment: s.environment,
              address: s.depositAddress,
            })
          : null);
    await recordAudit(db, {
      merchantId,
      environment: s?.environment ?? null,
      actor: { type: "system", id: "screening" },
      action: "screening.decision",
      target: s?.transactionId
        ? { type: "transaction", id: s.transactionId }
        : s?.depositAddress
          ? { type: "deposit_address", id: s.depositAddress }
          : undefined,
      details: {
        address: q.address,
        network: q.network,
        direction: q.direction,
        decision: d.decision,
        reason: d.reason,
        source: d.source,
        ...(s?.txHash ? { txHash: s.txHash } : {}),
      },
      clientIp: null,
      userAgent: null,
      requestId: null,
    });
  };
}
