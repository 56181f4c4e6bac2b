import type { ChainRegistry } from "../chains/registry.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";
import type { DepositHandoff } from "./handoff.js";
import { ChainWatcher } from "./watcher.js";

export interface WatcherJobDeps {
  db: Db;
  chains: ChainRegistry;
  depositHandoff: DepositHandoff;
  logger: Logger;
  clock: Clock;
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
    return {
      name: `watcher:${chain.network}:${chain.environment}`,
      everyMs: chain.scan.pollIntervalMs,
      async run(signal: AbortSignal) {
        await watcher.tick(signal);
      },
    };
  });
}
