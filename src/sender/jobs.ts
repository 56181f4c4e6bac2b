import {
  type AvailableChain,
  type ChainWriter,
  createChainWriter,
  type WriterConfig,
} from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import {
  addressBlock,
  describeBlock,
  type Screening,
  ScreeningUnavailableError,
} from "../screening/index.js";
import type { Signer } from "../signer/index.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../wallet/index.js";
import { type Listen, runNotifiedLoop } from "../worker/notified-loop.js";
import type { Job } from "../worker/runner.js";
import type { EnergyGate } from "./context.js";
import { TRANSFER_CHANNEL } from "./intents.js";
import type { TransferOutcomes } from "./outcomes.js";
import { type FaultPoint, Sender } from "./sender.js";
import { recordSendingWallets } from "./status.js";

/**
 * What the sending jobs use (a process's runtime has all of it): the database and its LISTEN, the
 * available chains, the watch-only address derivation, the chain and sending configuration, the
 * signer, and the outcome registration point.
 */
export interface SenderJobDeps {
  database: { db: Db; listen?: Listen };
  chains: { available(): AvailableChain[] };
  addressDeriver: { address(network: CurrencyType, environment: Environment, index: number): string };
  config: WriterConfig;
  signer: Signer | null;
  transferOutcomes: TransferOutcomes;
  /** TRON's energy engine of a chain (issue #38; composed by the roles: energy/ sits above sender/). */
  energyGate?: (chain: AvailableChain, writer: ChainWriter) => EnergyGate | undefined;
  /** With the token's freeze list, what every withdrawal and payout destination is checked against before signing. */
  screening?: Screening;
  logger: Logger;
  clock: Clock;
}

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

/** Without a screening client (tools, tests): only the token's freeze list is read. */
const NO_SCREENING: Screening = {
  enabled: false,
  check: async () => ({ decision: "allow", reason: null, source: "off" }),
};

/**
 * The sending jobs of every available chain: the sender (sign → broadcast → verify → outcome, and
 * the recovery of whatever a crash left open: its first run after start-up is the start-up
 * recovery) and the hot wallet / gas tank balance recorder. A chain that needs a signer (EVM,
 * TRON) gets no sender while the process has none (a `worker` without SIGNER_URL). The sweeper's
 * jobs are `sweepJobs` (sweep/jobs.ts).
 */
export function senderJobs(deps: SenderJobDeps, _instanceId: string, options: SenderJobOptions = {}): Job[] {
  const jobs: Job[] = [];
  const db = deps.database.db;
  const listen = deps.database.listen?.bind(deps.database);
  const screening = deps.screening ?? NO_SCREENING;
  for (const chain of deps.chains.available()) {
    const { network, environment } = chain;
    const address = (index: number) => deps.addressDeriver.address(network, environment, index);
    const hotWallet = address(HOT_WALLET_INDEX);
    const writer = createChainWriter(chain, deps.config, hotWallet);
    if (writer.kind === "signed" && !deps.signer) {
      deps.logger.warn(
        { network, environment },
        "no signer (set SIGNER_URL): outgoing transfers of this chain are not sent by this process",
      );
      continue;
    }
    const simulator = chain.kind === "simulator";
    const energy = deps.energyGate?.(chain, writer);
    const sender = new Sender({
      db,
      network,
      environment,
      writer,
      signer: deps.signer,
      address,
      outcomes: deps.transferOutcomes,
      confirmations: chain.confirmations,
      logger: deps.logger,
      clock: deps.clock,
      stuckAfterMs: deps.config.sending.stuckAfterMs,
      recheckMs: simulator ? 100 : 2_000,
      // Just before signing, the destination again (issue #40): frozen or refused since the request
      // → failed unsigned, hold released. A provider that does not answer is no refusal here: the
      // transfer waits queued and is asked again (outside review: a one-second outage failed
      // approved withdrawals).
      destinationCheck: async (to, intentId) => {
        const block = await addressBlock(chain.adapter, screening, {
          address: to,
          network,
          direction: "outgoing",
          // A withdrawal's or payout's intent id is its transaction id (its audit record's target).
          subject: { environment, transactionId: intentId },
        });
        if (block?.unavailable) throw new ScreeningUnavailableError();
        return block ? describeBlock(block) : null;
      },
      ...(energy ? { energy } : {}),
      ...(options.fault ? { fault: options.fault } : {}),
    });
    const activeMs = options.activeMs ?? (simulator ? 100 : 1_000);
    const idleMs = options.idleMs ?? 1_000;
    jobs.push({
      name: `sender:${network}:${environment}`,
      everyMs: activeMs,
      run: (signal) =>
        runNotifiedLoop(signal, {
          listen,
          channel: TRANSFER_CHANNEL,
          logger: deps.logger,
          logContext: { network, environment },
          what: "transfer requests",
          // Busy, or not woken by requests: back soon. Idle and listening: sleep until a request.
          round: async (s, listening) => ((await sender.tick(s)) || !listening ? activeMs : idleMs),
          retryMs: activeMs,
        }),
    });
    jobs.push({
      name: `sending-wallets:${network}:${environment}`,
      everyMs: 15_000,
      run: () =>
        recordSendingWallets(
          db,
          chain,
          writer,
          { hotWallet, gasTank: address(GAS_TANK_INDEX) },
          { isFrozen: (a) => chain.adapter.isFrozen(a), logger: deps.logger, clock: deps.clock },
        ),
    });
  }
  return jobs;
}
