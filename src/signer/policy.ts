import {
  CREATE2_DEPLOYER,
  isResourceAsset,
  normalizeAddress,
  ownershipSpellings,
  type ResourceAction,
  type ResourceAsset,
  sweeperAddress,
  sweeperDeployData,
} from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { TransferKind } from "../db/tables/sending.js";
import { type ChainFamily, type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Logger } from "../observability/logger.js";
import {
  FIRST_DEPOSIT_INDEX,
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../wallet/index.js";
import { isIssuedDepositAddress, recordedAddressAt, recordedIndexOf } from "../watcher/index.js";
import {
  batchItems,
  delegationEvidence,
  openHotWalletPayments,
  otherOpenDelegations,
  otherOpenDeploys,
  paymentEvidence,
  reclaimEvidence,
  returnEvidence,
  sweepEvidence,
} from "./evidence.js";
import { SignerRejectedError } from "./protocol.js";

/**
 * The signer's transfer policy (docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11; issue #34 finding 1): it signs only what the sending
 * pipeline needs, for the intent the request names, checked against rows the signer reads itself.
 * The intent row (`outgoing_transfers`) must be open, of this chain (network, environment) and be
 * exactly the transaction signed (source key, asset, recipient, amount); then, by source:
 * - the **hot wallet**: a token transfer of a withdrawal or payout, backed by evidence the rows of
 *   its flow agree on (`evidence.ts`: the transaction in a state that may be paid, its destination,
 *   its net amount, the ledger hold, the approvals), never to the gateway's own addresses (hot
 *   wallet, gas tank, a recorded deposit address, the cold wallet: finding 10); or a cold forward
 *   to this chain's cold wallet of the signer's own configuration (issue #22);
 * - a **deposit address** (an index recorded in `watched_addresses` for this chain, whose address
 *   is the key's own) with a recorded confirmed deposit: a sweep to this chain's hot wallet; or
 *   the return of a held deposit at that address to its recorded sender, of exactly what arrived,
 *   once its owner decided so (issue #40);
 * - the **gas tank**: a native top-up to a deposit address recorded for this chain.
 * Nothing is ever sent to the zero address of the network (finding 11). Token transfers must call
 * this chain's configured USDT contract. Anything else is refused and logged (`alert`). Withdrawals
 * and payouts then pass the outflow cap (`outflow.ts`).
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
  asset: "token" | "native" | ResourceAsset;
  /**
   * The recipient (for a token transfer the token recipient, not the contract; for a delegation
   * the receiver of the resource; for a stake the owner itself).
   */
  to: string;
  /** Base units; for a resource, the TRX (sun) staked or delegated. */
  amount: bigint;
  /** The called contract of a token transfer; null for a native transfer. */
  token: string | null;
  /** A resource's Stake 2.0 action (issue #38); none for coins. */
  action?: ResourceAction;
  /** A delegation locked for a period (never signed: it could not be taken back). */
  lock?: boolean;
  /** The gas tank's calls of EVM batched sweeps (issue #39), decoded from the transaction. */
  call?: BatchCallFacts;
}

/**
 * `sweep_batch`: `sweepMany` on `contract` for `accounts` with their `amounts` (base units), and the
 * EIP-7702 authorisations asked for (deposit key index → the contract it delegates to);
 * `sweeper_deploy`: the `data` sent to the CREATE2 deployer.
 */
export type BatchCallFacts =
  | {
      kind: "sweep_batch";
      contract: string;
      accounts: string[];
      amounts: bigint[];
      authorizations: { index: number; address: string }[];
    }
  | { kind: "sweeper_deploy"; data: string };

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

const OPEN: readonly string[] = ["queued", "signed", "broadcast"];

export type SourceRole = "hot_wallet" | "gas_tank" | "deposit" | "resource_account";
export type IntentKind = TransferKind;

