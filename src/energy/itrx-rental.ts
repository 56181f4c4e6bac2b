import { createHmac } from "node:crypto";
import { z } from "zod";
import {
  type EnergyRental,
  type RentalOrder,
  type RentalReceipt,
  RentalRefusedError,
  RentalUnavailableError,
} from "./rental.js";

/**
 * The rental adapter for itrx.io's HTTP API (develop.itrx.io): `GET /api/v1/frontend/order/price`
 * quotes, `POST /api/v1/frontend/order` orders. GET carries the `API-KEY` header; a POST is signed:
 * `SIGNATURE` = hex HMAC-SHA256 with the API secret over `<TIMESTAMP>&<body>`, the body being the
 * JSON of the parameters with their keys in dictionary order, `TIMESTAMP` in whole seconds. Written
 * by hand (no client library of theirs is on npm); tested against a local fake of the documented
 * shapes (test/support/itrx-fake.ts).
 *
 * Every answer is checked before it is believed: amounts are non-negative safe integers of sun, an
 * order has its serial. The operator's cap (`maxSunPerEnergy`) is checked against a fresh quote
 * before each order: a provider raising its prices gets no order.
 */
export interface ItrxRentalOptions {
  /** The API's origin, e.g. https://itrx.io */
  url: string;
  apiKey: string;
  apiSecret: string;
  /** The most one unit of energy may cost (sun), fees included. */
  maxSunPerEnergy: number;
  /** Per request (default 10 s). */
  timeoutMs?: number;
  /** Seconds since the epoch (tests). */
  now?: () => number;
}

const sun = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const PriceAnswer = z.object({ total_price: sun, energy_amount: sun });
const OrderAnswer = z.object({
  errno: z.literal(0),
  serial: z.string().min(1).max(200),
  amount: sun,
  balance: sun.optional(),
});
const ErrorAnswer = z.object({ errno: z.number().int().positive(), message: z.string().max(500).optional() });

/** A POST's `SIGNATURE`: hex HMAC-SHA256 with the API secret over `<timestamp>&<body>`. */
export function itrxSignature(apiSecret: string, timestamp: string, body: string): string {
  return createHmac("sha256", apiSecret).update(`${timestamp}&${body}`).digest("hex");
}

/** The largest answer read (its documented answers are a few hundred bytes); the rest is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The body's text, at most `limit` bytes (a longer one is cut off: unreadable JSON, then
 * unavailability), so that a hostile or broken provider cannot fill the worker's memory.
 */
async function readLimited(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return "";
      }
      chunks.push(value);
    }
  } catch {
    return "";
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The shortest term the API sells (one hour): a sweep uses the energy within minutes. */
const PERIOD = "1H";

export class ItrxRental implements EnergyRental {
  readonly name = "itrx";

  constructor(private readonly o: ItrxRentalOptions) {
    if (!(o.maxSunPerEnergy > 0)) throw new RangeError("maxSunPerEnergy must be positive");
  }

  async quote(energy: number): Promise<bigint> {
    const query = new URLSearchParams({ period: PERIOD, energy_amount: String(energy) });
    const body = await this.request("GET", `/api/v1/frontend/order/price?${query}`, undefined);
    const parsed = PriceAnswer.safeParse(body);
    if (!parsed.success) throw new RentalUnavailableError(this.name, "unreadable price answer");
    if (parsed.data.energy_amount !== energy)
      throw new RentalUnavailableError(
        this.name,
        `quoted ${parsed.data.energy_amount} energy, ${energy} asked`,
      );
    return BigInt(parsed.data.total_price);
  }

  async rent(order: RentalOrder): Promise<RentalReceipt> {
    if (!Number.isSafeInteger(order.energy) || order.energy <= 0)
      throw new RangeError("energy must be a positive whole number");
    const quoted = await this.quote(order.energy);
    const cap = BigInt(Math.floor(this.o.maxSunPerEnergy * 1_000)) * BigInt(order.energy);
    if (quoted * 1_000n > cap)
      throw new RentalRefusedError(
        this.name,
        `${order.energy} energy costs ${quoted} sun, above the cap of ${this.o.maxSunPerEnergy} sun per unit`,
      );
    if (order.maxSun !== undefined && quoted > order.maxSun)
      throw new RentalRefusedError(
        this.name,
        `${order.energy} energy costs ${quoted} sun now, above the ${order.maxSun} sun burn it was to replace`,
      );
    // Keys in dictionary order: the signature covers exactly these bytes.
    const params = {
      energy_amount: order.energy,
      out_trade_no: order.reference,
      period: PERIOD,
      receive_address: order.receiver,
    };
    const body = await this.request("POST", "/api/v1/frontend/order", JSON.stringify(params));
    const parsed = OrderAnswer.safeParse(body);
    if (!parsed.success) throw new RentalUnavailableError(this.name, "unreadable order answer");
    return {
      serial: parsed.data.serial,
      paidSun: BigInt(parsed.data.amount),
      quotedSun: quoted,
      balanceSun: parsed.data.balance === undefined ? null : BigInt(parsed.data.balance),
    };
  }

  /** One request; an `errno` answer is a refusal, a 5xx or no answer is unavailability. */
  private async request(method: "GET" | "POST", path: string, json: string | undefined): Promise<unknown> {
    const headers: Record<string, string> = { "API-KEY": this.o.apiKey, accept: "application/json" };
    if (json !== undefined) {
      const timestamp = String(Math.floor(this.o.now?.() ?? Date.now() / 1_000));
      headers["content-type"] = "application/json";
      headers.TIMESTAMP = timestamp;
      headers.SIGNATURE = itrxSignature(this.o.apiSecret, timestamp, json);
    }
    let response: Response;
    try {
      response = await fetch(new URL(path, this.o.url), {
        method,
        headers,
        body: json,
        redirect: "error",
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
      });
    } catch (err) {
      throw new RentalUnavailableError(this.name, `no answer (${(err as Error).message})`, { cause: err });
    }
    const text = await readLimited(response, MAX_ANSWER_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const refusal = ErrorAnswer.safeParse(body);
    if (refusal.success)
      throw new RentalRefusedError(
        this.name,
        `errno ${refusal.data.errno}: ${refusal.data.message ?? "no message"}`,
      );
    if (response.status >= 500 || body === undefined)
      throw new RentalUnavailableError(this.name, `HTTP ${response.status}`);
    if (response.status >= 400) throw new RentalRefusedError(this.name, `HTTP ${response.status}`);
    return body;
  }
}
