import { createServer, type Server } from "node:http";
import type { Hex } from "viem";
import { tronAddressToEvm } from "../../../src/chains/tron/address.js";
import { TronChainWriter } from "../../../src/chains/tron/tron-writer.js";
import type { Database } from "../../../src/db/database.js";
import { EnergyEngine, type EnergyPolicy } from "../../../src/energy/index.js";
import { ItrxRental } from "../../../src/energy/itrx-rental.js";
import { registerEnergyOutcomes } from "../../../src/energy/jobs.js";
import type { Clock } from "../../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../../src/merchants/index.js";
import { createLogger } from "../../../src/observability/logger.js";
import { TransferOutcomes } from "../../../src/sender/outcomes.js";
import { Sender } from "../../../src/sender/sender.js";
import type { Signer } from "../../../src/signer/index.js";
import { registerSweepOutcomes, Sweeper } from "../../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../../src/wallet/derivation-path.js";
import { localSigner, USDT, wallet } from "../../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../../support/chain/tron-emulator.js";
import { confirmedDeposit } from "../../support/confirmed-deposit.js";
import { openTestDatabase } from "../../support/db.js";

// Shared setup of the attack tests on energy rental (decision 21), after
// test/energy/rental-engine.test.ts, with a provider whose every answer the test controls.

export const network = "USDT-TRC20";
export const environment = "sandbox";
export const address = (i: number) => wallet.address(network, environment, i);
export const hot = address(HOT_WALLET_INDEX);
export const gasTank = address(GAS_TANK_INDEX);
export const TRX = (n: number) => BigInt(n) * 1_000_000n;
const WEI_PER_SUN = 10n ** 12n;
/** The provider's own stake on the emulator. */
export const providerAccount = "0x00000000000000000000000000000000000e4e12" as Hex;

/** A hostile itrx-compatible provider: quotes, charges and delivers as the test says. */
export interface HostileProvider {
  url: string;
  /** Sun per unit quoted by GET /order/price. */
  quotePrice: number;
  /** What POST /order answers as `amount` (default: energy × quotePrice). */
  charge?: (energy: number) => number;
  /** Delivery: at once (before the answer), later (the test calls `deliverPending`), never. */
  delivery: "sync" | "later" | "never";
  /** Delay before the POST's answer (after a sync delivery). */
  answerDelayMs: number;
  /** Called after a sync delivery and before the answer (another worker's round, say). */
  beforeAnswer?: () => Promise<void>;
  /** A GET answer of this many bytes (a flood), if set. */
  floodBytes?: number;
  floodSent: number;
  orders: { receiver: string; energy: number; reference: string; amount: number }[];
  quotes: number;
  pending: { receiver: string; energy: number }[];
  deliverPending(): void;
  stop(): Promise<void>;
}

export interface World {
  node: AnvilNode;
  token: Hex;
  emulator: TronEmulator;
  writer: TronChainWriter;
  database: Database;
  merchantId: string;
  provider: HostileProvider;
  clock: Clock;
  advance(ms: number): void;
  logs: Record<string, unknown>[];
  /** Delegations the provider made (to take them back: the end of its term). */
  delegated: { to: string; sun: bigint }[];
  endTerms(): void;
  stop(): Promise<void>;
}

export const policy: EnergyPolicy = {
  maxWaitMs: 3_600_000,
  burnCeilingSun: 1n,
  reserveSun: TRX(10),
  bandwidthStakePercent: 6,
  rentalWaitMs: 600_000,
};

export async function startWorld(): Promise<World> {
  const [node, database] = await Promise.all([startAnvil(), openTestDatabase()]);
  const token = await deployTestUsdt(node);
  const emulator = await startTronEmulator(node, token);
  const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  const merchantId = (
    await createMerchantWithKeys(database.db, { email: "attack@example.com", companyName: "Attack" })
  ).id;
  await mintTestUsdt(node, token, tronAddressToEvm(hot) as Hex, USDT(1_000));
  for (const a of [hot, gasTank])
    await node.testClient.setBalance({
      address: tronAddressToEvm(a) as Hex,
      value: TRX(1_000) * WEI_PER_SUN,
    });
  emulator.resources.freeze(providerAccount, 10_000_000n * 1_000_000n, "ENERGY", 10_000_000n * 1_000_000n);
  const delegated: { to: string; sun: bigint }[] = [];
  const deliver = (to: string, energy: number) => {
    const r = tronAddressToEvm(to);
    // As a real provider: about the energy ordered (whole TRX of stake), not a 1,000-TRX chunk.
    const target = emulator.resources.energyLeft(r) + energy;
    const before = emulator.resources.energyLeft(r);
    emulator.resources.delegate(providerAccount, r, TRX(1), "ENERGY", null);
    delegated.push({ to: r, sun: TRX(1) });
    const perTrx = Math.max(1, emulator.resources.energyLeft(r) - before);
    while (emulator.resources.energyLeft(r) < target) {
      const trx = Math.max(1, Math.ceil((target - emulator.resources.energyLeft(r)) / perTrx));
      emulator.resources.delegate(providerAccount, r, TRX(trx), "ENERGY", null);
      delegated.push({ to: r, sun: TRX(trx) });
    }
  };
  const provider = await startHostileProvider(deliver, (to) =>
    emulator.resources.exists(tronAddressToEvm(to)),
  );
  let offsetMs = 0;
  const clock: Clock = { now: () => Date.now() + offsetMs };
  const logs: Record<string, unknown>[] = [];
  return {
    node,
    token,
    emulator,
    writer,
    database,
    merchantId,
    provider,
    clock,
    advance: (ms) => {
      offsetMs += ms;
    },
    logs,
    delegated,
    endTerms() {
      for (const d of delegated.splice(0))
        emulator.resources.undelegate(providerAccount, d.to, d.sun, "ENERGY");
    },
    async stop() {
      await provider.stop();
      await emulator.stop();
      await node.stop();
      await database.close();
    },
  };
}

