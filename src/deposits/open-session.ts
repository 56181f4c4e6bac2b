import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import {
  type CheckoutSessionRecord,
  checkoutUrl,
  metadataErrors,
  noDetection,
  type SessionDetection,
  sessionLifetimeMs,
} from "../domain/checkout.js";
import { type CurrencyType, wrongNetworkTwins } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import type { FeeSchedule } from "../domain/fees.js";
import { amountField } from "../domain/money.js";
import {
  type IdempotencyContext,
  type IdempotentAnswer,
  type IdempotentCall,
  runIdempotent,
} from "../idempotency/index.js";
import type { Clock } from "../lib/clock.js";
import { type AddressDeriver, DepositIndexReserve } from "../wallet/index.js";
import { validateWebhookUrl } from "../webhooks/index.js";
import {
  CheckoutSessionInserts,
  type CreateDepositDeps,
  createCheckoutSession,
  type DepositWallet,
  generateDepositWallet,
} from "./create.js";
import { findCheckoutSession, findSessionDetections } from "./sessions-store.js";

/**
 * The use cases of the deposit routes (docs/api-reference.md#createcheckoutsession): open a checkout session, read one, generate a
 * permanent deposit address. Each validates its input, checks that the chain is available
 * (503 CHAIN_UNAVAILABLE before anything is written), then creates once per `Idempotency-Key`
 * (`runIdempotent`: the creation and its stored answer commit together).
 */

export interface CheckoutDeps {
  db: Db;
  clock: Clock;
  idempotency: IdempotencyContext;
  chains: Pick<ChainRegistry, "get" | "requiredConfirmations">;
  /** Creating sessions and wallets: deriver, the process's index reserve, fees, late-payment window. */
  create: CreateDepositDeps;
  minExpirySeconds: number;
  /** The rules of a `callbackUrl` (those of webhook URLs). */
  callbackUrls: { allowCidrs: readonly string[]; allowedPorts: readonly number[] };
  /** The base URL of the hosted payment page in an environment. */
  baseUrl(environment: Environment): string;
}

/** Builds the deposit routes' dependencies once per process (one index reserve, one insert coalescer). */
export function checkoutDeps(deps: {
  db: Db;
  clock: Clock;
  idempotencyLeaseMs: number;
  chains: Pick<ChainRegistry, "get" | "requiredConfirmations" | "enabledCurrencyTypes">;
  addressDeriver: AddressDeriver;
  fees: FeeSchedule;
  checkout: { minExpirySeconds: number; latePaymentWatchHours: number };
  callbackUrls: { allowCidrs: readonly string[]; allowedPorts: readonly number[] };
  baseUrl(environment: Environment): string;
}): CheckoutDeps {
  return {
    db: deps.db,
    clock: deps.clock,
    idempotency: { db: deps.db, clock: deps.clock, leaseMs: deps.idempotencyLeaseMs },
    chains: deps.chains,
    create: {
      deriver: deps.addressDeriver,
      indexes: new DepositIndexReserve(),
      fees: deps.fees,
      latePaymentWatchHours: deps.checkout.latePaymentWatchHours,
      inserts: new CheckoutSessionInserts(deps.db),
      twinsOf: (network) => wrongNetworkTwins(network, deps.chains.enabledCurrencyTypes()),
    },
    minExpirySeconds: deps.checkout.minExpirySeconds,
    callbackUrls: deps.callbackUrls,
    baseUrl: deps.baseUrl,
  };
}

type Scope = { merchantId: string; environment: Environment };

/** What a checkout session is shown with: its hosted page's URL and what the chain shows of it. */
export interface CheckoutSessionView {
  session: CheckoutSessionRecord;
  checkoutUrl: string;
  detection: SessionDetection;
}