/** The intent kind of each Stake 2.0 action. */
const RESOURCE_KIND: Readonly<Record<ResourceAction, IntentKind>> = {
  stake: "resource_stake",
  delegate: "resource_delegation",
  reclaim: "resource_reclaim",
};

/** The zero address of each network (finding 11): nothing is ever sent there. */
const ZERO_ADDRESS: Readonly<Record<ChainFamily, string>> = {
  evm: "0x0000000000000000000000000000000000000000",
  tron: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
};

/** What the policy allowed: the intent signed, its kind, and the normalised recipient. */
export interface PolicyDecision {
  role: SourceRole;
  kind: IntentKind;
  intentId: string;
  to: string;
  amount: bigint;
}

export class SigningPolicy {
  /** The signer's system wallets by `network/environment/index`: derived once, they never change. */
  readonly #systemAddresses = new Map<string, string>();

  constructor(private readonly o: SigningPolicyOptions) {}

  /**
   * The address of a system wallet of the signer (a private-key derivation on a miss): the own-address
   * check compares the whole key space, some forty of them per withdrawal.
   */
  private systemAddress(network: CurrencyType, environment: Environment, index: number): string {
    const key = `${network}/${environment}/${index}`;
    let address = this.#systemAddresses.get(key);
    if (address === undefined) {
      address = this.o.address(network, environment, index);
      this.#systemAddresses.set(key, address);
    }
    return address;
  }

  private coldWallet(network: CurrencyType, environment: Environment): string | null {
    const cold = this.o.coldWallet?.(network, environment);
    if (!cold) return null;
    try {
      return normalizeAddress(network, cold);
    } catch {
      return null;
    }
  }