async function startHostileProvider(
  deliver: (to: string, energy: number) => void,
  exists: (to: string) => boolean,
): Promise<HostileProvider> {
  const p: Omit<HostileProvider, "url" | "stop" | "deliverPending"> = {
    quotePrice: 60,
    delivery: "sync",
    answerDelayMs: 0,
    floodSent: 0,
    orders: [],
    quotes: 0,
    pending: [],
  };
  let serial = 0;
  const server: Server = createServer(async (req, res) => {
    let text = "";
    for await (const c of req) text += c;
    const send = (payload: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method === "GET" && url.pathname === "/api/v1/frontend/order/price") {
      p.quotes++;
      if (p.floodBytes) {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(1 << 20, 0x20);
        const write = () => {
          while (p.floodSent < p.floodBytes!) {
            p.floodSent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", write);
          }
          res.end();
        };
        res.on("error", () => {});
        write();
        return;
      }
      const energy = Number(url.searchParams.get("energy_amount"));
      return send({
        period: url.searchParams.get("period"),
        energy_amount: energy,
        price: p.quotePrice,
        total_price: energy * p.quotePrice,
        addition: 0,
      });
    }
    if (req.method === "POST" && url.pathname === "/api/v1/frontend/order") {
      const params = JSON.parse(text);
      const receiver = String(params.receive_address);
      const energy = Number(params.energy_amount);
      if (!exists(receiver)) return send({ errno: 40001, message: "receive_address is not activated" });
      const amount = p.charge ? p.charge(energy) : energy * p.quotePrice;
      p.orders.push({ receiver, energy, reference: String(params.out_trade_no), amount });
      if (p.delivery === "sync") deliver(receiver, energy);
      if (p.delivery === "later") p.pending.push({ receiver, energy });
      if (p.beforeAnswer) await p.beforeAnswer();
      if (p.answerDelayMs) await new Promise((r) => setTimeout(r, p.answerDelayMs));
      return send({ errno: 0, serial: `hostile${++serial}`, amount, balance: 1_000_000_000 });
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(p, {
    url: `http://127.0.0.1:${port}`,
    deliverPending() {
      for (const d of p.pending.splice(0)) deliver(d.receiver, d.energy);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as HostileProvider;
}

export function parts(w: World, o: { maxSunPerEnergy?: number; signer?: Signer; timeoutMs?: number } = {}) {
  const logger = createLogger("info", {
    write(line: string) {
      w.logs.push(JSON.parse(line));
    },
  });
  const outcomes = new TransferOutcomes();
  registerSweepOutcomes(outcomes);
  registerEnergyOutcomes(outcomes, logger);
  outcomes.register("withdrawal", async () => {});
  const engine = new EnergyEngine({
    db: w.database.db,
    network,
    environment,
    writer: w.writer,
    address,
    policy,
    rental: new ItrxRental({
      url: w.provider.url,
      apiKey: "KEY",
      apiSecret: "SECRET",
      maxSunPerEnergy: o.maxSunPerEnergy ?? 80,
      timeoutMs: o.timeoutMs ?? 2_000,
    }),
    logger,
    clock: w.clock,
  });
  const sender = new Sender({
    db: w.database.db,
    network,
    environment,
    writer: w.writer,
    signer: o.signer ?? localSigner(w.database.db, w.emulator.tokenAddress),
    address,
    outcomes,
    confirmations: 1,
    logger,
    clock: w.clock,
    recheckMs: 0,
    energy: engine,
  });
  const sweeper = new Sweeper({
    db: w.database.db,
    network,
    environment,
    writer: w.writer,
    address,
    threshold: USDT(10),
    logger,
    clock: w.clock,
    energy: engine,
  });
  return { engine, sender, sweeper };
}

export async function rentals(w: World) {
  return w.database.db
    .selectFrom("energy_rentals")
    .select([
      "id",
      "receiver",
      "energy",
      "status",
      "after_intent_id",
      "serves_intent_id",
      "paid_sun",
      "serial",
      "reason",
    ])
    .orderBy("created_at")
    .execute();
}

export async function transfers(w: World, kind: string) {
  return w.database.db
    .selectFrom("outgoing_transfers")
    .select([
      "intent_id",
      "status",
      "to_address",
      "from_index",
      "amount",
      "tx_hash",
      "after_intent_id",
      "reason",
      "last_error",
    ])
    .where("kind", "=", kind as never)
    .orderBy("created_at")
    .execute();
}

export async function deposit(w: World, i: number, amount: bigint): Promise<string> {
  const target = address(100 + i);
  const receipt = await mintTestUsdt(w.node, w.token, tronAddressToEvm(target) as Hex, amount);
  return w.database.db.transaction().execute(async (trx) => {
    const { address: a } = await confirmedDeposit(trx, {
      deriver: wallet,
      merchantId: w.merchantId,
      network,
      i,
      amount,
      txHash: receipt.transactionHash,
    });
    return a;
  });
}

/** Rounds (engine, sender, sweeper) until nothing is open or `rounds` pass; returns whether settled. */
export async function settle(w: World, p: ReturnType<typeof parts>, rounds = 60): Promise<boolean> {
  for (let round = 0; round < rounds; round++) {
    await p.engine.tick();
    await p.sender.tick();
    await p.sweeper.tick();
    const open = (await rentals(w)).some((r) =>
      ["requested", "ordering", "ordered", "unknown"].includes(r.status),
    );
    if ((await p.sender.openCount()) === 0 && !open) return true;
    w.advance(5_000);
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
