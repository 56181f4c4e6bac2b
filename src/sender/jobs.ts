import { retriedFailureLevel } from "../db/transient.js";
import { Wakeup } from "../lib/wakeup.js";
import type { Runtime } from "../runtime.js";
import { Sweeper } from "../sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../wallet/derivation-path.js";
import type { Job } from "../worker/runner.js";
import { TRANSFER_CHANNEL } from "./intents.js";
import { type FaultPoint, Sender } from "./sender.js";
import { recordSendingWallets } from "./status.js";
import { createChainWriter } from "./writers.js";

export interface SenderJobOptions {
  /**
   * How soon the sender comes back while transfers are due: default 100 ms on the simulator (a
   * sandbox withdrawal completes in well under 1 s), 1 s elsewhere.
   */
  activeMs?: number;
  /**
   * How long it sleeps with nothing due (default 1 s): a transfer request wakes it at once (NOTIFY
   * at commit); the poll finds retries that came due and covers a lost notification.
   */
  idleMs?: number;
  /** Tests: crash injection. */
  fault?: (point: FaultPoint, intentIds: string[]) => void | Promise<void>;
}

/**
 * The sending jobs of every available chain: the sender (sign → broadcast → verify → outcome, and
 * the recovery of whatever a crash left open: its first run after start-up is the start-up
 * recovery), the sweeper (real chains only), and the hot wallet / gas tank balance recorder. A chain that needs a
 * signer (EVM, TRON) gets no sender while the process has none (a `worker` without SIGNER_URL).
 */
export function senderJobs(runtime: Runtime, _instanceId: string, options: SenderJobOptions = {}): Job[] {
  const jobs: Job[] = [];
  const db = runtime.database.db;
  for (const chain of runtime.chains.available()) {
    const { network, environment } = chain;
    const address = (index: number) => runtime.addressDeriver.address(network, environment, index);
    const hotWallet = address(HOT_WALLET_INDEX);
    const writer = createChainWriter(chain, runtime.config, hotWallet);
    if (writer.kind === "signed" && !runtime.signer) {
      runtime.logger.warn(
        { network, environment },
        "no signer (set SIGNER_URL): outgoing transfers of this chain are not sent by this process",
      );
      continue;
    }
    const simulator = chain.kind === "simulator";
    const sender = new Sender({
      db,
      network,
      environment,
      writer,
      signer: runtime.signer,
      address,
      outcomes: runtime.transferOutcomes,
      confirmations: chain.confirmations,
      logger: runtime.logger,
      clock: runtime.clock,
      stuckAfterMs: runtime.config.sending.stuckAfterMs,
      recheckMs: simulator ? 100 : 2_000,
      ...(options.fault ? { fault: options.fault } : {}),
    });
    const sweeper = new Sweeper({
      db,
      network,
      environment,
      writer,
      address,
      threshold:
        network === "USDT-ERC20"
          ? runtime.config.sending.sweepThreshold.erc20
          : runtime.config.sending.sweepThreshold.trc20,
      logger: runtime.logger,
      clock: runtime.clock,
    });
    const activeMs = options.activeMs ?? (simulator ? 100 : 1_000);
    const idleMs = options.idleMs ?? 1_000;
    jobs.push({
      name: `sender:${network}:${environment}`,
      everyMs: activeMs,
      async run(signal) {
        const wake = new Wakeup();
        let unlisten: (() => Promise<void>) | undefined;
        try {
          unlisten = await runtime.database.listen?.(TRANSFER_CHANNEL, () => wake.notify());
        } catch (err) {
          runtime.logger.warn(
            { err, network, environment },
            "transfer LISTEN unavailable; requests are found by polling",
          );
        }
        try {
          while (!signal.aborted) {
            let busy = true;
            try {
              busy = await sender.tick(signal);
            } catch (err) {
              runtime.logger[retriedFailureLevel(err)]({ err, network, environment }, "sender round failed");
            }
            await wake.wait(busy || !unlisten ? activeMs : idleMs, signal);
          }
        } finally {
          await unlisten?.().catch(() => {});
        }
      },
    });
    // The simulator has no gas and its deposit addresses cost nothing to keep: no sweeping there
    // (sandbox payments stay where the customer sent them, which is what sandbox users inspect).
    if (!simulator) {
      jobs.push({
        name: `sweep:${network}:${environment}`,
        everyMs: 10_000,
        run: async () => {
          await sweeper.tick();
        },
      });
    }
    jobs.push({
      name: `sending-wallets:${network}:${environment}`,
      everyMs: 15_000,
      run: () => recordSendingWallets(db, chain, writer, { hotWallet, gasTank: address(GAS_TANK_INDEX) }),
    });
  }
  return jobs;
}