  /**
   * Resolves with the decision when `t`, for the intent `intentId`, may be signed; otherwise logs
   * (warn, `alert`: the shape, never key material) and throws `SignerRejectedError`. `via`: an
   * in-process caller's open transaction on the same database (serve signs inside the sender's
   * transaction; PGlite is a single connection), read instead of the signer's own connection.
   */
  async check(t: TransferFacts, intentId: string | undefined, via?: Db): Promise<PolicyDecision> {
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
          intentId: intentId ?? null,
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
    if (to === normalizeAddress(t.network, ZERO_ADDRESS[currencyOf(t.network).definition.family]))
      return refuse("the recipient is the zero address", "unknown");
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
    // The energy engine's Stake 2.0 (issue #38): only from the resource account, and only that.
    if (isResourceAsset(t.asset) !== (role === "resource_account"))
      return refuse("only the resource account stakes or delegates, and it sends nothing else", role);
    if (t.action !== undefined && !isResourceAsset(t.asset))
      return refuse("a coin transfer has no Stake 2.0 action", role);
    if (role === "hot_wallet" && t.asset !== "token")
      return refuse("the hot wallet sends only the token", role);
    if (role === "deposit" && t.asset !== "token")
      return refuse("a deposit address sends only the token (a sweep)", role);
    if (role === "gas_tank" && t.asset !== "native" && t.call?.kind !== "sweep_batch")
      return refuse("the gas tank sends only the native coin", role);
    // Batched sweeps (issue #39): the gas tank's calls, only on a network that runs EIP-7702, and
    // the only thing that moves through them is a deposit address's token to the hot wallet.
    let recipient = to; // the intent's recipient: for a batch, the hot wallet in the sweeper's code
    if (t.call) {
      if (role !== "gas_tank") return refuse("only the gas tank sends a batch or deploys the sweeper", role);
      if (currencyOf(t.network).definition.eip7702 !== true)
        return refuse("this network does not run EIP-7702", role);
      const hot = this.systemAddress(t.network, t.environment, HOT_WALLET_INDEX);
      // The contract is computed from the signer's own hot wallet key and its own configured token
      // (one sweeper per currency type), never taken from the request.
      const token = this.o.tokenContract(t.network, t.environment);
      if (!token) return refuse("no token contract is configured for this chain", role);
      if (t.call.kind === "sweep_batch") {
        if (!sameAddress(t.network, t.call.contract, sweeperAddress(hot, token)))
          return refuse("a batch calls only the sweeper contract of the hot wallet", role);
        recipient = hot;
      } else {
        if (
          !sameAddress(t.network, to, CREATE2_DEPLOYER) ||
          t.call.data !== sweeperDeployData(hot, token).toLowerCase()
        )
          return refuse("the gas tank deploys only the sweeper contract of the hot wallet", role);
      }
    }
    if (typeof intentId !== "string" || intentId.length === 0 || intentId.length > 100)
      return refuse("the request names no intent", role);

    // The intent: open, of this chain, and exactly this transaction.
    const intent = await db
      .selectFrom("outgoing_transfers")
      .select([
        "kind",
        "status",
        "network",
        "environment",
        "asset",
        "from_index",
        "to_address",
        "amount",
        "carried",
      ])
      .where("intent_id", "=", intentId)
      .executeTakeFirst();
    if (!intent || !OPEN.includes(intent.status))
      return refuse("no open intent with this id (no withdrawal or payout backs it)", role);
    if (
      intent.network !== t.network ||
      intent.environment !== t.environment ||
      intent.asset !== t.asset ||
      Number(intent.from_index) !== t.index ||
      !sameAddress(t.network, intent.to_address, recipient) ||
      BigInt(intent.amount) !== t.amount
    )
      return refuse("the transaction does not match its intent (source, asset, recipient or amount)", role);
    const kind = intent.kind;
    const decision: PolicyDecision = { role, kind, intentId, to: recipient, amount: t.amount };
    if (t.action && RESOURCE_KIND[t.action] !== kind)
      return refuse(`a ${t.action} transaction does not carry a ${kind}`, role);

    switch (role) {
      case "hot_wallet": {
        const cold = this.coldWallet(t.network, t.environment);
        if (kind === "cold_forward") {
          if (!cold || to !== cold)
            return refuse("a cold forward goes only to the configured cold wallet", role);
          return decision;
        }
        if (kind !== "withdrawal" && kind !== "payout")
          return refuse(`the hot wallet does not send a ${kind}`, role);
        if (await this.isOwnAddress(db, t.network, to, cold))
          return refuse("the destination is one of the gateway's own addresses", role);
        const missing = await paymentEvidence(db, {
          id: intentId,
          kind,
          network: t.network,
          environment: t.environment,
          to,
          amount: t.amount,
        });
        if (missing) return refuse(missing, role);
        return decision;
      }
      case "deposit": {
        if (kind === "return") {
          const missing = await returnEvidence(db, {
            intentId,
            network: t.network,
            environment: t.environment,
            from: normalizeAddress(t.network, t.from),
            to,
            amount: t.amount,
          });
          if (missing) return refuse(missing, role);
          return decision;
        }
        if (kind !== "sweep") return refuse(`a deposit address does not send a ${kind}`, role);
        // A sweep carried by a batch (issue #39) moves only inside its batch, never on its own.
        if (intent.carried) return refuse("a sweep carried by a batch is never signed on its own", role);
        const hot = this.systemAddress(t.network, t.environment, HOT_WALLET_INDEX);
        if (to !== hot) return refuse("a deposit address sends only to the hot wallet", role);
        const missing = await sweepEvidence(db, {
          network: t.network,
          environment: t.environment,
          from: normalizeAddress(t.network, t.from),
        });
        if (missing) return refuse(missing, role);
        return decision;
      }
      case "resource_account": {
        if (!t.action) return refuse("a resource transaction without its Stake 2.0 action", role);
        const own = normalizeAddress(t.network, t.from);
        if (t.action === "stake") {
          if (to !== own) return refuse("the resource account stakes only for itself", role);
          return decision;
        }
        if (t.lock) return refuse("a delegation is never locked (it must come back at once)", role);
        if (to === own) return refuse("the resource account does not delegate to itself", role);
        const hot = this.systemAddress(t.network, t.environment, HOT_WALLET_INDEX);
        if (!isResourceAsset(t.asset)) return refuse("the resource account sends only resources", role);
        const scope = {
          network: t.network,
          environment: t.environment,
          to,
          amount: t.amount,
          asset: t.asset,
        };
        let missing: string | null;
        if (t.action === "reclaim") missing = await reclaimEvidence(db, { ...scope, intentId });
        else if (to === hot) missing = await this.hotWalletDelegation(db, { ...scope, intentId });
        else
          missing = await delegationEvidence(db, { ...scope, intentId }, (i) =>
            this.o.address(t.network, t.environment, i),
          );
        if (missing) return refuse(missing, role);
        return decision;
      }
      case "gas_tank": {
        if ((kind === "sweep_batch" || kind === "sweeper_deploy") !== (t.call?.kind === kind))
          return refuse(`a ${t.call?.kind ?? "transfer"} does not carry a ${kind}`, role);
        if (t.call?.kind === "sweeper_deploy") {
          // One deployment in flight per chain: forged intents cannot have the gas tank pay for many.
          if (await otherOpenDeploys(db, { network: t.network, environment: t.environment, intentId }))
            return refuse("another deployment of the sweeper is on its way", role);
          return decision;
        }
        if (t.call?.kind === "sweep_batch") {
          const missing = await this.batchEvidence(db, t, t.call, intentId);
          if (missing) return refuse(missing, role);
          return decision;
        }
        if (kind !== "gas_topup") return refuse(`the gas tank does not send a ${kind}`, role);
        const index = await recordedIndexOf(db, {
          network: t.network,
          environment: t.environment,
          address: to,
        });
        if (index === null || index < FIRST_DEPOSIT_INDEX)
          return refuse("the gas tank sends only to recorded deposit addresses", role);
        // The recorded row must be the signer's own key at its index (outside review of issue #38:
        // a forged `watched_addresses` row made the gas tank pay an outside address).
        if (!sameAddress(t.network, this.o.address(t.network, t.environment, index), to))
          return refuse("the deposit address is not the signer's own key at its index", role);
        return decision;
      }
    }
  }

