import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import {
  type BlockHeader,
  type ChainAdapter,
  compareTransfers,
  type NamedFreezeEvent,
  safeBlockFromHead,
  type TokenTransfer,
  type TokenTransferQuery,
} from "./adapter.js";
import { ChainUnavailableError, InvalidAddressError } from "./errors.js";
import { InsufficientFundsError, TransferWouldFailError } from "./writer.js";

/**
 * Several providers of one chain behind one `ChainAdapter` (issue #22): the watcher, the sweeper and
 * the routes see one adapter, whatever the number of endpoints.
 *
 * - **Health**: each provider's failures (with exponential back-off: it is not asked again before
 *   its back-off ends), latency (moving average) and head; every `probeIntervalMs` the heads of all
 *   providers are read, and one more than `maxLagBlocks` behind the best head is *lagging*.
 * - **Failover**: a read goes to the best healthy provider (configured order, then latency); on a
 *   failure, to the next.
 * - **No single provider is trusted for money, both ways**: a range counts when two providers
 *   whose heads have reached it answered for it (an empty answer too: nobody hides a payment
 *   alone), and a transfer when a majority of those that answered report it (same transaction,
 *   log, block hash, sender, recipient and amount). The minority against a decided majority is a
 *   *disagreement*: counted, reported, set aside as a suspect for `suspectMs`. Undecided, the
 *   query fails (`ChainUnavailableError`) so that the watcher keeps its cursor and asks again —
 *   nothing is credited, nor skipped, on one word (`tokenTransfers`, `decideTransfers`).
 *
 * - **Every other read that decides where money goes is agreed too** (issue #34): the head is the
 *   second highest of the heads read together (two providers have reached it: one liar cannot
 *   move it forward), a block's hash and timestamp count when two providers give the same ones,
 *   and the write side (`pooled-writer.ts`) takes a sent transfer's outcome, confirmations and
 *   the account's nonce from a quorum (a majority of the configured providers, at least two).
 *   What they do not agree on waits (`ChainUnavailableError`, or a `disputed` check) and is
 *   reported as a disagreement.
 *
 * With one provider configured nothing of this applies (the network module's adapter is used
 * as is).
 */

export interface PoolProvider {
  /** `p<n> <host>`: never a path or query (they may carry API keys). */
  name: string;
  adapter: ChainAdapter;
}

/** What providers disagreed on: deposits' transfers, or a read the write side or the watcher decides by. */
export type DisagreementSubject =
  | "transfers"
  | "outcome"
  | "head"
  | "block"
  | "nonce"
  | "balance"
  | "would-fail";

export interface ProviderPoolOptions {
  /** A provider more blocks than this behind the best known head is lagging. Default 10. */
  maxLagBlocks?: number;
  /** How often the heads of all providers are read. Default 15 000. */
  probeIntervalMs?: number;
  /** Back-off after the first failure, doubled on each next one, capped at `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** How long a provider whose transfers nobody confirmed is not asked. Default 300 000. */
  suspectMs?: number;
  now?: () => number;
  /** Told of each disagreement (the runtime logs and counts it). */
  onDisagreement?: (event: Disagreement) => void;
  /** Told the providers' health after each probe and each disagreement (kept for `/readyz`). */
  onHealth?: (health: ProviderHealth[]) => void;
}

export interface Disagreement {
  network: CurrencyType;
  /** Set by the registry (the pool itself does not know it). */
  environment?: Environment;
  provider: string;
  confirmers: string[];
  fromBlock: number;
  toBlock: number;
  unconfirmed: TokenTransfer[];
  /** "transfers" when absent (the deposit cross-check). */
  subject?: DisagreementSubject;
  /** Other subjects: what this provider said against the others (a hash, a state, a number). */
  detail?: string;
}

export type ProviderCondition = "ok" | "down" | "lagging" | "suspect";

export interface ProviderHealth {
  name: string;
  condition: ProviderCondition;
  head: number | null;
  latencyMs: number | null;
  failures: number;
  disagreements: number;
  lastError: string | null;
}

interface State {
  name: string;
  adapter: ChainAdapter;
  order: number;
  failures: number;
  downUntil: number;
  suspectUntil: number;
  latencyMs: number | null;
  head: number | null;
  /** Set by the last probe: more than `maxLagBlocks` behind the best head read in the same round. */
  lagging: boolean;
  disagreements: number;
  lastError: string | null;
}

