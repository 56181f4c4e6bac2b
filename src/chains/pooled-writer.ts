import type { ChainAdapter } from "./adapter.js";
import { ChainUnavailableError } from "./errors.js";
import { type PoolAnswer, ProviderPool } from "./provider-pool.js";
import {
  type BroadcastResult,
  type ExpectedTransfer,
  type PreparedTransfer,
  type PrepareOptions,
  type ResourceReads,
  type SignedChainWriter,
  type TransferCheck,
  type TransferSpec,
  TransferWouldFailError,
} from "./writer.js";

/**
 * The write side of a chain with several providers (issue #34): one writer per provider, behind
 * the same `ProviderPool` as the read side (one health, back-off and disagreement count per
 * provider). Sending goes to every provider (harmless: the same signed bytes); every read that
 * decides where money goes is agreed:
 *
 * - a transfer's **outcome** (`check`) is final only when a quorum of providers (a majority of
 *   those configured, at least two) report it mined with the same result in the same block; its
 *   **confirmations** are those the quorum has all reached (one provider's invented head adds
 *   none). A provider reporting it mined while another does not, or mined otherwise, makes it
 *   `disputed`: the sender decides nothing on it (neither completed nor failed, no nonce or
 *   expiry rule) and alerts;
 * - "unmined" is believed only when no provider reports it mined and a quorum answered;
 * - the account's **nonce** is the one a quorum has reached (a provider cannot make the sender
 *   believe a nonce was used by another transaction);
 * - **balances** are the second highest answer (two providers hold at least that much);
 * - a transfer that **would fail** (refused before signing, which fails the withdrawal) needs a
 *   quorum saying so; otherwise it waits.
 *
 * Building a transaction and its fees read from the best provider (failover): the signer checks
 * what it signs against the intent, and the chain's outcome is agreed afterwards.
 */
export class PooledChainWriter implements SignedChainWriter {
  readonly kind = "signed" as const;
  readonly network: SignedChainWriter["network"];
  /**
   * TRON's Stake 2.0 reads (issue #38), from the best provider: they size a delegation, they never
   * decide where coins go (the signer's policy and the checked outcome do).
   */
  readonly resources?: ResourceReads;

  constructor(
    private readonly pool: ProviderPool,
    private readonly writers: readonly SignedChainWriter[],
  ) {
    if (writers.length !== pool.names().length)
      throw new Error("a pooled writer needs one writer per provider of its pool");
    this.network = pool.network;
    if (writers.every((w) => w.sweeperDeployed))
      this.sweeperDeployed = async (hot) =>
        (
          await this.pool.firstAnswer("sweeper code", (i) =>
            (this.writer(i).sweeperDeployed as (h: string) => Promise<boolean>)(hot),
          )
        ).value;
    if (writers.every((w) => w.resources)) {
      const first = <T>(what: string, fn: (r: ResourceReads) => Promise<T>) =>
        this.pool
          .firstAnswer(what, (i) => fn(this.writer(i).resources as ResourceReads))
          .then((a) => a.value);
      this.resources = {
        transferEnergy: (from, to, amount) =>
          first("transfer energy", (r) => r.transferEnergy(from, to, amount)),
        bandwidthBurn: (from) => first("bandwidth burn", (r) => r.bandwidthBurn(from)),
        accountExists: (address) => first("account", (r) => r.accountExists(address)),
        delegatable: (owner, asset) => first("delegatable stake", (r) => r.delegatable(owner, asset)),
        stakeFor: (owner, asset, amount) => first("stake for", (r) => r.stakeFor(owner, asset, amount)),
        staked: (owner) => first("staked", (r) => r.staked(owner)),
      };
    }
  }

  /**
   * EVM (issue #39): from the best provider. It only decides whether a batch waits for a deployment;
   * a wrong "deployed" mines a batch that moves nothing (its items fail and are planned again).
   */
  sweeperDeployed?(hotWallet: string): Promise<boolean>;

  private writer(index: number): SignedChainWriter {
    return this.writers[index] as SignedChainWriter;
  }

  nativeBalance(address: string): Promise<bigint> {
    return this.secondHighest("native balance", (w) => w.nativeBalance(address));
  }

  tokenBalance(address: string): Promise<bigint> {
    return this.secondHighest("token balance", (w) => w.tokenBalance(address));
  }

