import { constants } from "node:fs";
import { open, rename } from "node:fs/promises";
import { dirname } from "node:path";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import { Mutex } from "../lib/mutex.js";
import { ensurePrivateDir } from "../lib/private-files.js";
import type { Logger } from "../observability/logger.js";
import {
  type Registry,
  registerSignerOutflowMetrics,
  type SignerOutflowMetrics,
} from "../observability/metrics.js";
import { SignerRejectedError } from "./protocol.js";

/**
 * The signer's outflow cap (docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11, issue #34 finding 1) and its memory of what it signed.
 *
 * The evidence checks (`evidence.ts`) read the database; whoever controls the database (or the api
 * and worker hosts that write it) can forge evidence. The cap bounds what such a compromise takes
 * before a person reacts, so it is counted where that compromise cannot reach: in this process,
 * from the transfers it signed itself, and kept in a private file of its `DATA_DIR` (written and
 * synced before the signature leaves, so a crash or a restart never resets it). Counted: withdrawals
 * and payouts (money leaving to third parties). Not counted: sweeps and gas top-ups (between our own
 * addresses) and cold forwards (only to the cold wallet of the signer's own configuration).
 *
 * Per intent it remembers the first transfer signed: a later signature for the same intent must be
 * the same transfer (destination, amount) and, on EVM, the same nonce — a replacement with higher
 * fees, of which only one can be mined, counted once. Another nonce is a second payment: refused.
 * TRON has no nonce: a new transaction for an intent (the sender signs one after the last expired
 * unmined) is counted again — the signer cannot see that the first was dropped, so it assumes it
 * was not; the same transaction (same txID) asked for again is not.
 *
 * Windows slide: the last hour and the last 24 hours, per (currency type, environment); the limits
 * are per currency type (each environment has its own budget: sandbox moves test money). A transfer
 * that would take a window past its limit is refused (the sender keeps the intent and retries),
 * logged as an alert and counted in `stablegate_signer_outflow_cap_refusals_total`.
 */

export type OutflowWindow = "hour" | "day";
export const WINDOW_MS: Record<OutflowWindow, number> = { hour: 3_600_000, day: 86_400_000 };
/** Records are kept this long (the day window, and the memory of replacements beyond it). */
const KEEP_MS = 2 * WINDOW_MS.day;

/**
 * Limits in token base units per currency type; a window without limits (null) is not capped; in a
 * window with limits, a currency type they leave out may send nothing (0).
 */
export interface OutflowLimits {
  perHour: Partial<Record<CurrencyType, bigint>> | null;
  perDay: Partial<Record<CurrencyType, bigint>> | null;
}

/** One signature the cap counted. */
interface Entry {
  intent: string;
  network: CurrencyType;
  environment: Environment;
  to: string;
  amount: bigint;
  /** EVM nonce; null on TRON. */
  nonce: number | null;
  /** TRON txID; null on EVM. */
  tx: string | null;
  /** ms since the epoch, the signer's clock. */
  at: number;
}

export interface Outflow {
  intentId: string;
  network: CurrencyType;
  environment: Environment;
  to: string;
  amount: bigint;
  nonce: number | null;
  tx: string | null;
}

export interface OutflowGuardOptions {
  limits: OutflowLimits;
  /** The private record (`DATA_DIR/signer-outflow.json`); none: in memory only (tests). */
  file?: string;
  clock: Clock;
  logger: Logger;
  /** Where the metrics are registered (serve's registry, or the signer role's own). */
  registry?: Registry;
}

export const OUTFLOW_FILE = "signer-outflow.json";

export class OutflowGuard {
  private readonly mutex = new Mutex();
  private readonly metrics: SignerOutflowMetrics | null;

  private constructor(
    private readonly o: OutflowGuardOptions,
    private entries: Entry[],
  ) {
    this.metrics = o.registry ? registerSignerOutflowMetrics(o.registry, () => this.snapshot()) : null;
  }

  /** A guard without a file (tests, and signers built without one): counts and remembers in memory. */
  static inMemory(o: Omit<OutflowGuardOptions, "file">): OutflowGuard {
    return new OutflowGuard(o, []);
  }

  /** Opens the record (a missing file is an empty one; an unreadable one is an error: no silent reset). */
  static async open(o: OutflowGuardOptions): Promise<OutflowGuard> {
    if (o.file) await ensurePrivateDir(dirname(o.file));
    return new OutflowGuard(o, o.file ? await readRecord(o.file) : []);
  }

  get limits(): OutflowLimits {
    return this.o.limits;
  }

