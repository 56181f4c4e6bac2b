import type { Runtime } from "../runtime.js";
import { Sweeper } from "../sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../wallet/derivation-path.js";
import type { Job } from "../worker/runner.js";
import { type FaultPoint, Sender } from "./sender.js";
import { recordSendingWallets } from "./status.js";
import { createChainWriter } from "./writers.js";

export interface SenderJobOptions {
  /** Queue poll interval; default 100 ms on the simulator (a sandbox withdrawal completes in well under 1 s), 1 s elsewhere. */
  pollMs?: number;
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
    jobs.push({
      name: `sender:${network}:${environment}`,
      everyMs: options.pollMs ?? (simulator ? 100 : 1_000),
      run: (signal) => sender.tick(signal),
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