  /** EVM: the nonce a quorum of providers has reached; TRON: null. */
  async minedNonce(address: string): Promise<number | null> {
    const q = this.pool.quorum();
    const answers = await this.pool.gather(
      (i) => this.writer(i).minedNonce(address),
      (a) => values(a).length >= q,
    );
    const nonces = values(answers);
    if (nonces.length > 0 && nonces.every((n) => n === null)) return null;
    const sorted = nonces.filter((n): n is number => n !== null).sort((a, b) => b - a);
    const agreed = sorted[q - 1];
    if (agreed === undefined)
      throw unavailable(this.network, `nonce of ${address} (${q} providers must answer)`, answers);
    return agreed;
  }

  async tokenTransferCost(from: string, to: string, amount: bigint): Promise<bigint> {
    return (
      await this.pool.firstAnswer("transfer cost", (i) => this.writer(i).tokenTransferCost(from, to, amount))
    ).value;
  }

  async prepare(spec: TransferSpec, options: PrepareOptions): Promise<PreparedTransfer> {
    try {
      return (await this.pool.firstAnswer("prepare", (i) => this.writer(i).prepare(spec, options))).value;
    } catch (err) {
      if (!(err instanceof TransferWouldFailError)) throw err;
      // Refusing it fails the withdrawal (its hold is released): a quorum must say it would fail.
      const q = this.pool.quorum();
      const answers = await this.pool.gather((i) => this.writer(i).prepare(spec, options));
      const failing = answers.filter((a) => "error" in a && a.error instanceof TransferWouldFailError);
      if (failing.length >= q) throw err;
      const built = answers.flatMap((a) => ("value" in a ? [a] : []));
      if (built.length > 0) {
        for (const f of failing)
          this.pool.disagreed(f.index, {
            subject: "would-fail",
            detail: `said a transfer of ${spec.amount} to ${spec.to} would fail; ${built.length} other(s) built it`,
            confirmers: built.map((b) => b.provider),
          });
      }
      throw new ChainUnavailableError(
        this.network,
        `providers disagree whether the transfer would fail (${failing.length} of ${answers.length} say so, ${q} needed); it waits`,
      );
    }
  }

  /** To every provider: accepted when one accepts (the same bytes again are "already known"). */
  async broadcast(raw: string): Promise<BroadcastResult> {
    const answers = await this.pool.gather(
      (i) => this.writer(i).broadcast(raw),
      (a) => values(a).some((r) => r.accepted),
    );
    const results = values(answers);
    if (results.some((r) => r.accepted)) return { accepted: true };
    const refused = results[0];
    if (refused) return refused;
    throw unavailable(this.network, "broadcast", answers);
  }

  async check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck> {
    const q = this.pool.quorum();
    const answers = await this.pool.gather(
      (i) => this.writer(i).check(hash, expected),
      (a) => quorumGroup(a, q) !== null,
    );
    const checks = answers.flatMap((a) =>
      "value" in a ? [{ index: a.index, provider: a.provider, check: a.value }] : [],
    );
    const mined = checks.flatMap((c) => (isMined(c.check) ? [{ ...c, check: c.check }] : []));
    const group = quorumGroup(answers, q);
    if (group) {
      const agreed = group[0] as Mined;
      const key = minedKey(agreed);
      const confirmers = checks
        .filter((c) => isMined(c.check) && minedKey(c.check) === key)
        .map((c) => c.provider);
      for (const c of mined)
        if (minedKey(c.check) !== key)
          this.pool.disagreed(c.index, {
            subject: "outcome",
            detail: `${hash}: ${describe(c.check)}, ${confirmers.length} others ${describe(agreed)}`,
            confirmers,
            block: c.check.blockNumber,
          });
      // The depth every provider of the quorum has reached.
      const depths = group.map((g) => g.confirmations).sort((a, b) => b - a);
      return { ...agreed, confirmations: depths[q - 1] ?? 0 };
    }
    if (mined.length > 0) {
      const keys = new Set(mined.map((c) => minedKey(c.check)));
      const unmined = checks.filter((c) => !isMined(c.check));
      const contradiction = keys.size > 1;
      const deep = mined.some((c) => c.check.confirmations > this.pool.maxLagBlocks());
      const alert = contradiction || (deep && unmined.length > 0);
      const said = checks.map((c) => `${c.provider}: ${describe(c.check)}`).join("; ");
      if (alert) {
        // Each answer fewer providers gave than the most common one (all of them on a tie) is
        // counted against its provider: with two providers nobody can tell which one lies.
        const count = new Map<string, number>();
        for (const c of checks) count.set(answerKey(c.check), (count.get(answerKey(c.check)) ?? 0) + 1);
        const most = Math.max(...count.values());
        const tie = [...count.values()].filter((n) => n === most).length > 1;
        for (const c of checks)
          if (tie || (count.get(answerKey(c.check)) ?? 0) < most)
            this.pool.disagreed(c.index, {
              subject: "outcome",
              detail: `${hash}: ${describe(c.check)}`,
              confirmers: checks.filter((o) => o.index !== c.index).map((o) => o.provider),
              ...(isMined(c.check) ? { block: c.check.blockNumber } : {}),
            });
      }
      return {
        state: "disputed",
        alert,
        reason: `providers disagree on ${hash} (${said}); ${q} must agree`,
      };
    }
    if (checks.length < q)
      throw unavailable(this.network, `receipt of ${hash} (${q} providers must answer)`, answers);
    if (checks.some((c) => c.check.state === "pending")) return { state: "pending" };
    // "Missing" lets a TRON transfer past its expiry be replaced by a new one: every configured
    // provider must say so. One in back-off was not asked and may hold the receipt (outside review
    // of #34: with it down, a liar and a provider behind made a paid transfer look dropped).
    // Until then it is pending: nothing is re-signed (an EVM replacement keeps its nonce anyway).
    if (checks.length < this.writers.length) return { state: "pending" };
    return { state: "missing" };
  }