  /**
   * Admits `t` before it is signed, or throws `SignerRejectedError` (logged). A new transfer is
   * counted and the record written before this resolves.
   */
  async admit(t: Outflow): Promise<void> {
    const release = await this.mutex.acquire();
    try {
      const now = this.o.clock.now();
      this.entries = this.entries.filter((e) => now - e.at < KEEP_MS);
      const earlier = this.entries.filter((e) => e.intent === t.intentId);
      const first = earlier[0];
      if (first) {
        if (first.to !== t.to || first.amount !== t.amount || first.network !== t.network)
          this.refuse(t, "this intent was signed for another transfer");
        if (t.nonce !== null) {
          if (first.nonce !== t.nonce)
            this.refuse(t, `this intent was signed at nonce ${first.nonce}, not another nonce`);
          return; // a replacement at the same nonce: only one of them can be mined
        }
        if (earlier.some((e) => e.tx === t.tx)) return; // the same TRON transaction again
      }
      for (const window of ["hour", "day"] as const) {
        const limits = window === "hour" ? this.o.limits.perHour : this.o.limits.perDay;
        if (limits === null) continue;
        const limit = limits[t.network] ?? 0n;
        const used = this.total(t.network, t.environment, window, now);
        if (used + t.amount > limit) {
          this.metrics?.capRefusals.inc({ network: t.network, environment: t.environment, window });
          this.o.logger.error(
            {
              alert: "signer_outflow_cap",
              network: t.network,
              environment: t.environment,
              window,
              limit: limit.toString(),
              signed: used.toString(),
              amount: t.amount.toString(),
              intentId: t.intentId,
              to: t.to,
            },
            `ALERT: the signer's outflow cap per ${window} is reached: it signs no more withdrawals or payouts of this currency type until the window frees (raise SIGNER_MAX_OUTFLOW_PER_${window === "hour" ? "HOUR" : "DAY"} only after checking what was sent)`,
          );
          throw new SignerRejectedError(
            `policy: outflow cap per ${window} reached for ${t.network} (${t.environment}): ${used} of ${limit} signed, ${t.amount} more refused`,
          );
        }
      }
      const next = [...this.entries, { ...t, intent: t.intentId, at: now }];
      if (this.o.file) await writeRecord(this.o.file, next);
      this.entries = next;
    } finally {
      release();
    }
  }

  /** Base units counted in `window` up to `now`. */
  total(
    network: CurrencyType,
    environment: Environment,
    window: OutflowWindow,
    now = this.o.clock.now(),
  ): bigint {
    let sum = 0n;
    for (const e of this.entries)
      if (e.network === network && e.environment === environment && now - e.at < WINDOW_MS[window])
        sum += e.amount;
    return sum;
  }

  /** Every (currency type, environment, window): what was signed in it, and its limit. */
  private snapshot() {
    const now = this.o.clock.now();
    return CURRENCY_TYPES.flatMap((network) =>
      ENVIRONMENTS.flatMap((environment) =>
        (["hour", "day"] as const).map((window) => ({
          network,
          environment,
          window,
          signed: this.total(network, environment, window, now),
          limit: limitOf(window === "hour" ? this.o.limits.perHour : this.o.limits.perDay, network),
        })),
      ),
    );
  }

  private refuse(t: Outflow, reason: string): never {
    this.o.logger.warn(
      {
        alert: "signer_policy_refused",
        network: t.network,
        environment: t.environment,
        intentId: t.intentId,
        to: t.to,
        amount: t.amount.toString(),
        reason,
      },
      "signer refused a transfer outside its policy",
    );
    throw new SignerRejectedError(`policy: ${reason}`);
  }
}

interface StoredEntry {
  intent: string;
  network: CurrencyType;
  environment: Environment;
  to: string;
  amount: string;
  nonce: number | null;
  tx: string | null;
  at: number;
}

async function readRecord(file: string): Promise<Entry[]> {
  let text: string;
  try {
    const fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = await fh.readFile("utf8");
    } finally {
      await fh.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new Error(`the signer's outflow record ${file} cannot be read: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as { version?: unknown; entries?: StoredEntry[] };
    if (parsed.version !== 1 || !Array.isArray(parsed.entries)) throw new Error("not a version 1 record");
    return parsed.entries.map((e) => {
      if (typeof e.intent !== "string" || typeof e.at !== "number" || !/^\d+$/.test(e.amount))
        throw new Error("an entry is malformed");
      return { ...e, amount: BigInt(e.amount) };
    });
  } catch (err) {
    // Never start from zero silently: that would reset the cap. The operator decides.
    throw new Error(
      `the signer's outflow record ${file} is corrupt (${(err as Error).message}); ` +
        "check what was signed in the last day before moving it away",
    );
  }
}

/** Written to a private temporary file, synced, then renamed over the record (never half-written). */
async function writeRecord(file: string, entries: Entry[]): Promise<void> {
  const stored: StoredEntry[] = entries.map((e) => ({ ...e, amount: e.amount.toString() }));
  const tmp = `${file}.tmp`;
  const fh = await open(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await fh.writeFile(JSON.stringify({ version: 1, entries: stored }));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}

/** The limit of a currency type in a window: null when the window is not capped, else 0 when unnamed. */
function limitOf(limits: OutflowLimits["perHour"], network: CurrencyType): bigint | null {
  return limits === null ? null : (limits[network] ?? 0n);
}