const transferKey = (t: TokenTransfer) =>
  `${t.txHash.toLowerCase()}:${t.logIndex}:${t.blockHash.toLowerCase()}:${t.from}:${t.to}:${t.amount}:${t.dust ?? 0n}`;

export class ProviderPool implements ChainAdapter {
  readonly network: CurrencyType;
  private readonly states: State[];
  private readonly maxLag: number;
  private readonly probeIntervalMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly suspectMs: number;
  private readonly now: () => number;
  private readonly onDisagreement: ((event: Disagreement) => void) | undefined;
  private readonly onHealth: ((health: ProviderHealth[]) => void) | undefined;
  private lastProbe = Number.NEGATIVE_INFINITY;

  constructor(network: CurrencyType, providers: PoolProvider[], options: ProviderPoolOptions = {}) {
    if (providers.length < 2) throw new Error("a provider pool needs at least two providers");
    this.network = network;
    this.states = providers.map((p, order) => ({
      name: p.name,
      adapter: p.adapter,
      order,
      failures: 0,
      downUntil: 0,
      suspectUntil: 0,
      latencyMs: null,
      head: null,
      lagging: false,
      disagreements: 0,
      lastError: null,
    }));
    this.maxLag = options.maxLagBlocks ?? 10;
    this.probeIntervalMs = options.probeIntervalMs ?? 15_000;
    this.backoffMs = options.backoffMs ?? 1_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 60_000;
    this.suspectMs = options.suspectMs ?? 300_000;
    this.now = options.now ?? Date.now;
    this.onDisagreement = options.onDisagreement;
    this.onHealth = options.onHealth;
  }

  /** Each provider as the pool sees it now (for `/readyz` and `/metrics`). */
  health(): ProviderHealth[] {
    const now = this.now();
    return this.states.map((s) => ({
      name: s.name,
      condition: this.condition(s, now),
      head: s.head,
      latencyMs: s.latencyMs === null ? null : Math.round(s.latencyMs),
      failures: s.failures,
      disagreements: s.disagreements,
      lastError: s.lastError,
    }));
  }

  /** Reads every provider's head now (readiness; the periodic probe does the same in the background). */
  async probe(): Promise<void> {
    this.lastProbe = this.now();
    await this.probeRound(this.states);
  }

  /**
   * Reads the heads of `states` together and marks as lagging each one more than `maxLagBlocks`
   * behind the best head of the same round (heads read at different times are not compared: on a
   * fast chain the last one read would make the others look behind).
   */
  private async probeRound(states: State[]): Promise<void> {
    const heads = await Promise.all(
      states.map((s) =>
        this.headOf(s).then(
          (head) => ({ s, head }),
          () => null,
        ),
      ),
    );
    const answered = heads.filter((x): x is { s: State; head: number } => x !== null);
    // Against the second highest head when three or more answered: one provider inventing a
    // head ahead of the chain must not make every honest one "lagging" (outside review of #34).
    const sorted = answered.map((x) => x.head).sort((a, b) => b - a);
    const best = (sorted.length >= 3 ? sorted[1] : sorted[0]) ?? 0;
    for (const { s, head } of answered) s.lagging = best - head > this.maxLag;
    this.onHealth?.(this.health());
  }

  /**
   * How many providers must give the same answer for a read that decides where money goes: a
   * majority of the configured providers, and at least two (issue #34).
   */
  quorum(): number {
    return Math.max(2, Math.floor(this.states.length / 2) + 1);
  }

  /** A provider more blocks than this behind the best head is lagging (and a receipt this deep is no news). */
  maxLagBlocks(): number {
    return this.maxLag;
  }

  /** The providers' names, in configured order. */
  names(): string[] {
    return this.states.map((s) => s.name);
  }

