import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { formatRate } from "../../src/domain/exchange-rate.js";
import { ManualClock } from "../../src/lib/clock.js";
import {
  coinbase,
  fixedRates,
  kraken,
  type TickerProvider,
  tickerRates,
  withinJump,
} from "../../src/rates/index.js";
import {
  coinbaseRates,
  type FakeTicker,
  krakenTicker,
  startFakeTicker,
  type TickerAnswer,
} from "./fake-ticker.js";

// Each public ticker's adapter against a local fake answering its real response shape, and
// against malformed and hostile answers: every fault is "no rate" (null), never an exception.

let fake: FakeTicker;
beforeAll(async () => {
  fake = await startFakeTicker();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

function source(provider: TickerProvider, clock = new ManualClock(), options: { timeoutMs?: number } = {}) {
  return tickerRates(provider, {
    baseUrl: fake.url,
    timeoutMs: options.timeoutMs ?? 500,
    maxAgeMs: 300_000,
    clock,
  });
}

const GOOD: Record<string, TickerAnswer> = {
  coinbase: { kind: "json", body: coinbaseRates("USDT", { EUR: "0.8", GBP: "0.78", USD: "1.0002" }) },
  kraken: { kind: "json", body: krakenTicker("USDTEUR", "0.8") },
};

describe.each([
  ["coinbase", coinbase],
  ["kraken", kraken],
] as const)("%s", (name, provider) => {
  it("reads the provider's real shape: the inverse of the token's price in the fiat currency", async () => {
    fake.answer(GOOD[name] as TickerAnswer);
    const q = await source(provider).rate("USDT", "EUR");
    expect(q && formatRate(q.rate)).toBe("1.25");
    expect(q?.source).toBe(name);
    expect(fake.requests).toEqual([
      name === "coinbase" ? "/v2/exchange-rates?currency=USDT" : "/0/public/Ticker?pair=USDTEUR",
    ]);
  });

  const hostile: [string, TickerAnswer][] = [
    ["not JSON", { kind: "raw", text: "<html>502 Bad Gateway</html>", contentType: "text/html" }],
    ["truncated JSON", { kind: "raw", text: '{"data":{"currency":"USDT","rates":{"EUR":"0.' }],
    [
      "an error status",
      {
        kind: "json",
        status: 500,
        body: GOOD[name] === undefined ? {} : (GOOD[name] as { body: unknown }).body,
      },
    ],
    ["a redirect", { kind: "redirect", location: "http://169.254.169.254/latest" }],
    ["JSON null", { kind: "raw", text: "null" }],
    ["an array", { kind: "json", body: [] }],
    ["an empty object", { kind: "json", body: {} }],
    [
      "a negative rate",
      {
        kind: "json",
        body: name === "coinbase" ? coinbaseRates("USDT", { EUR: "-0.8" }) : krakenTicker("USDTEUR", "-0.8"),
      },
    ],
    [
      "a zero rate",
      {
        kind: "json",
        body: name === "coinbase" ? coinbaseRates("USDT", { EUR: "0" }) : krakenTicker("USDTEUR", "0"),
      },
    ],
    [
      "a huge rate",
      {
        kind: "json",
        body:
          name === "coinbase"
            ? coinbaseRates("USDT", { EUR: "1e308" })
            : krakenTicker("USDTEUR", "99999999999999"),
      },
    ],
    [
      "a rate as a JSON number",
      {
        kind: "json",
        body:
          name === "coinbase"
            ? { data: { currency: "USDT", rates: { EUR: 0.8 } } }
            : { error: [], result: { USDTEUR: { c: [0.8, "1"] } } },
      },
    ],
    [
      "a missing pair",
      {
        kind: "json",
        body:
          name === "coinbase"
            ? coinbaseRates("USDT", { GBP: "0.78" })
            : { error: ["EQuery:Unknown asset pair"] },
      },
    ],
    [
      "another token's answer",
      {
        kind: "json",
        body:
          name === "coinbase"
            ? coinbaseRates("BTC", { EUR: "80000" })
            : {
                error: [],
                result: { A: krakenTicker("A", "0.8").result.A, B: krakenTicker("B", "0.9").result.B },
              },
      },
    ],
    [
      "a prototype trick",
      {
        kind: "raw",
        text:
          name === "coinbase"
            ? '{"data":{"currency":"USDT","rates":{"__proto__":{"EUR":"0.8"}}}}'
            : '{"error":[],"result":{"__proto__":{"c":["0.8","1"]}}}',
      },
    ],
    ["a body over the size cap", { kind: "huge", bytes: 400_000 }],
  ];
  it.each(hostile)("%s: no rate, no exception", async (_what, answer) => {
    fake.answer(answer);
    await expect(source(provider).rate("USDT", "EUR")).resolves.toBeNull();
  });

  it("a slow answer: no rate once the timeout passes", async () => {
    fake.answer({ kind: "slow", ms: 2_000, body: (GOOD[name] as { body: unknown }).body });
    const started = Date.now();
    await expect(
      source(provider, new ManualClock(), { timeoutMs: 150 }).rate("USDT", "EUR"),
    ).resolves.toBeNull();
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("a refused connection: no rate", async () => {
    const s = tickerRates(provider, {
      baseUrl: "http://127.0.0.1:1",
      timeoutMs: 500,
      maxAgeMs: 300_000,
      clock: new ManualClock(),
    });
    await expect(s.rate("USDT", "EUR")).resolves.toBeNull();
  });
});

describe("kraken's own pair names", () => {
  it("reads USDTUSD answered as USDTZUSD, and refuses another pair's name", async () => {
    fake.answer({ kind: "json", body: krakenTicker("USDTZUSD", "1.0004") });
    const q = await source(kraken).rate("USDT", "USD");
    expect(q && formatRate(q.rate)).toBe("0.99960015993602559");
    expect(fake.requests).toEqual(["/0/public/Ticker?pair=USDTUSD"]);
    fake.answer({ kind: "json", body: krakenTicker("USDCEUR", "0.8") });
    await expect(source(kraken).rate("USDT", "EUR")).resolves.toBeNull();
  });
});

describe("the cache: a quote serves until EXCHANGE_RATE_MAX_AGE_SECONDS, then there is no rate", () => {
  it("reuses a fresh quote, refreshes an older one in the background, and drops one past the maximum age", async () => {
    const clock = new ManualClock();
    const s = source(kraken, clock);
    fake.answer(GOOD.kraken as TickerAnswer);
    const first = await s.rate("USDT", "EUR");
    expect(first && formatRate(first.rate)).toBe("1.25");
    expect(first?.at.getTime()).toBe(clock.now());
    // Young: no request.
    clock.advance(30_000);
    expect((await s.rate("USDT", "EUR"))?.rate).toBe(first?.rate);
    expect(fake.requests).toHaveLength(1);
    // The provider fails from now on; past the refresh age the cached quote still serves.
    fake.answer({ kind: "json", status: 503, body: {} });
    clock.advance(60_000);
    const old = await s.rate("USDT", "EUR");
    expect(old?.at).toEqual(first?.at);
    // Past the maximum age (300 s): no rate.
    clock.advance(211_000);
    await expect(s.rate("USDT", "EUR")).resolves.toBeNull();
    // The provider is back: a new quote, timed now.
    fake.answer({ kind: "json", body: krakenTicker("USDTEUR", "0.78125") });
    const fresh = await s.rate("USDT", "EUR");
    expect(fresh && formatRate(fresh.rate)).toBe("1.28");
    expect(fresh?.at.getTime()).toBe(clock.now());
  });

  it("a quote more than 10 % from the last good one is not taken: the last serves until too old, then no rate; a quote back in the band is taken", async () => {
    const clock = new ManualClock();
    const refused: string[] = [];
    const s = tickerRates(kraken, {
      baseUrl: fake.url,
      timeoutMs: 2_000,
      maxAgeMs: 300_000,
      clock,
      onRefused: (r) => refused.push(`${r.pair} ${formatRate(r.last)} → ${formatRate(r.quoted)}`),
    });
    fake.answer(GOOD.kraken as TickerAnswer); // 0.8 → 1.25 USDT per EUR
    expect(formatRate((await s.rate("USDT", "EUR"))?.rate as bigint)).toBe("1.25");
    // 1.25 → 2 (+60 %): refused; the cached 1.25 still serves while young enough.
    fake.answer({ kind: "json", body: krakenTicker("USDTEUR", "0.5") });
    clock.advance(61_000);
    await s.rate("USDT", "EUR"); // the background refresh
    await new Promise((r) => setTimeout(r, 100));
    expect(formatRate((await s.rate("USDT", "EUR"))?.rate as bigint)).toBe("1.25");
    expect(refused).toContain("USDT/EUR 1.25 → 2");
    // Past the maximum age with the ticker still far off: no rate (503 RATE_UNAVAILABLE).
    clock.advance(300_000);
    await expect(s.rate("USDT", "EUR")).resolves.toBeNull();
    // 1.25 → 1.28 (+2.4 %): taken.
    fake.answer({ kind: "json", body: krakenTicker("USDTEUR", "0.78125") });
    expect(formatRate((await s.rate("USDT", "EUR"))?.rate as bigint)).toBe("1.28");
  });

  it("withinJump: exactly 10 % either way is in, one unit more is out", () => {
    expect(withinJump(1_000n, 1_100n)).toBe(true);
    expect(withinJump(1_000n, 900n)).toBe(true);
    expect(withinJump(1_000n, 1_101n)).toBe(false);
    expect(withinJump(1_000n, 899n)).toBe(false);
  });

  it("concurrent callers share one request", async () => {
    fake.answer({ kind: "slow", ms: 100, body: coinbaseRates("USDC", { EUR: "0.8" }) });
    const s = source(coinbase);
    const quotes = await Promise.all([1, 2, 3, 4, 5].map(() => s.rate("USDC", "EUR")));
    expect(quotes.every((q) => q !== null && formatRate(q.rate) === "1.25")).toBe(true);
    expect(fake.requests).toEqual(["/v2/exchange-rates?currency=USDC"]);
  });
});

describe("fixed rates", () => {
  it("quotes FIXED_RATES and USD at 1 unless listed, never stale", async () => {
    const clock = new ManualClock();
    const s = fixedRates(new Map([["EUR", 1_080_000_000_000_000_000n]]), clock);
    expect(s.quotes("EUR") && s.quotes("USD") && !s.quotes("GBP")).toBe(true);
    expect(formatRate((await s.rate("USDT", "EUR"))?.rate as bigint)).toBe("1.08");
    expect(formatRate((await s.rate("USDC", "USD"))?.rate as bigint)).toBe("1");
    clock.advance(10 * 86_400_000);
    expect((await s.rate("USDT", "EUR"))?.at.getTime()).toBe(clock.now());
    await expect(s.rate("USDT", "GBP")).resolves.toBeNull();
    const usd = fixedRates(new Map([["USD", 999_000_000_000_000_000n]]), clock);
    expect(formatRate((await usd.rate("USDT", "USD"))?.rate as bigint)).toBe("0.999");
  });
});