export interface OpenCheckoutSessionInput {
  amount: unknown;
  currencyType: CurrencyType;
  expiresInMinutes?: number | undefined;
  callbackUrl?: string | undefined;
  orderId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/**
 * `POST /checkout/session`: validates the request (amount, lifetime, metadata, the `callbackUrl`
 * resolved against the webhook URL rules) and the chain's availability, then creates the session
 * once per `Idempotency-Key`. Throws 400 VALIDATION_ERROR or 503 CHAIN_UNAVAILABLE.
 */
export async function openCheckoutSession(
  deps: CheckoutDeps,
  scope: Scope,
  input: OpenCheckoutSessionInput,
  call: IdempotentCall<CheckoutSessionView>,
): Promise<IdempotentAnswer> {
  const amount = amountField("amount", input.amount);
  const lifetime = sessionLifetimeMs(input.expiresInMinutes, deps.minExpirySeconds);
  const errors: FieldError[] = [...amount.errors, ...lifetime.errors, ...metadataErrors(input.metadata)];
  if (input.callbackUrl !== undefined) {
    errors.push(
      ...(await validateWebhookUrl(input.callbackUrl, {
        environment: scope.environment,
        allowCidrs: deps.callbackUrls.allowCidrs,
        allowedPorts: deps.callbackUrls.allowedPorts,
        field: "callbackUrl",
      })),
    );
  }
  if (errors.length > 0 || amount.units === undefined) throw AppError.validation(errors);
  const units = amount.units;
  deps.chains.get(input.currencyType, scope.environment); // 503 CHAIN_UNAVAILABLE before anything is written
  const create = async (trx: Db): Promise<CheckoutSessionView> => {
    const session = await createCheckoutSession(
      trx,
      deps.create,
      scope,
      {
        amount: units,
        currencyType: input.currencyType,
        lifetimeMs: lifetime.ms,
        callbackUrl: input.callbackUrl ?? null,
        orderId: input.orderId ?? null,
        metadata: input.metadata ?? null,
      },
      new Date(deps.clock.now()),
    );
    return {
      session,
      checkoutUrl: checkoutUrl(deps.baseUrl(scope.environment), session.transaction.id),
      detection: noDetection(deps.chains.requiredConfirmations(input.currencyType, scope.environment)),
    };
  };
  // createCheckoutSession writes its three rows in one statement (its index is not transactional).
  return runIdempotent(deps.idempotency, call.idempotency(), async (trx) => call.answer(await create(trx)), {
    singleWrite: true,
  });
}

/** `GET /checkout/session/{id}`: a merchant's session with what the chain shows of it; 404 otherwise. */
export async function getCheckoutSession(
  deps: CheckoutDeps,
  scope: Scope,
  id: string,
): Promise<CheckoutSessionView> {
  const session = await findCheckoutSession(deps.db, scope, id);
  if (!session) throw new AppError("NOT_FOUND", "No checkout session with this id.");
  const required = (n: CurrencyType, e: Environment) => deps.chains.requiredConfirmations(n, e);
  const detection = (await findSessionDetections(deps.db, [session.transaction.id], required)).get(
    session.transaction.id,
  );
  return {
    session,
    checkoutUrl: checkoutUrl(deps.baseUrl(scope.environment), session.transaction.id),
    detection: detection ?? noDetection(required(session.network, scope.environment)),
  };
}

/**
 * `POST /wallet/generate`: checks the chain's availability (503 CHAIN_UNAVAILABLE), then creates the
 * permanent address once per `Idempotency-Key`.
 */
export async function openDepositWallet(
  deps: CheckoutDeps,
  scope: Scope,
  input: { currencyType: CurrencyType; label?: string | undefined; externalUserId?: string | undefined },
  call: IdempotentCall<DepositWallet>,
): Promise<IdempotentAnswer> {
  deps.chains.get(input.currencyType, scope.environment);
  const create = (trx: Db) =>
    generateDepositWallet(
      trx,
      deps.create,
      scope,
      {
        currencyType: input.currencyType,
        label: input.label ?? null,
        externalUserId: input.externalUserId ?? null,
      },
      new Date(deps.clock.now()),
    );
  return runIdempotent(deps.idempotency, call.idempotency(), async (trx) => call.answer(await create(trx)));
}
