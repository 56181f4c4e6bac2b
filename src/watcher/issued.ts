import { FIRST_DEPOSIT_INDEX } from "../domain/currency.js";
import type { Logger } from "../observability/logger.js";

/**
 * Is a `watched_addresses` row the gateway's own deposit address? Only when its index is a deposit
 * address's (from `FIRST_DEPOSIT_INDEX`: never a system wallet's) and its address is the gateway's
 * derivation (watch-only keys from the configuration, never from the database) at that index:
 * then the gateway holds its key and sweeps what arrives. The api's database role
 * can insert rows (it allocates sessions' addresses), so a compromised api could record an address
 * of its own and have its own payments credited, then withdrawn from the hot wallet. Such a row is
 * never matched (the deposit watcher and `chain rescan` ask this first) and raises the alert
 * `watched_address_forged` once per address and process.
 */

/** Verified (index → address) pairs kept: a derivation costs about a millisecond. */
const VERIFIED_CACHE = 100_000;

export class IssuedAddresses {
  private readonly verified = new Map<number, string>();
  private readonly forged = new Set<string>();

  constructor(
    /** The gateway's address at a derivation index of this chain. */
    private readonly derive: (index: number) => string,
    private readonly log: Pick<Logger, "error">,
  ) {}

  /** The rows whose address is the gateway's derivation at their index (the others alerted). */
  own<R extends { address: string; index: number }>(rows: readonly R[]): R[] {
    return rows.filter((r) => this.isOwn(r));
  }

  private isOwn(row: { address: string; index: number }): boolean {
    if (this.verified.get(row.index) === row.address) return true;
    let derived: string | null;
    try {
      // A system wallet's index (the hot wallet, 0, is paid by every sweep) is never a deposit
      // address: a row naming one would credit the gateway's own transfers (outside review of #38).
      derived = row.index >= FIRST_DEPOSIT_INDEX ? this.derive(row.index) : null;
    } catch {
      derived = null; // an index no key derives (out of range)
    }
    if (derived === row.address) {
      if (this.verified.size >= VERIFIED_CACHE) this.verified.clear();
      this.verified.set(row.index, row.address);
      return true;
    }
    if (!this.forged.has(row.address)) {
      if (this.forged.size >= VERIFIED_CACHE) this.forged.clear();
      this.forged.add(row.address);
      this.log.error(
        { alert: "watched_address_forged", address: row.address, derivationIndex: row.index },
        "ALERT: a watched address is not the gateway's key at its recorded index; payments to it are not credited",
      );
    }
    return false;
  }
}