  /** The second highest answer: two providers report at least this much (one cannot inflate it). */
  private async secondHighest(what: string, fn: (w: SignedChainWriter) => Promise<bigint>): Promise<bigint> {
    const answers = await this.pool.gather(
      (i) => fn(this.writer(i)),
      (a) => values(a).length >= Math.min(3, this.writers.length),
    );
    const sorted = values(answers).sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
    const second = sorted[1];
    if (second === undefined) throw unavailable(this.network, `${what} (two providers must answer)`, answers);
    return second;
  }
}

/**
 * The write side of a chain: its one writer, or (several providers) the pooled writer over the
 * chain's `ProviderPool`.
 */
export function pooledWriter(adapter: ChainAdapter, writers: SignedChainWriter[]): SignedChainWriter {
  const [first] = writers;
  if (!first) throw new Error("no chain writer");
  if (writers.length === 1) return first;
  if (!(adapter instanceof ProviderPool))
    throw new Error("several chain writers need the chain's provider pool");
  return new PooledChainWriter(adapter, writers);
}

type Mined = Extract<TransferCheck, { state: "success" | "failed" }>;

function isMined(c: TransferCheck): c is Mined {
  return c.state === "success" || c.state === "failed";
}

// A batched sweep's answer includes which items it delivered (issue #39): providers must agree on it.
const minedKey = (c: Mined) =>
  `${c.state}@${c.blockNumber}${c.state === "success" && c.delivered ? `:${c.delivered.map(Number).join("")}` : ""}`;
const answerKey = (c: TransferCheck) => (isMined(c) ? minedKey(c) : c.state);

function describe(c: TransferCheck): string {
  if (c.state === "success") return `success in block ${c.blockNumber}`;
  if (c.state === "failed") return `failed in block ${c.blockNumber} (${c.reason})`;
  return c.state;
}

/** The mined answers a quorum gave alike (same result, same block), or null. */
function quorumGroup(answers: PoolAnswer<TransferCheck>[], q: number): Mined[] | null {
  const groups = new Map<string, Mined[]>();
  for (const a of answers) {
    if (!("value" in a) || !isMined(a.value)) continue;
    const k = minedKey(a.value);
    groups.set(k, [...(groups.get(k) ?? []), a.value]);
  }
  for (const g of groups.values()) if (g.length >= q) return g;
  return null;
}

function values<T>(answers: PoolAnswer<T>[]): T[] {
  return answers.flatMap((a) => ("value" in a ? [a.value] : []));
}

function unavailable<T>(network: SignedChainWriter["network"], what: string, answers: PoolAnswer<T>[]) {
  const cause = answers.flatMap((a) => ("error" in a ? [a.error] : []))[0];
  return new ChainUnavailableError(network, `${what}: not enough providers answered`, { cause });
}
