import type { ChainRegistry } from "../chains/registry.js";
import { SIM_BLOCK_CHANNEL } from "../chains/simulator/simulated-chain.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import { Wakeup } from "../lib/wakeup.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";
import type { DepositHandoff } from "./handoff.js";
import { ChainWatcher } from "./watcher.js";

/**
 * A simulator watcher that LISTENs is woken by every mined block; its poll only renews its lease
 * (20 s) and takes over a dead worker's. Without LISTEN it polls at the chain's interval (1 s).
 */
const SIM_NOTIFIED_POLL_MS = 5_000;

export interface WatcherJobDeps {
  db: Db;
  chains: ChainRegistry;
  depositHandoff: DepositHandoff;
  logger: Logger;
  clock: Clock;
  /** LISTEN on the database (`Database.listen`): wakes simulator watchers when a block is mined. */
  listen?: ((channel: string, onNotify: () => void) => Promise<() => Promise<void>>) | undefined;
}

/** One watcher job per available (network, environment) chain; the lease picks one worker per chain. */
export function watcherJobs(deps: WatcherJobDeps, instanceId: string): Job[] {
  return deps.chains.available().map((chain) => {
    const watcher = new ChainWatcher({
      db: deps.db,
      network: chain.network,
      environment: chain.environment,
      adapter: chain.adapter,
      confirmations: chain.confirmations,
      scan: chain.scan,
      handoff: deps.depositHandoff,
      logger: deps.logger,
      clock: deps.clock,
      owner: instanceId,
      start: chain.kind === "simulator" ? "genesis" : "safe",
    });
    const name = `watcher:${chain.network}:${chain.environment}`;
    if (chain.kind !== "simulator" || !deps.listen) {
      return {
        name,
        everyMs: chain.scan.pollIntervalMs,
        async run(signal: AbortSignal) {
          await watcher.tick(signal);
        },
        stop: () => watcher.releaseLease(),
      };
    }
    // The simulator announces each mined block (NOTIFY at commit): one long run that scans, then
    // sleeps until a block of this chain is announced or the poll interval passes.
    const listen = deps.listen;
    const key = `${chain.network}/${chain.environment}`;
    const wake = new Wakeup();
    return {
      name,
      everyMs: chain.scan.pollIntervalMs,
      async run(signal: AbortSignal) {
        let unlisten: (() => Promise<void>) | undefined;
        try {
          unlisten = await listen(SIM_BLOCK_CHANNEL, () => wake.notify());
        } catch (err) {
          deps.logger.warn({ err, chain: key }, "simulator LISTEN unavailable; blocks are found by polling");
        }
        try {
          while (!signal.aborted) {
            await watcher.tick(signal);
            await wake.wait(SIM_NOTIFIED_POLL_MS, signal);
          }
        } finally {
          await unlisten?.().catch(() => {});
        }
      },
      stop: () => watcher.releaseLease(),
    };
  });
}