  /**
   * A batched sweep (issue #39): exactly the carrier's open sweeps, in its order — each from a
   * recorded deposit address that is the signer's own key at its index, of its amount, with the
   * evidence of a sweep (a confirmed deposit there) — and authorisations only for those addresses,
   * once each, to the sweeper contract (already checked to be the hot wallet's).
   */
  private async batchEvidence(
    db: Db,
    t: TransferFacts,
    call: Extract<BatchCallFacts, { kind: "sweep_batch" }>,
    intentId: string,
  ): Promise<string | null> {
    const items = await batchItems(db, intentId);
    if (items.length === 0 || items.length !== call.accounts.length)
      return "the batch does not list exactly its carrier's sweeps";
    const indexes = new Set<number>();
    for (const [i, item] of items.entries()) {
      if (item.kind !== "sweep" || !item.carried || !OPEN.includes(item.status))
        return "a sweep of the batch is not open";
      if (item.network !== t.network || item.environment !== t.environment)
        return "a sweep of the batch is of another chain";
      const index = Number(item.from_index);
      if (index < FIRST_DEPOSIT_INDEX) return "a batch sweeps only deposit addresses";
      // One Transfer per address: a second sweep of it in the same batch is never signed.
      if (indexes.has(index)) return "an address is listed twice in the batch";
      const own = this.o.address(t.network, t.environment, index);
      if (!sameAddress(t.network, own, call.accounts[i] as string))
        return "an address of the batch is not the signer's own key of its sweep";
      const recorded = await recordedAddressAt(db, t.network, t.environment, index);
      if (recorded === undefined || !sameAddress(t.network, recorded, own))
        return "an address of the batch is not a recorded deposit address";
      if (BigInt(item.amount) !== call.amounts[i]) return "an amount of the batch is not its sweep's";
      const missing = await sweepEvidence(db, { network: t.network, environment: t.environment, from: own });
      if (missing) return missing;
      indexes.add(index);
    }
    const authorised = new Set<number>();
    for (const a of call.authorizations) {
      if (!indexes.has(a.index)) return "an authorisation for an address outside the batch";
      if (authorised.has(a.index)) return "an address authorised twice";
      if (!sameAddress(t.network, a.address, call.contract))
        return "an authorisation delegates only to the sweeper contract";
      authorised.add(a.index);
    }
    return null;
  }