  /**
   * Asks every provider not in back-off (or every one, when all are) at once: `fn` gets the
   * provider's configured position. Resolves when all have answered or failed, or earlier once
   * `enough(answers)` holds and `graceMs` more passed (a hanging provider does not hold the
   * decision; it is marked down by its own timeout). A failure is an answer with `error` (the
   * caller judges it: a provider fault, or a transfer that would fail). `only`: just these
   * providers (configured positions).
   */
  async gather<T>(
    fn: (index: number) => Promise<T>,
    enough: (answers: PoolAnswer<T>[]) => boolean = () => false,
    graceMs = 300,
    only?: readonly number[],
  ): Promise<PoolAnswer<T>[]> {
    const now = this.now();
    const candidates = only ? this.states.filter((s) => only.includes(s.order)) : this.states;
    const up = candidates.filter((s) => s.downUntil <= now);
    const asked = up.length > 0 ? up : candidates;
    const answers: PoolAnswer<T>[] = [];
    return new Promise<PoolAnswer<T>[]>((resolve) => {
      let pending = asked.length;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        resolve([...answers]);
      };
      const settled = () => {
        pending -= 1;
        if (pending === 0) return finish();
        if (!timer && enough(answers)) timer = setTimeout(finish, graceMs);
      };
      for (const s of asked) {
        this.attemptWith(s, () => fn(s.order)).then(
          (value) => {
            if (!done) answers.push({ provider: s.name, index: s.order, value });
            settled();
          },
          (err: unknown) => {
            if (!done) answers.push({ provider: s.name, index: s.order, error: err });
            settled();
          },
        );
      }
    });
  }

  /**
   * A provider gave an answer the others did not (issue #34: a sent transfer's outcome, a head, a
   * block, a nonce): counted on it, set aside as a suspect, reported.
   */
  disagreed(
    index: number,
    event: {
      subject: DisagreementSubject;
      detail: string;
      confirmers: string[];
      /** The block the answer was about, or the range of a transfers read. */
      block?: number;
      range?: { fromBlock: number; toBlock: number };
      /** A transfers read: what the provider reported that no majority did. */
      unconfirmed?: TokenTransfer[];
    },
  ): void {
    const s = this.states[index];
    if (!s) return;
    s.disagreements += 1;
    s.suspectUntil = this.now() + this.suspectMs;
    s.lastError = `${event.subject}: ${event.detail}`.slice(0, 200);
    this.onDisagreement?.({
      network: this.network,
      provider: s.name,
      confirmers: event.confirmers,
      fromBlock: event.range?.fromBlock ?? event.block ?? 0,
      toBlock: event.range?.toBlock ?? event.block ?? 0,
      unconfirmed: event.unconfirmed ?? [],
      subject: event.subject,
      detail: event.detail,
    });
    this.onHealth?.(this.health());
  }

  validateAddress(s: string): boolean {
    return this.states[0]?.adapter.validateAddress(s) ?? false;
  }

  normalizeAddress(s: string): string {
    const first = this.states[0];
    if (!first) throw new InvalidAddressError(this.network, s);
    return first.adapter.normalizeAddress(s);
  }

  /**
   * The head two providers have reached (issue #34): the heads of all providers read together,
   * the second highest kept, so a provider that invents blocks ahead of the chain moves nothing
   * (one that lags only delays, and the probe marks it lagging). With fewer than two answers the
   * head is not known.
   */
  async headBlock(): Promise<number> {
    this.probeInBackground();
    const read = async (only?: number[]) => {
      const answers = await this.gather(
        (i) => (this.states[i] as State).adapter.headBlock(),
        (a) => a.filter((x) => "value" in x).length >= 2,
        300,
        only,
      );
      for (const a of answers) if ("value" in a) (this.states[a.index] as State).head = a.value;
      return answers;
    };
    // The two best providers first; everyone when they do not answer alike (within the lag).
    const pair = this.bestPair();
    if (pair) {
      const heads = (await read(pair)).flatMap((a) => ("value" in a ? [a.value] : []));
      const [x, y] = heads;
      if (x !== undefined && y !== undefined && Math.abs(x - y) <= this.maxLag) return Math.min(x, y);
    }
    const answers = await read();
    const heads = answers
      .flatMap((a) => ("value" in a ? [{ index: a.index, head: a.value as number }] : []))
      .sort((a, b) => b.head - a.head);
    const second = heads[1];
    if (!second) {
      const errors = answers.flatMap((a) => ("error" in a ? [a.error] : []));
      throw this.unavailable("head (two providers must answer)", errors[0]);
    }
    const top = heads[0] as { index: number; head: number };
    if (top.head - second.head > this.maxLag) {
      // Far ahead of every other: a chain nobody else has.
      this.disagreed(top.index, {
        subject: "head",
        detail: `head ${top.head}, others at most ${second.head}`,
        confirmers: heads.slice(1).map((h) => this.states[h.index]?.name ?? ""),
        block: top.head,
      });
    }
    return second.head;
  }

  /** One provider's head, remembered (lag is measured against the best one). */
  private async headOf(s: State): Promise<number> {
    const head = await this.attempt(s, (a) => a.headBlock());
    s.head = head;
    return head;
  }

  async safeBlock(confirmations: number): Promise<number> {
    return safeBlockFromHead(await this.headBlock(), confirmations);
  }

  async blockHash(n: number): Promise<string | null> {
    return this.agreedBlock(
      n,
      (a) => a.blockHash(n),
      (h) => h ?? "none",
    );
  }

  /** A block's hash and timestamp as two providers give them (the on-time rule reads its time). */
  async blockHeader(n: number): Promise<BlockHeader | null> {
    return this.agreedBlock(
      n,
      (a) => a.blockHeader(n),
      (h) => (h ? `${h.hash}@${h.timestamp}` : "none"),
    );
  }

  /**
   * A block read answered by two providers alike (issue #34). When no two agree once all have
   * answered, each provider alone with its answer while two or more others agree is a
   * disagreement; the read fails (`ChainUnavailableError`) and the watcher asks again.
   */
  private async agreedBlock<T>(
    n: number,
    fn: (a: ChainAdapter) => Promise<T>,
    key: (v: T) => string,
  ): Promise<T> {
    const agreeing = (answers: PoolAnswer<T>[]) => {
      const counts = new Map<string, number>();
      for (const a of answers) {
        if (!("value" in a)) continue;
        const k = key(a.value as T);
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
      const best = [...counts.entries()].sort((x, y) => y[1] - x[1])[0];
      return best && best[1] >= 2 ? best[0] : null;
    };
    const ask = (only?: number[]) =>
      this.gather(
        (i) => fn((this.states[i] as State).adapter),
        (a) => agreeing(a) !== null,
        0,
        only,
      );
    // The two best providers first (the usual case: they agree); everyone when they do not.
    const pair = this.bestPair();
    const first = pair ? await ask(pair) : [];
    const answers = agreeing(first) !== null ? first : await ask();
    const agreed = agreeing(answers);
    const values = answers.flatMap((a) => ("value" in a ? [{ index: a.index, value: a.value as T }] : []));
    if (agreed === "none" && values.some((v) => key(v.value) !== "none")) {
      // "No such block" from two (one behind, one lying) against a provider that has it: a false
      // reorg would roll the cursor back on their word. It waits (outside review of #34).
      throw new ChainUnavailableError(
        this.network,
        `block ${n}: ${values.filter((v) => key(v.value) !== "none").length} provider(s) have it, others not yet; it waits`,
      );
    }
    if (agreed !== null) {
      const confirmers = values
        .filter((v) => key(v.value) === agreed)
        .map((v) => this.states[v.index]?.name ?? "");
      for (const v of values) {
        // A provider without the block yet (null) is behind, not lying.
        if (key(v.value) !== agreed && key(v.value) !== "none" && agreed !== "none")
          this.disagreed(v.index, {
            subject: "block",
            detail: `block ${n}: ${key(v.value)}, others ${agreed}`,
            confirmers,
            block: n,
          });
      }
      return (values.find((v) => key(v.value) === agreed) as { value: T }).value;
    }
    if (values.length >= 2 && values.some((v) => key(v.value) !== "none")) {
      throw new ChainUnavailableError(
        this.network,
        `providers disagree on block ${n} (${values.map((v) => `${this.states[v.index]?.name}: ${key(v.value)}`).join("; ")}); it waits`,
      );
    }
    const errors = answers.flatMap((a) => ("error" in a ? [a.error] : []));
    throw this.unavailable(`block ${n} (two providers must agree)`, errors[0]);
  }

  tokenBalance(address: string): Promise<bigint> {
    return this.read("balance", (a) => a.tokenBalance(address));
  }

  /**
   * Frozen when any of the two best providers that answer says so (issue #40): "not frozen" lets
   * money go to an address or credits a sender, so one provider alone cannot decide it; "frozen"
   * only refuses or holds, which is safe. A single answer counts only when no other provider answers:
   * after the healthy ones, the others (suspect, lagging, in back-off) are asked too, since a
   * provider set aside is still a second word (otherwise the only healthy one, a liar, decides).
   */
  async isFrozen(address: string): Promise<boolean> {
    return (await this.twoAnswers("freeze check", (a) => a.isFrozen(address))).includes(true);
  }

  /**
   * The answers of the two best providers that answer (one when no other does): after the healthy
   * ones, the others (suspect, lagging, in back-off) are asked too, since a provider set aside is
   * still a second word. None answering: the last provider fault.
   */
  private async twoAnswers<T>(what: string, fn: (a: ChainAdapter) => Promise<T>): Promise<T[]> {
    const answers: T[] = [];
    let lastError: unknown;
    const ranked = this.ranked();
    const rest = this.states.filter((s) => !ranked.includes(s)).sort((a, b) => a.downUntil - b.downUntil);
    for (const s of [...ranked, ...rest]) {
      if (answers.length === 2) break;
      try {
        answers.push(await this.attempt(s, fn));
      } catch (err) {
        if (!isProviderFault(err)) throw err;
        lastError = err;
      }
    }
    if (answers.length === 0)
      throw lastError instanceof Error
        ? lastError
        : new ChainUnavailableError(this.network, `${what} failed`);
    return answers;
  }

  /**
   * The freeze events of a range as the two best providers that answer report them, together (issue
   * #40): an event is only a trigger to ask again (`isFrozen`, decided by two), so one provider
   * cannot hide one by leaving it out, and one it invents costs a read. One answer counts when no
   * other provider answers (the periodic checks of the wallets stay the backstop).
   */
  async freezeEvents(range: { fromBlock: number; toBlock: number }): Promise<NamedFreezeEvent[]> {
    const answers = await this.twoAnswers("freeze events", (a) => a.freezeEvents(range));
    const seen = new Set<string>();
    return answers.flat().filter((e) => {
      const key = `${e.blockNumber}:${e.change}:${e.address}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  /**
   * The transfers of a range as the providers agree on them, both ways (issue #34, outside review):
   * a transfer counts when a majority of the providers that answered for the range report it, and
   * a range counts only when two providers at least have answered — an empty answer included, so
   * one provider cannot hide a payment by leaving it out. The two best providers first (the usual
   * case: the same answer, two reads); when they differ, everyone not in back-off. Decided against
   * a majority: a transfer only a minority reported (forged) and one a majority reported but a
   * provider left out (hidden) are disagreements of the minority, which is set aside as a suspect.
   * Undecided (no majority either way, e.g. two providers that differ) or fewer than two answers:
   * the range waits (`ChainUnavailableError`), nobody is blamed, and the watcher asks again.
   */
  async tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]> {
    // Each provider receives its own copy of the addresses (an iterable may be single-use).
    const addresses = query.addresses ? [...query.addresses] : undefined;
    const q = (): TokenTransferQuery => ({ ...query, ...(addresses ? { addresses } : {}) });
    const range = `${query.fromBlock}..${query.toBlock}`;
    /** One provider's transfers, or null when its head has not reached the range (it has no say). */
    const ask = async (index: number): Promise<TokenTransfer[] | null> => {
      const s = this.states[index] as State;
      if (s.head === null || s.head < query.toBlock) {
        // A head read now: a provider that has caught up since the last probe has its say.
        await this.headOf(s).catch(() => undefined);
        if (s.head === null || s.head < query.toBlock) return null;
      }
      return s.adapter.tokenTransfers(q());
    };
    const answered = (answers: PoolAnswer<TokenTransfer[] | null>[]) =>
      answers.flatMap((a) =>
        "value" in a && a.value !== null ? [{ index: a.index, transfers: a.value }] : [],
      );
    const faults = (answers: PoolAnswer<TokenTransfer[] | null>[]) => {
      for (const a of answers) if ("error" in a && !isProviderFault(a.error)) throw a.error;
      return answers.flatMap((a) => ("error" in a ? [a.error] : []));
    };

    const pair = this.ranked()
      .slice(0, 2)
      .map((s) => s.order);
    const first = await this.gather(ask, () => false, 0, pair);
    const firstErrors = faults(first);
    const two = answered(first);
    if (two.length === 2 && sameTransfers(two[0]?.transfers ?? [], two[1]?.transfers ?? []))
      return two[0]?.transfers ?? [];

    // Two differing answers (or fewer than two) decide nothing: the others, not in back-off, are
    // asked too (the pair's answers stand), until three at least decide every transfer.
    const now = this.now();
    const others = this.states
      .filter((s) => !pair.includes(s.order) && s.downUntil <= now)
      .map((s) => s.order);
    const more =
      others.length === 0
        ? []
        : await this.gather(
            ask,
            (a) => {
              const soFar = [...two, ...answered(a)];
              return soFar.length >= 3 && decideTransfers(soFar).undecided === 0;
            },
            300,
            others,
          );
    const errors = [...firstErrors, ...faults(more)];
    const answers = [...two, ...answered(more)];
    if (answers.length < 2) {
      throw new ChainUnavailableError(
        this.network,
        `transfers ${range}: ${answers.length} provider(s) answered for the range, two must; they wait`,
        { cause: errors[0] },
      );
    }
    const decision = decideTransfers(answers);
    const names = (indexes: number[]) => indexes.map((i) => this.states[i]?.name ?? "");
    for (const [index, wrong] of decision.minority) {
      this.disagreed(index, {
        subject: "transfers",
        detail: `reported ${wrong.forged.length} transfer(s) no majority reported; left out ${wrong.hidden.length} a majority reported (blocks ${range})`,
        confirmers: names(answers.map((a) => a.index).filter((i) => i !== index)),
        range: { fromBlock: query.fromBlock, toBlock: query.toBlock },
        unconfirmed: wrong.forged,
      });
    }
    if (decision.undecided > 0) {
      throw new ChainUnavailableError(
        this.network,
        `providers disagree on blocks ${range} (${answers.map((a) => `${this.states[a.index]?.name}: ${a.transfers.length}`).join("; ")}); the transfers wait`,
      );
    }
    return decision.accepted;
  }

  /**
   * The two best healthy providers (configured positions) when more than two are configured and
   * two are healthy: asked first for a read two must agree on; null otherwise (ask everyone).
   */
  private bestPair(): number[] | null {
    if (this.states.length <= 2) return null;
    const now = this.now();
    const usable = this.states.filter((s) => this.condition(s, now) === "ok");
    if (usable.length < 2) return null;
    return usable
      .sort((a, b) => this.rank(a) - this.rank(b))
      .slice(0, 2)
      .map((s) => s.order);
  }

  /** The providers to ask, best first: healthy ones by configured order then latency; if none, every one. */
  private ranked(): State[] {
    const now = this.now();
    const usable = this.states.filter((s) => this.condition(s, now) === "ok");
    const pool = usable.length > 0 ? usable : [...this.states].sort((a, b) => a.downUntil - b.downUntil);
    return usable.length > 0 ? pool.sort((a, b) => this.rank(a) - this.rank(b)) : pool;
  }

  /** Configured order first; a provider much slower than the others (over 1 s more) goes behind them. */
  private rank(s: State): number {
    return s.order + (s.latencyMs !== null && s.latencyMs > 1_000 ? 1_000 : 0);
  }

  private condition(s: State, now: number): ProviderCondition {
    if (s.downUntil > now) return "down";
    if (s.suspectUntil > now) return "suspect";
    return s.lagging ? "lagging" : "ok";
  }

  private async read<T>(what: string, fn: (a: ChainAdapter) => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (const s of this.ranked()) {
      try {
        return await this.attempt(s, fn);
      } catch (err) {
        if (!isProviderFault(err)) throw err;
        lastError = err;
      }
    }
    throw this.unavailable(what, lastError);
  }

  /** One call to one provider, its outcome recorded. */
  private attempt<T>(s: State, fn: (a: ChainAdapter) => Promise<T>): Promise<T> {
    return this.attemptWith(s, () => fn(s.adapter));
  }

  /**
   * Failover for the write side (`pooled-writer.ts`): `fn` with each provider's position, best
   * first, until one answers.
   */
  async firstAnswer<T>(
    what: string,
    fn: (index: number) => Promise<T>,
  ): Promise<{ index: number; value: T }> {
    let lastError: unknown;
    for (const s of this.ranked()) {
      try {
        return { index: s.order, value: await this.attemptWith(s, () => fn(s.order)) };
      } catch (err) {
        if (!isProviderFault(err)) throw err;
        lastError = err;
      }
    }
    throw this.unavailable(what, lastError);
  }

  private async attemptWith<T>(s: State, fn: () => Promise<T>): Promise<T> {
    const started = this.now();
    try {
      const value = await fn();
      const ms = this.now() - started;
      s.latencyMs = s.latencyMs === null ? ms : s.latencyMs * 0.8 + ms * 0.2;
      s.failures = 0;
      s.downUntil = 0;
      return value;
    } catch (err) {
      if (isProviderFault(err)) {
        s.failures += 1;
        s.downUntil = this.now() + Math.min(this.maxBackoffMs, this.backoffMs * 2 ** (s.failures - 1));
        s.lastError = err instanceof Error ? err.message.slice(0, 200) : String(err);
      }
      throw err;
    }
  }

  /** Every `probeIntervalMs`, the heads of all providers not in back-off, without waiting for them. */
  private probeInBackground(): void {
    if (this.now() - this.lastProbe < this.probeIntervalMs) return;
    this.lastProbe = this.now();
    const now = this.now();
    void this.probeRound(this.states.filter((s) => s.downUntil <= now));
  }

  private unavailable(what: string, cause: unknown): ChainUnavailableError {
    return new ChainUnavailableError(this.network, `${what}: every provider failed`, { cause });
  }
}

/** One provider's answer to a read asked of all (`ProviderPool.gather`): a value, or its fault. */
export type PoolAnswer<T> =
  | { provider: string; index: number; value: T }
  | { provider: string; index: number; error: unknown };

/**
 * Whether a failure is the provider's (try another) rather than the caller's (a bad address, a bad
 * range) or the transfer's (it would revert, funds are short: those are answers, judged by the caller).
 */
function isProviderFault(err: unknown): boolean {
  return (
    !(err instanceof InvalidAddressError) &&
    !(err instanceof RangeError) &&
    !(err instanceof TransferWouldFailError) &&
    !(err instanceof InsufficientFundsError)
  );
}

/** Whether two answers hold the same transfers (keys compared as sets). */
function sameTransfers(a: TokenTransfer[], b: TokenTransfer[]): boolean {
  if (a.length !== b.length) return false;
  const keys = new Set(a.map(transferKey));
  return b.every((t) => keys.has(transferKey(t)));
}

/**
 * The majority rule of `ProviderPool.tokenTransfers` over the providers that answered for a range:
 * a transfer reported by a majority (at least two) is accepted; one that a majority did not report
 * is refused; any other is undecided. `minority`: per provider, what it said against a decided
 * majority (reported what was refused: forged; left out what was accepted: hidden).
 */
export function decideTransfers(answers: { index: number; transfers: TokenTransfer[] }[]): {
  accepted: TokenTransfer[];
  undecided: number;
  minority: Map<number, { forged: TokenTransfer[]; hidden: TokenTransfer[] }>;
} {
  const n = answers.length;
  const majority = Math.max(2, Math.floor(n / 2) + 1);
  const reporters = new Map<string, { transfer: TokenTransfer; by: Set<number> }>();
  for (const a of answers)
    for (const t of a.transfers) {
      const k = transferKey(t);
      const entry = reporters.get(k) ?? { transfer: t, by: new Set<number>() };
      entry.by.add(a.index);
      reporters.set(k, entry);
    }
  const accepted: TokenTransfer[] = [];
  const minority = new Map<number, { forged: TokenTransfer[]; hidden: TokenTransfer[] }>();
  const blame = (index: number) => {
    let m = minority.get(index);
    if (!m) {
      m = { forged: [], hidden: [] };
      minority.set(index, m);
    }
    return m;
  };
  let undecided = 0;
  for (const { transfer, by } of reporters.values()) {
    if (by.size >= majority) {
      accepted.push(transfer);
      for (const a of answers) if (!by.has(a.index)) blame(a.index).hidden.push(transfer);
    } else if (n - by.size >= majority) {
      for (const i of by) blame(i).forged.push(transfer);
    } else undecided += 1;
  }
  accepted.sort(compareTransfers);
  return { accepted, undecided, minority };
}
