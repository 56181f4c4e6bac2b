import { normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Logger } from "../observability/logger.js";
import { FIRST_DEPOSIT_INDEX, GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../wallet/index.js";
import { SignerRejectedError } from "./protocol.js";

/**
 * The signer's transfer policy (CONTRACT §9): it signs only what the sending pipeline needs,
 * checked against rows the signer reads itself —
 * - from the **hot wallet**: a token transfer to the destination of an open withdrawal or payout
 *   intent (`outgoing_transfers`) of the same chain (network, environment), for its exact amount;
 * - from a **deposit address** (an index recorded in `watched_addresses` for this chain, whose
 *   address is the key's own): a token transfer to this chain's hot wallet, for the amount of an
 *   open sweep of that address;
 * - from the **gas tank**: a native transfer to a deposit address recorded for this chain, for
 *   the amount of an open gas top-up to it.
 * - from the **hot wallet** also: a token transfer to this chain's configured cold wallet (the
 *   signer's own configuration, issue #22), for the amount of an open cold forward.
 * Token transfers must call this chain's configured USDT contract. Anything else — another
 * source key, destination, amount, asset, token or another chain's rows — is refused and logged.
 * Intents are open while queued, signed or broadcast (a replacement re-signs an open one).
 */

/** What a structurally valid transaction does, as the signer decoded it from the signed bytes. */
export interface TransferFacts {
  network: CurrencyType;
  environment: Environment;
  /** Derivation index of the signing key. */
  index: number;
  /** The signing key's own address. */
  from: string;
  asset: "token" | "native";
  /** The recipient (for a token transfer the token recipient, not the contract). */
  to: string;
  amount: bigint;
  /** The called contract of a token transfer; null for a native transfer. */
  token: string | null;
}

export interface SigningPolicyOptions {
  /** The signer's own database connection. */
  db: Db;
  /** The address of a key of the signer (derived from its own private keys). */
  address: (network: CurrencyType, environment: Environment, index: number) => string;
  /** The USDT contract of a chain, from the signer's configuration. */
  tokenContract: (network: CurrencyType, environment: Environment) => string | undefined;
  /** The cold wallet of a chain, from the signer's configuration (none: no forwarding allowed). */
  coldWallet?: (network: CurrencyType, environment: Environment) => string | undefined;
  logger: Logger;
}

const OPEN = ["queued", "signed", "broadcast"] as const;

export type SourceRole = "hot_wallet" | "gas_tank" | "deposit";

export class SigningPolicy {
  constructor(private readonly o: SigningPolicyOptions) {}

  private isColdWallet(network: CurrencyType, environment: Environment, to: string): boolean {
    const cold = this.o.coldWallet?.(network, environment);
    if (!cold) return false;
    try {
      return normalizeAddress(network, cold) === to;
    } catch {
      return false;
    }
  }

  /**
   * Resolves when `t` may be signed; otherwise logs (warn: the shape, never key material) and
   * throws `SignerRejectedError`. `via`: an in-process caller's open transaction on the same
   * database (serve signs inside the sender's transaction; PGlite is a single connection), read
   * instead of the signer's own connection; the signer still writes the queries itself.
   */
  async check(t: TransferFacts, via?: Db): Promise<SourceRole> {
    const db = via ?? this.o.db;
    const refuse = (reason: string, role: SourceRole | "unknown"): never => {
      this.o.logger.warn(
        {
          alert: "signer_policy_refused",
          network: t.network,
          environment: t.environment,
          index: t.index,
          source: role,
          from: t.from,
          asset: t.asset,
          to: t.to,
          amount: t.amount.toString(),
          token: t.token,
          reason,
        },
        "signer refused a transfer outside its policy",
      );
      throw new SignerRejectedError(`policy: ${reason}`);
    };
    let to: string;
    try {
      to = normalizeAddress(t.network, t.to);
    } catch {
      return refuse("the recipient is not an address of the network", "unknown");
    }
    const role = await this.role(db, t);
    if (!role)
      return refuse(
        "the source key is not the hot wallet, the gas tank or a recorded deposit address",
        "unknown",
      );
    if (t.asset === "token") {
      const configured = this.o.tokenContract(t.network, t.environment);
      if (!configured) return refuse("no token contract is configured for this chain", role);
      if (!t.token || !sameAddress(t.network, t.token, configured))
        return refuse("the token is not this chain's configured token contract", role);
    }
    const intent = (kinds: ("withdrawal" | "payout" | "sweep" | "gas_topup" | "cold_forward")[]) =>
      db
        .selectFrom("outgoing_transfers")
        .select("intent_id")
        .where("network", "=", t.network)
        .where("environment", "=", t.environment)
        .where("kind", "in", kinds)
        .where("from_index", "=", t.index)
        .where("asset", "=", t.asset)
        .where("to_address", "=", to)
        .where("amount", "=", t.amount.toString())
        .where("status", "in", OPEN)
        .limit(1)
        .executeTakeFirst();
    switch (role) {
      case "hot_wallet":
        if (t.asset !== "token") return refuse("the hot wallet sends only the token", role);
        if (this.isColdWallet(t.network, t.environment, to) && (await intent(["cold_forward"]))) return role;
        if (!(await intent(["withdrawal", "payout"])))
          return refuse("no open withdrawal or payout to this destination for this amount", role);
        return role;
      case "deposit": {
        if (t.asset !== "token") return refuse("a deposit address sends only the token (a sweep)", role);
        const hot = this.o.address(t.network, t.environment, HOT_WALLET_INDEX);
        if (to !== hot) return refuse("a deposit address sends only to the hot wallet", role);
        if (!(await intent(["sweep"]))) return refuse("no open sweep of this address for this amount", role);
        return role;
      }
      case "gas_tank": {
        if (t.asset !== "native") return refuse("the gas tank sends only the native coin", role);
        const deposit = await db
          .selectFrom("watched_addresses")
          .select("address")
          .where("network", "=", t.network)
          .where("environment", "=", t.environment)
          .where("address", "=", to)
          .where("derivation_index", ">=", FIRST_DEPOSIT_INDEX)
          .limit(1)
          .executeTakeFirst();
        if (!deposit) return refuse("the gas tank sends only to recorded deposit addresses", role);
        if (!(await intent(["gas_topup"])))
          return refuse("no open gas top-up to this address for this amount", role);
        return role;
      }
    }
  }

  /** The role of the signing key on this chain, from the index and the recorded deposit addresses. */
  private async role(db: Db, t: TransferFacts): Promise<SourceRole | null> {
    if (t.index === HOT_WALLET_INDEX) return "hot_wallet";
    if (t.index === GAS_TANK_INDEX) return "gas_tank";
    if (t.index < FIRST_DEPOSIT_INDEX) return null;
    const row = await db
      .selectFrom("watched_addresses")
      .select("address")
      .where("network", "=", t.network)
      .where("environment", "=", t.environment)
      .where("derivation_index", "=", t.index)
      .limit(1)
      .executeTakeFirst();
    // The recorded address must be the key's own (a row of another derivation is not this key).
    return row && sameAddress(t.network, row.address, t.from) ? "deposit" : null;
  }
}

function sameAddress(network: CurrencyType, a: string, b: string): boolean {
  try {
    return normalizeAddress(network, a) === normalizeAddress(network, b);
  } catch {
    return false;
  }
}