  /**
   * A delegation of energy to the hot wallet (issue #38): one at a time, and only while a payment
   * the signer itself would sign is open from it — a withdrawal or payout with its evidence, or a
   * cold forward to the configured cold wallet (outside review: a forged intent row alone made it
   * delegate again and again).
   */
  private async hotWalletDelegation(
    db: Db,
    d: {
      network: CurrencyType;
      environment: Environment;
      to: string;
      amount: bigint;
      asset: ResourceAsset;
      intentId: string;
    },
  ): Promise<string | null> {
    if (d.asset !== "energy") return "only energy is delegated";
    if (await otherOpenDelegations(db, d)) return "another delegation to the hot wallet is on its way";
    const cold = this.coldWallet(d.network, d.environment);
    for (const p of await openHotWalletPayments(db, d)) {
      if (p.kind === "cold_forward") {
        if (cold && sameAddress(d.network, p.to_address, cold)) return null;
        continue;
      }
      if (p.kind !== "withdrawal" && p.kind !== "payout") continue;
      let to: string;
      try {
        to = normalizeAddress(d.network, p.to_address);
      } catch {
        continue;
      }
      const missing = await paymentEvidence(db, {
        id: p.intent_id,
        kind: p.kind,
        network: d.network,
        environment: d.environment,
        to,
        amount: p.amount,
      });
      if (!missing) return null;
    }
    return "no payment from the hot wallet with its evidence is open";
  }

  /**
   * The gateway's own addresses on this network (finding 10): the hot wallet and the gas tank of
   * either environment, the cold wallet, and every recorded deposit address.
   */
  private async isOwnAddress(
    db: Db,
    network: CurrencyType,
    to: string,
    cold: string | null,
  ): Promise<boolean> {
    if (to === cold) return true;
    // The whole key space (an EVM address of ours is ours on every EVM network), in every spelling
    // (the TRON spelling of an EVM key is the same key).
    let spellings: ReturnType<typeof ownershipSpellings>;
    try {
      spellings = ownershipSpellings(network, to);
    } catch {
      return false; // not an address of the network: the shape checks refuse it
    }
    for (const spelling of spellings) {
      for (const c of spelling.networks)
        for (const environment of ["production", "sandbox"] as const)
          for (const index of [HOT_WALLET_INDEX, GAS_TANK_INDEX, RESOURCE_ACCOUNT_INDEX])
            if (this.systemAddress(c, environment, index) === spelling.address) return true;
      if (await isIssuedDepositAddress(db, spelling.networks, spelling.address)) return true;
    }
    return false;
  }

  /** The role of the signing key on this chain, from the index and the recorded deposit addresses. */
  private async role(db: Db, t: TransferFacts): Promise<SourceRole | null> {
    if (t.index === HOT_WALLET_INDEX) return "hot_wallet";
    if (t.index === GAS_TANK_INDEX) return "gas_tank";
    if (t.index === RESOURCE_ACCOUNT_INDEX) return "resource_account";
    if (t.index < FIRST_DEPOSIT_INDEX) return null;
    const recorded = await recordedAddressAt(db, t.network, t.environment, t.index);
    // The recorded address must be the key's own (a row of another derivation is not this key).
    return recorded !== undefined && sameAddress(t.network, recorded, t.from) ? "deposit" : null;
  }
}

function sameAddress(network: CurrencyType, a: string, b: string): boolean {
  try {
    return normalizeAddress(network, a) === normalizeAddress(network, b);
  } catch {
    return false;
  }
}
