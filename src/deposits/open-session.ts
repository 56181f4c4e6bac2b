import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import {
  type CheckoutSessionRecord,
  checkoutUrl,
  metadataErrors,
  noDetection,
  returnUrlErrors,
  type SessionDetection,
  type SessionPrice,
  sessionLifetimeMs,
} from "../domain/checkout.js";
import { type CurrencyType, currencyOf, wrongNetworkTwins } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import {
  CURRENCY_CODE,
  isIsoCurrency,
  tokenAmountAllowed,
  tokenAmountOfPrice,
} from "../domain/exchange-rate.js";
import type { FeeSchedule } from "../domain/fees.js";
import { amountField } from "../domain/money.js";
import {
  type IdempotencyContext,
  type IdempotentAnswer,
  type IdempotentCall,
  runIdempotent,
} from "../idempotency/index.js";
import type { Clock } from "../lib/clock.js";
import { lockRate, type RateSource } from "../rates/index.js";
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
  /** Where the rates of prices in fiat come from (`EXCHANGE_RATE_SOURCE`). */
  rates: RateSource;
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
  rates: RateSource;
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
    rates: deps.rates,
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
  /** The token amount; or `priceAmount` with `priceCurrency` (one of the two, never both). */
  amount?: unknown;
  priceAmount?: unknown;
  priceCurrency?: string | undefined;
  successUrl?: string | undefined;
  cancelUrl?: string | undefined;
  currencyType: CurrencyType;
  expiresInMinutes?: number | undefined;
  callbackUrl?: string | undefined;
  orderId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** The payment link the session is opened from (links/, issue #41); never from a request body. */
  paymentLinkId?: string | undefined;
}

/**
 * `POST /checkout/session`: validates the request (amount or price in fiat, lifetime, metadata,
 * the `callbackUrl` resolved against the webhook URL rules, the return URLs) and the chain's
 * availability, locks the rate of a price in fiat (docs/decisions/prices.md), then creates the
 * session once per `Idempotency-Key`. Throws 400 VALIDATION_ERROR, 503 CHAIN_UNAVAILABLE or 503
 * RATE_UNAVAILABLE.
 */
export async function openCheckoutSession(
  deps: CheckoutDeps,
  scope: Scope,
  input: OpenCheckoutSessionInput,
  call: IdempotentCall<CheckoutSessionView>,
): Promise<IdempotentAnswer> {
  const pricing = sessionPricing(input, deps.rates);
  const lifetime = sessionLifetimeMs(input.expiresInMinutes, deps.minExpirySeconds);
  const errors: FieldError[] = [...pricing.errors, ...lifetime.errors, ...metadataErrors(input.metadata)];
  for (const field of ["successUrl", "cancelUrl"] as const) {
    if (input[field] !== undefined) errors.push(...returnUrlErrors(field, input[field], scope.environment));
  }
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
  if (errors.length > 0 || pricing.units === undefined) throw AppError.validation(errors);
  let units = pricing.units;
  deps.chains.get(input.currencyType, scope.environment); // 503 CHAIN_UNAVAILABLE before anything is written
  // A price in fiat locks the source's fresh rate (503 RATE_UNAVAILABLE without one) — only for a
  // request that will run: a replay of its Idempotency-Key answers what was locked then.
  let price: SessionPrice | null = null;
  const fiat = pricing.fiat;
  const lockPrice = fiat
    ? async () => {
        const quote = await lockRate(deps.rates, currencyOf(input.currencyType).token, fiat.currency);
        units = tokenAmountOfPrice(fiat.amount, quote.rate);
        if (!tokenAmountAllowed(units)) {
          throw AppError.validation([
            {
              field: "priceAmount",
              message: "is worth more than 1000000000 in the token at the current rate",
            },
          ]);
        }
        price = {
          amount: fiat.amount,
          currency: fiat.currency,
          rate: quote.rate,
          source: quote.source,
          at: quote.at,
        };
      }
    : undefined;
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
        price,
        successUrl: input.successUrl ?? null,
        cancelUrl: input.cancelUrl ?? null,
        paymentLinkId: input.paymentLinkId ?? null,
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
    ...(lockPrice ? { beforeRun: lockPrice } : {}),
  });
}

/**
 * What a new session is priced in: `amount` in the token, or `priceAmount` (parsed like an amount:
 * at most 6 decimals) in `priceCurrency` (ISO 4217, one the rate source quotes) — exactly one of the
 * two. `units` is the token amount when it is given; a fiat price's is known once its rate is locked.
 */
function sessionPricing(
  input: OpenCheckoutSessionInput,
  rates: RateSource,
): { units: bigint | undefined; fiat: { amount: bigint; currency: string } | null; errors: FieldError[] } {
  const hasPrice = input.priceAmount !== undefined;
  if (input.amount !== undefined && hasPrice) {
    return {
      units: undefined,
      fiat: null,
      errors: [{ field: "priceAmount", message: "must not be given with amount: give one of the two" }],
    };
  }
  if (!hasPrice) {
    if (input.amount === undefined) {
      return {
        units: undefined,
        fiat: null,
        errors: [{ field: "amount", message: "is required (or priceAmount with priceCurrency)" }],
      };
    }
    const amount = amountField("amount", input.amount);
    const errors = [...amount.errors];
    if (input.priceCurrency !== undefined)
      errors.push({ field: "priceCurrency", message: "is only accepted with priceAmount" });
    return { units: amount.units, fiat: null, errors };
  }
  const price = amountField("priceAmount", input.priceAmount);
  const errors = [...price.errors];
  const currency = input.priceCurrency;
  if (currency === undefined)
    errors.push({ field: "priceCurrency", message: "is required with priceAmount" });
  else if (!CURRENCY_CODE.test(currency) || !isIsoCurrency(currency))
    errors.push({ field: "priceCurrency", message: "must be an ISO 4217 currency code such as EUR" });
  else if (!rates.quotes(currency))
    errors.push({
      field: "priceCurrency",
      message: `is not quoted by this gateway's exchange rate source (${rates.name})`,
    });
  if (errors.length > 0 || price.units === undefined || currency === undefined)
    return { units: undefined, fiat: null, errors };
  // The token amount is known once the rate is locked: 0 until then.
  return { units: 0n, fiat: { amount: price.units, currency }, errors: [] };
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

/**
 * The same session as `openCheckoutSession` (the same checks, the same creation), opened in the
 * caller's transaction and without an `Idempotency-Key`: a payment link opens it under the link's
 * row lock, so that counting the link's sessions and adding one are one step (links/open.ts).
 */
export async function openCheckoutSessionIn(
  trx: Db,
  deps: CheckoutDeps,
  scope: Scope,
  input: OpenCheckoutSessionInput,
): Promise<CheckoutSessionView> {
  let view: CheckoutSessionView | undefined;
  const inTransaction: CheckoutDeps = { ...deps, db: trx, idempotency: { ...deps.idempotency, db: trx } };
  await openCheckoutSession(inTransaction, scope, input, {
    idempotency: () => ({ keyed: null, status: 201, log: { warn: () => {} } }),
    answer: (created) => {
      view = created;
      return "";
    },
  });
  if (!view) throw new Error("openCheckoutSession answered without a session");
  return view;
}
