import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import {
  findCheckoutSessionsByIds,
  findPublicCheckoutSession,
  findSessionDetections,
} from "../deposits/index.js";
import { type CheckoutSessionRecord, noDetection } from "../domain/checkout.js";
import { type CurrencyType, wrongNetworkTwins } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import { findPageBranding } from "../merchants/index.js";
import type { Logger } from "../observability/logger.js";
import { wrongNetworkTwinsWatched } from "../watcher/index.js";
import { type LiveSnapshot, LiveStatusHub, type LiveSubscriber, snapshotOf } from "./live-status.js";
import type { Language } from "./messages.js";
import { pageState, remainingAmount, renderPayPage } from "./page.js";
import { paymentUri, uriCarriesAmount, type WalletLink, walletLink } from "./payment-uri.js";
import { qrSvg } from "./qr.js";

/** Longest session id we look up (ids are `tx_` + 26 characters). */
const MAX_ID_LENGTH = 100;

export interface PayPagesDeps {
  db: Db;
  clock: Clock;
  chains: Pick<ChainRegistry, "requiredConfirmations" | "entry" | "enabledCurrencyTypes">;
  /** The configured token contract of a currency type in an environment (what the QR code names). */
  tokenContract: (network: CurrencyType, environment: Environment) => string | undefined;
  logger: Logger;
}

/**
 * The hosted payment page's use cases (docs/api-reference.md#hosted-payment-page, issue #7): the page of a session and its live
 * status. A session is visible only in the environment whose base URL serves the page; the page
 * never carries the merchant's secrets, `callbackUrl` or `metadata`. One live-status poller per
 * process for every open page (two queries per interval, whatever the number of pages).
 */
export class PayPages {
  readonly #deps: PayPagesDeps;
  readonly #hub: LiveStatusHub;

  constructor(deps: PayPagesDeps) {
    this.#deps = deps;
    this.#hub = new LiveStatusHub({
      load: async (ids) => this.#snapshots(await findCheckoutSessionsByIds(deps.db, ids)),
      onError: (err) => deps.logger.warn({ err }, "hosted page live status: read failed"),
    });
  }

  /** The page of session `id` in `environment` (HTML), or null when there is none. */
  async page(environment: Environment, id: string, lang: Language, nonce: string): Promise<string | null> {
    const session = await this.#find(environment, id);
    if (!session) return null;
    const snapshot = await this.#snapshotOfOne(session);
    const now = this.#deps.clock.now();
    const state = pageState(snapshot, session.expiresAt, now);
    const remaining = remainingAmount(snapshot);
    let qr: string | null = null;
    let qrUnits: bigint | null = null;
    let wallet: WalletLink | null = null;
    const open = state === "waiting" || state === "partial";
    if (open) {
      const payment = {
        network: session.network,
        address: session.address,
        units: remaining,
        tokenContract: this.#tokenContract(session.network, environment),
      };
      const uri = paymentUri(payment);
      qr = await qrSvg(uri);
      qrUnits = uriCarriesAmount(uri) ? remaining : null;
      wallet = walletLink(payment);
    }
    const branding = await findPageBranding(this.#deps.db, session.transaction.merchantId);
    return renderPayPage({
      lang,
      merchant: branding ?? { name: "", logo: null },
      // Checked again when rendered (page.ts `safeReturnUrl`), whatever was stored.
      successUrl: session.successUrl,
      cancelUrl: session.cancelUrl,
      walletLink: wallet,
      environment,
      sessionId: session.transaction.id,
      network: session.network,
      address: session.address,
      orderId: session.transaction.orderId,
      snapshot,
      expiresAt: session.expiresAt,
      now,
      qrSvg: qr,
      qrUnits,
      nonce,
      alsoCredited: open
        ? await wrongNetworkTwinsWatched(this.#deps.db, {
            environment,
            address: session.address,
            candidates: wrongNetworkTwins(session.network, this.#deps.chains.enabledCurrencyTypes()),
          })
        : [],
    });
  }

  /** The live status of session `id` in `environment` as it is now; 404 NOT_FOUND when there is none. */
  async liveStatus(
    environment: Environment,
    id: string,
  ): Promise<{ sessionId: string; first: LiveSnapshot }> {
    const session = await this.#find(environment, id);
    if (!session) throw AppError.notFound("No checkout session with this id.");
    return { sessionId: session.transaction.id, first: await this.#snapshotOfOne(session) };
  }

  /** Follows a session's live status from `first` on; returns the unsubscribe. */
  subscribe(subscriber: LiveSubscriber, first: LiveSnapshot): () => void {
    return this.#hub.subscribe(subscriber, first);
  }

  close(): void {
    this.#hub.close();
  }

  #find(environment: Environment, id: string): Promise<CheckoutSessionRecord | null> {
    return id.length <= MAX_ID_LENGTH
      ? findPublicCheckoutSession(this.#deps.db, environment, id)
      : Promise.resolve(null);
  }

  #required = (network: CurrencyType, environment: Environment) =>
    this.#deps.chains.requiredConfirmations(network, environment);

  // What the chain shows of sessions (detection, confirmations), for the page and its live status.
  async #snapshots(sessions: CheckoutSessionRecord[]): Promise<Map<string, LiveSnapshot>> {
    const detections = await findSessionDetections(
      this.#deps.db,
      sessions.map((s) => s.transaction.id),
      this.#required,
    );
    return new Map(
      sessions.map((s) => [
        s.transaction.id,
        snapshotOf(
          s,
          detections.get(s.transaction.id) ??
            noDetection(this.#required(s.network, s.transaction.environment)),
        ),
      ]),
    );
  }

  async #snapshotOfOne(s: CheckoutSessionRecord): Promise<LiveSnapshot> {
    return (await this.#snapshots([s])).get(s.transaction.id)!;
  }

  // The token contract the QR code names: the configured one, except on the sandbox simulator (no token).
  #tokenContract(network: CurrencyType, environment: Environment): string | undefined {
    const entry = this.#deps.chains.entry(network, environment);
    if (entry.status === "available" && entry.kind === "simulator") return undefined;
    return this.#deps.tokenContract(network, environment);
  }
}
