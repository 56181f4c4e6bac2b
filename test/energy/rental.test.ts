import type { Hex } from "viem";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import { ItrxRental, itrxSignature } from "../../src/energy/itrx-rental.js";
import { RentalRefusedError, RentalUnavailableError } from "../../src/energy/rental.js";
import { wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { type ItrxFake, startItrxFake } from "../support/itrx-fake.js";

// Issue #38, energy rental for operators without stake: the itrx.io adapter against a local fake of
// its documented API. The fake delivers an order by delegating energy on the TRON emulator from a
// provider's stake; what arrived is read from the chain. Every answer the adapter believes is
// checked; the operator's price cap is checked on a fresh quote before any order.

const SUN_PER_TRX = 1_000_000n;
const receiver = wallet.address("USDT-TRC20", "production", 150);
const hot = wallet.address("USDT-TRC20", "production", 0);
const provider = "0x00000000000000000000000000000000000e4e11" as Hex;

let node: AnvilNode;
let emulator: TronEmulator;
let writer: TronChainWriter;
let fake: ItrxFake;

const rental = (o: Partial<ConstructorParameters<typeof ItrxRental>[0]> = {}) =>
  new ItrxRental({
    url: fake.url,
    apiKey: fake.apiKey,
    apiSecret: fake.apiSecret,
    maxSunPerEnergy: 80,
    timeoutMs: 2_000,
    ...o,
  });

beforeAll(async () => {
  node = await startAnvil();
  const token = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, token);
  writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  // A deposit address holding its deposit (the energy a sweep from it needs is estimated).
  emulator.resources.activate(tronAddressToEvm(receiver));
  await mintTestUsdt(node, token, tronAddressToEvm(receiver) as Hex, 20_000_000n);
  // The provider's stake, from which the fake delegates what an order asks for (whole TRX until
  // the receiver's energy covers it).
  emulator.resources.freeze(provider, 10_000_000n * SUN_PER_TRX, "ENERGY", 10_000_000n * SUN_PER_TRX);
  fake = await startItrxFake(async (to, energy) => {
    const r = tronAddressToEvm(to);
    const target = emulator.resources.energyLeft(r) + energy;
    while (emulator.resources.energyLeft(r) < target)
      emulator.resources.delegate(provider, r, 1_000n * SUN_PER_TRX, "ENERGY", null);
  });
});

afterAll(async () => {
  await fake?.stop();
  await emulator?.stop();
  await node?.stop();
});

beforeEach(() => {
  fake.mode = "normal";
  fake.price = 60;
});

describe("energy rental through itrx.io's API (local fake)", () => {
  it("signs as the provider's documentation shows (its published example)", () => {
    // develop.itrx.io/general/sign.html: this secret, timestamp and body give this signature.
    const body =
      '{"callback_url":"http://{mydomain}/callback","energy_amount":32000,"out_trade_no":"123456",' +
      '"period":"1D","receive_address":"TExWKszFWYTKZH8LYiovAPKzS3L9MLZ4kw"}';
    expect(
      itrxSignature("0285A2741D0E76E2E187260EB23E51851D48403A756333E7D0CF845406ABF3E8", "1686796826", body),
    ).toBe("07c125cabfe006614a02131f927cca9e7a654f7644a817b155fad591e1c50f7b");
  });

  it("quotes, then orders with a signed request: the energy is on the receiver, read from the chain", async () => {
    const before = (await writer.resources.transferEnergy(receiver, hot, 1n)).available;
    expect(await rental().quote(65_000)).toBe(65_000n * 60n);
    const receipt = await rental().rent({ receiver, energy: 65_000, reference: "swp_rent_1" });
    expect(receipt).toEqual({
      serial: "fake1",
      paidSun: 3_900_000n,
      quotedSun: 3_900_000n,
      balanceSun: 1_000_000_000n - 3_900_000n,
    });
    expect(fake.orders).toEqual([{ receiver, energy: 65_000, reference: "swp_rent_1", paid: 3_900_000n }]);
    expect(fake.refused).toEqual([]);
    const after = (await writer.resources.transferEnergy(receiver, hot, 1n)).available;
    expect(after - before).toBeGreaterThanOrEqual(65_000n);
  });

  it("a price above the operator's cap: refused on the quote, no order placed", async () => {
    fake.price = 81;
    const orders = fake.orders.length;
    await expect(
      rental({ maxSunPerEnergy: 80 }).rent({ receiver, energy: 65_000, reference: "x" }),
    ).rejects.toThrow(RentalRefusedError);
    await expect(
      rental({ maxSunPerEnergy: 80 }).rent({ receiver, energy: 65_000, reference: "x" }),
    ).rejects.toThrow(/above the cap of 80 sun per unit/);
    expect(fake.orders).toHaveLength(orders);
    // A fractional cap is compared exactly: 80.5 admits 80.5, not 81.
    await expect(
      rental({ maxSunPerEnergy: 80.5 }).rent({ receiver, energy: 10_000, reference: "x" }),
    ).rejects.toThrow(RentalRefusedError);
    expect(fake.orders).toHaveLength(orders);
  });

  it("a wrong secret or key: the provider refuses the signature or key, nothing is ordered", async () => {
    const orders = fake.orders.length;
    await expect(
      rental({ apiSecret: "wrong" }).rent({ receiver, energy: 65_000, reference: "x" }),
    ).rejects.toThrow(/errno 10002: signature error/);
    await expect(rental({ apiKey: "nope" }).quote(65_000)).rejects.toThrow(RentalRefusedError);
    expect(fake.refused).toEqual(["POST order: signature", "GET /api/v1/frontend/order/price: key"]);
    expect(fake.orders).toHaveLength(orders);
  });

  it("answers it cannot believe are unavailability, never a receipt", async () => {
    for (const mode of ["server-error", "garbage", "wrong-energy"] as const) {
      fake.mode = mode;
      await expect(rental().quote(65_000), mode).rejects.toThrow(RentalUnavailableError);
      await expect(rental().rent({ receiver, energy: 65_000, reference: "x" }), mode).rejects.toThrow(
        RentalUnavailableError,
      );
    }
    // An order answer with a negative amount: unreadable (the order may have gone through: the
    // chain says whether energy arrived, not this answer).
    fake.mode = "negative-amount";
    await expect(rental().rent({ receiver, energy: 65_000, reference: "x" })).rejects.toThrow(
      /unreadable order answer/,
    );
    fake.mode = "hang";
    await expect(rental({ timeoutMs: 300 }).quote(65_000)).rejects.toThrow(RentalUnavailableError);
  });

  it("a balance too low, or an order below the provider's minimum: refused with the provider's reason", async () => {
    const balance = fake.balance;
    fake.balance = 1n;
    await expect(rental().rent({ receiver, energy: 65_000, reference: "x" })).rejects.toThrow(
      /balance not enough/,
    );
    fake.balance = balance;
    await expect(rental().quote(5_000)).rejects.toThrow(/at least 10000/);
    expect(() => rental({ maxSunPerEnergy: 0 })).toThrow(RangeError);
    await expect(rental().rent({ receiver, energy: 1.5, reference: "x" })).rejects.toThrow(RangeError);
  });
});
