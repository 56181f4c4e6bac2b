import { describe, expect, it } from "vitest";
import { checkLogo, parseDisplayName, sniffLogo } from "../../src/domain/branding.js";
import { CURRENCY_TYPES, chainScale, currencyOf } from "../../src/domain/currency.js";
import { escapeHtml, html, raw } from "../../src/pay/html.js";
import { type LiveSnapshot, LiveStatusHub, type LiveSubscriber } from "../../src/pay/live-status.js";
import { chooseLanguage, LANGUAGES, t } from "../../src/pay/messages.js";
import {
  countdownText,
  displayAmount,
  localTimeText,
  pageState,
  remainingAmount,
  renderPayPage,
  safeReturnUrl,
  utcText,
} from "../../src/pay/page.js";
import { paymentUri, uriCarriesAmount, walletLink } from "../../src/pay/payment-uri.js";
import { jpegHeader, makePng, webpHeader } from "./images.js";

describe("html template", () => {
  it("escapes every interpolated value, in text and in attributes", () => {
    const evil = `"><script>alert('x')</script>&`;
    const out = html`<p title="${evil}">${evil}</p>`.value;
    expect(out).toBe(
      `<p title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;</p>`,
    );
    expect(escapeHtml("a&b<c>d\"e'f")).toBe("a&amp;b&lt;c&gt;d&quot;e&#39;f");
  });

  it("keeps nested templates and raw markup, joins arrays, drops null/undefined/false, prints 0", () => {
    const inner = html`<b>${"<i>"}</b>`;
    const out = html`${inner}${raw("<svg></svg>")}${["<a>", html`<br>`]}${null}${undefined}${false}${0}`
      .value;
    expect(out).toBe("<b>&lt;i&gt;</b><svg></svg>&lt;a&gt;<br>0");
  });
});

describe("language choice", () => {
  it("?lang= wins over Accept-Language; an unknown ?lang= falls back to the header", () => {
    expect(chooseLanguage("de", "en-US,en;q=0.9")).toBe("de");
    expect(chooseLanguage("EN", "de")).toBe("en");
    expect(chooseLanguage("it", "de-CH,de;q=0.9")).toBe("de");
    expect(chooseLanguage("fr", "de-CH,de;q=0.9")).toBe("fr");
    expect(chooseLanguage("<script>", undefined)).toBe("en");
  });

  it("Accept-Language: q-values, order, regional tags, q=0 exclusions, wildcard, garbage", () => {
    expect(chooseLanguage(undefined, undefined)).toBe("en");
    expect(chooseLanguage(undefined, "de-AT")).toBe("de");
    expect(chooseLanguage(undefined, "it-IT,it;q=0.9,de;q=0.8,en;q=0.7")).toBe("de");
    expect(chooseLanguage(undefined, "fr-FR,fr;q=0.9,de;q=0.8,en;q=0.7")).toBe("fr");
    expect(chooseLanguage(undefined, "en;q=0.5,de;q=0.9")).toBe("de");
    expect(chooseLanguage(undefined, "de;q=0,en")).toBe("en");
    expect(chooseLanguage(undefined, "de;q=0")).toBe("en");
    expect(chooseLanguage(undefined, "it,*;q=0.5")).toBe("en");
    expect(chooseLanguage(undefined, ";;;,,,q=x")).toBe("en");
  });

  it("fills placeholders (the completeness of every language: messages.test.ts)", () => {
    expect(t("de", "pageTitle", { amount: "12,5", token: "USDT" })).toBe("Zahlung 12,5 USDT");
    expect(t("en", "title", { token: "USDC" })).toBe("Pay with USDC");
    // One pass: a value that looks like a placeholder is not filled again.
    expect(t("en", "backToMerchant", { merchant: "{token}" })).toBe("Back to {token}");
  });
});

describe("payment URI of the QR code", () => {
  const USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
  const to = "0x1111111111111111111111111111111111111111";

  it("ERC20: an EIP-681 token transfer of the exact base units, chain id 1 for mainnet USDT", () => {
    const uri = paymentUri({ network: "USDT-ERC20", address: to, units: 12_500_000n, tokenContract: USDT });
    expect(uri).toBe(`ethereum:${USDT}@1/transfer?address=${to}&uint256=12500000`);
    expect(uriCarriesAmount(uri)).toBe(true);
  });

  it("ERC20 with another contract: no chain id (the wallet keeps its network)", () => {
    const other = "0x2222222222222222222222222222222222222222";
    expect(paymentUri({ network: "USDT-ERC20", address: to, units: 1n, tokenContract: other })).toBe(
      `ethereum:${other}/transfer?address=${to}&uint256=1`,
    );
  });

  it("TRON, and ERC20 without a token contract (simulator): the bare address", () => {
    const tron = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";
    const a = paymentUri({ network: "USDT-TRC20", address: tron, units: 5n, tokenContract: "TR7NHq" });
    expect(a).toBe(tron);
    expect(uriCarriesAmount(a)).toBe(false);
    expect(paymentUri({ network: "USDT-ERC20", address: to, units: 5n, tokenContract: undefined })).toBe(to);
  });

  // EIP-681's ABNF: request = "ethereum" ":" [ "pay-" ] target_address [ "@" chain_id ]
  // [ "/" function_name ] [ "?" parameters ]; target_address = "0x" 40*HEXDIG; chain_id = 1*DIGIT;
  // parameters = parameter *( "&" parameter ); parameter = key "=" value; a token transfer is
  // `transfer` with `address` (an ethereum_address) and `uint256` (a number: digits only here, no
  // exponent, so no wallet reads it as a float).
  const EIP681 =
    /^ethereum:(?:pay-)?(?<target>0x[0-9a-fA-F]{40})(?:@(?<chain>[0-9]+))?(?:\/(?<fn>[A-Za-z_][A-Za-z0-9_]*))?(?:\?(?<params>[A-Za-z0-9_]+=[^&=?#\s]+(?:&[A-Za-z0-9_]+=[^&=?#\s]+)*))?$/;
  function eip681(uri: string) {
    const m = EIP681.exec(uri);
    if (!m?.groups) return null;
    return {
      target: m.groups.target,
      chainId: m.groups.chain === undefined ? null : Number(m.groups.chain),
      fn: m.groups.fn ?? null,
      params: Object.fromEntries(
        (m.groups.params ?? "")
          .split("&")
          .filter(Boolean)
          .map((p) => p.split("=")),
      ),
    };
  }

  it("every EVM network of the registry: a grammatical EIP-681 transfer with the registry's chain id", () => {
    const evm = CURRENCY_TYPES.map(currencyOf).filter((x) => x.definition.family === "evm");
    expect(evm.length).toBeGreaterThan(3);
    for (const c of evm) {
      const uri = paymentUri({
        network: c.currencyType,
        address: to,
        units: 1_500_000n,
        tokenContract: c.defaultContract,
      });
      const parsed = eip681(uri);
      expect(parsed, `${c.currencyType}: ${uri}`).not.toBeNull();
      expect(parsed!.target).toBe(c.defaultContract);
      expect(parsed!.chainId).toBe(c.definition.chainId);
      expect(parsed!.fn).toBe("transfer");
      expect(Object.keys(parsed!.params).sort()).toEqual(["address", "uint256"]);
      expect(parsed!.params.address).toBe(to);
      expect(parsed!.params.uint256).toMatch(/^[0-9]+$/);
      expect(BigInt(parsed!.params.uint256)).toBe(1_500_000n * chainScale(c.currencyType));
    }
    // The grammar refuses what a wallet would misread.
    expect(eip681("ethereum:0x12/transfer?address=x")).toBeNull();
    expect(eip681(`ethereum:${USDT}@1/transfer?address=${to}&uint256=1 2`)).toBeNull();
  });

  it("the wallet link: EVM the EIP-681 URI itself; TRON Trust Wallet's documented send link", () => {
    expect(
      walletLink({ network: "USDT-ERC20", address: to, units: 12_500_000n, tokenContract: USDT }),
    ).toEqual({
      href: `ethereum:${USDT}@1/transfer?address=${to}&uint256=12500000`,
      label: "openInWallet",
    });
    const tron = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";
    const contract = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
    const link = walletLink({
      network: "USDT-TRC20",
      address: tron,
      units: 12_500_000n,
      tokenContract: contract,
    });
    expect(link?.label).toBe("openInTrustWallet");
    // developer.trustwallet.com, Deep Linking → Send Payment: https://link.trustwallet.com/send with
    // `asset` (Universal Asset ID `c{coin}_t{token}`, TRON's SLIP-44 coin 195), `address`, `amount`.
    const url = new URL(link!.href);
    expect(url.protocol).toBe("https:");
    expect(url.host).toBe("link.trustwallet.com");
    expect(url.pathname).toBe("/send");
    expect([...url.searchParams.keys()].sort()).toEqual(["address", "amount", "asset"]);
    expect(url.searchParams.get("asset")).toMatch(/^c195_tT[1-9A-HJ-NP-Za-km-z]{33}$/);
    expect(url.searchParams.get("asset")).toBe(`c195_t${contract}`);
    expect(url.searchParams.get("address")).toBe(tron);
    expect(url.searchParams.get("amount")).toBe("12.5");
    // Nothing to pay, or no token contract (the sandbox simulator): no link.
    expect(
      walletLink({ network: "USDT-TRC20", address: tron, units: 0n, tokenContract: contract }),
    ).toBeNull();
    expect(
      walletLink({ network: "USDT-TRC20", address: tron, units: 5n, tokenContract: undefined }),
    ).toBeNull();
    expect(
      walletLink({ network: "USDT-ERC20", address: to, units: 5n, tokenContract: undefined }),
    ).toBeNull();
  });
});

describe("return links to the shop", () => {
  it("only an absolute https URL (http in the sandbox) is rendered; javascript:, data: and the like never", () => {
    expect(safeReturnUrl("https://shop.example/thanks?o=1", "production")).toBe(
      "https://shop.example/thanks?o=1",
    );
    expect(safeReturnUrl("http://shop.example/", "sandbox")).toBe("http://shop.example/");
    expect(safeReturnUrl("http://shop.example/", "production")).toBeNull();
    for (const bad of [
      "javascript:alert(1)",
      "JAVASCRIPT:alert(1)",
      " javascript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "vbscript:msgbox",
      "//evil.example/",
      "/relative",
      "https://user:pw@shop.example/",
      "https://shop.example/\u0000",
      "",
      null,
      undefined,
    ]) {
      expect(safeReturnUrl(bad, "sandbox"), String(bad)).toBeNull();
    }
  });
});

const snap = (over: Partial<LiveSnapshot> = {}): LiveSnapshot => ({
  status: "pending",
  amount: 10_000_000n,
  actualBalance: 0n,
  confirmedAt: null,
  blockchainTxHash: null,
  detectedAmount: 0n,
  confirmations: { current: 0, required: 12 },
  ...over,
});

describe("page state and formatting", () => {
  const expiresAt = new Date("2026-01-01T12:00:00Z");
  const before = expiresAt.getTime() - 1;
  const after = expiresAt.getTime();

  it("maps status, received amount and deadline to the state shown", () => {
    expect(pageState(snap(), expiresAt, before)).toBe("waiting");
    expect(pageState(snap({ actualBalance: 1n }), expiresAt, before)).toBe("partial");
    expect(pageState(snap({ status: "confirmed", actualBalance: 11_000_000n }), expiresAt, after)).toBe(
      "paid",
    );
    expect(pageState(snap({ status: "failed" }), expiresAt, before)).toBe("expired");
    expect(pageState(snap({ status: "failed", actualBalance: 3n }), expiresAt, after)).toBe("partialExpired");
    // Past the deadline but not yet closed by the expiry job: already shown as expired.
    expect(pageState(snap(), expiresAt, after)).toBe("expired");
    expect(pageState(snap({ actualBalance: 3n }), expiresAt, after)).toBe("partialExpired");
  });

  it("a payment seen on the chain shows 'confirming n of m'; in time it stays so past the deadline", () => {
    const seen = { detectedAmount: 10_000_000n, confirmations: { current: 2, required: 12 } };
    expect(pageState(snap(seen), expiresAt, before)).toBe("confirming");
    expect(pageState(snap(seen), expiresAt, after)).toBe("confirming");
    // A partial payment still confirming: the customer is asked for the rest only.
    const part = snap({ detectedAmount: 4_000_000n, confirmations: { current: 1, required: 12 } });
    expect(pageState(part, expiresAt, before)).toBe("partial");
    expect(remainingAmount(part)).toBe(6_000_000n);
    expect(pageState(part, expiresAt, after)).toBe("confirming");
    // Confirmed in full: paid; closed as failed: what was credited decides.
    expect(
      pageState(snap({ ...seen, status: "confirmed", actualBalance: 10_000_000n }), expiresAt, after),
    ).toBe("paid");
    expect(pageState(snap({ status: "failed", detectedAmount: 0n }), expiresAt, after)).toBe("expired");
    const page = renderPayPage({
      lang: "en",
      merchant: { name: "Shop", logo: null },
      environment: "production",
      sessionId: "tx_1",
      network: "USDT-ERC20",
      address: "0xabc",
      orderId: null,
      expiresAt,
      now: before,
      qrSvg: null,
      qrUnits: null,
      nonce: "n",
      snapshot: snap(seen),
    });
    expect(page).toContain('data-panel="confirming">');
    expect(page).toMatch(
      /Payment detected — confirming <span data-field="confirmations">2<\/span> of <span data-field="required">12<\/span>/,
    );
  });

  it("amounts stay exact (only the decimal separator is localised); times in the language, in UTC", () => {
    expect(displayAmount(12_500_000n, "en")).toBe("12.5");
    expect(displayAmount(12_500_000n, "de")).toBe("12,5");
    expect(displayAmount(1n, "en")).toBe("0.000001");
    expect(displayAmount(123_456_789_012_345_678n, "en")).toBe("123456789012.345678");
    expect(utcText(new Date("2026-03-04T05:06:07.890Z"))).toBe("2026-03-04 05:06:07 UTC");
    const at = new Date("2026-03-04T05:06:07.890Z");
    expect(localTimeText(at, "en")).toBe("4 Mar 2026, 05:06 UTC");
    expect(localTimeText(at, "de")).toBe("4. März 2026, 05:06 UTC");
    expect(localTimeText(at, "zh")).toMatch(/^2026年3月4日/);
    for (const lang of LANGUAGES) expect(localTimeText(at, lang), lang).toMatch(/UTC/);
    expect(displayAmount(12_500_000n, "fr")).toBe("12,5");
    expect(displayAmount(12_500_000n, "zh")).toBe("12.5");
    expect(countdownText(29 * 60_000 + 59_001)).toBe("30:00");
    expect(countdownText(61_000)).toBe("1:01");
    expect(countdownText(3 * 3600_000 + 5 * 60_000)).toBe("3:05:00");
    expect(countdownText(-5)).toBe("0:00");
  });

  it("renders every value escaped, and no QR code, instructions or script in an end state", () => {
    const base = {
      lang: "en" as const,
      merchant: { name: "Shop", logo: null },
      environment: "sandbox" as const,
      sessionId: "tx_1",
      network: "USDT-TRC20" as const,
      address: "T<b>addr",
      orderId: `<img src=x onerror="alert(1)">`,
      expiresAt,
      now: before,
      qrSvg: "<svg></svg>",
      qrUnits: null,
      nonce: "n0nce",
    };
    const open = renderPayPage({ ...base, snapshot: snap() });
    expect(open).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(open).not.toContain("<img");
    expect(open).toContain("T&lt;b&gt;addr");
    expect(open).toContain('<script nonce="n0nce">');
    expect(open).toContain('<style nonce="n0nce">');
    expect(open).toContain('<meta http-equiv="refresh" content="30">');
    expect(open).toMatch(/<div class="panel panel-waiting" data-panel="waiting">/);
    const paid = renderPayPage({
      ...base,
      qrSvg: null,
      snapshot: snap({ status: "confirmed", actualBalance: 10_000_000n, blockchainTxHash: "0xabc" }),
    });
    expect(paid).toMatch(/<div class="panel panel-paid" data-panel="paid">/);
    expect(paid).toMatch(/<section id="instructions"[^>]* hidden>/);
    expect(paid).not.toContain("<script");
    expect(paid).not.toContain("http-equiv");
    expect(paid).toContain("0xabc");
  });
});

/** A subscriber that records what the hub tells it. */
function recorder(sessionId: string, alive = () => true) {
  const seen: { changes: LiveSnapshot[]; heartbeats: number; ended: number } = {
    changes: [],
    heartbeats: 0,
    ended: 0,
  };
  const sub: LiveSubscriber = {
    sessionId,
    onChange: (s) => seen.changes.push(s),
    onHeartbeat: () => seen.heartbeats++,
    alive,
    onEnd: () => seen.ended++,
  };
  return { sub, seen };
}

describe("live status hub", () => {
  function hubWith(
    rows: Map<string, LiveSnapshot>,
    opts: { heartbeatMs?: number; fail?: () => boolean } = {},
  ) {
    let now = 0;
    const loads: string[][] = [];
    const errors: unknown[] = [];
    const hub = new LiveStatusHub({
      load: async (ids) => {
        loads.push([...ids].sort());
        if (opts.fail?.()) throw new Error("db down");
        return new Map([...rows].filter(([id]) => ids.includes(id)));
      },
      intervalMs: 60_000, // the tests drive polls with pollNow()
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      now: () => now,
      onError: (e) => errors.push(e),
    });
    return { hub, loads, errors, advance: (ms: number) => (now += ms) };
  }

  it("reads every watched session with ONE load per poll and fans out only changes", async () => {
    const rows = new Map([
      ["a", snap()],
      ["b", snap()],
    ]);
    const { hub, loads } = hubWith(rows);
    const a1 = recorder("a");
    const a2 = recorder("a");
    const b = recorder("b");
    for (const r of [a1, a2, b]) hub.subscribe(r.sub, snap());
    expect(hub.size).toBe(3);
    expect(hub.running).toBe(true);

    await hub.pollNow();
    expect(loads).toEqual([["a", "b"]]);
    expect(a1.seen.changes).toEqual([]); // nothing changed

    rows.set("a", snap({ actualBalance: 4_000_000n }));
    await hub.pollNow();
    expect(loads).toHaveLength(2);
    expect(a1.seen.changes.map((s) => s.actualBalance)).toEqual([4_000_000n]);
    expect(a2.seen.changes.map((s) => s.actualBalance)).toEqual([4_000_000n]);
    expect(b.seen.changes).toEqual([]);

    await hub.pollNow(); // same data again: no repeated event
    expect(a1.seen.changes).toHaveLength(1);

    const confirmedAt = new Date("2026-01-01T00:00:00Z");
    rows.set(
      "a",
      snap({ status: "confirmed", actualBalance: 10_000_000n, confirmedAt, blockchainTxHash: "h" }),
    );
    await Promise.all([hub.pollNow(), hub.pollNow()]); // concurrent calls share one read
    expect(loads).toHaveLength(4);
    expect(a1.seen.changes.at(-1)).toMatchObject({ status: "confirmed", blockchainTxHash: "h" });
  });

  it("a subscriber starts from its own initial snapshot", async () => {
    const rows = new Map([["a", snap({ actualBalance: 1n })]]);
    const { hub } = hubWith(rows);
    const late = recorder("a");
    const early = recorder("a");
    hub.subscribe(late.sub, snap({ actualBalance: 1n }));
    hub.subscribe(early.sub, snap());
    await hub.pollNow();
    expect(late.seen.changes).toEqual([]);
    expect(early.seen.changes).toHaveLength(1);
  });

  it("heartbeats at most once per heartbeat interval", async () => {
    const { hub, advance } = hubWith(new Map([["a", snap()]]), { heartbeatMs: 15_000 });
    const r = recorder("a");
    hub.subscribe(r.sub, snap());
    await hub.pollNow();
    expect(r.seen.heartbeats).toBe(0);
    advance(14_999);
    await hub.pollNow();
    expect(r.seen.heartbeats).toBe(0);
    advance(1);
    await hub.pollNow();
    await hub.pollNow();
    expect(r.seen.heartbeats).toBe(1);
  });

  it("stops its timer when the last subscriber leaves; ends dead connections; survives read errors", async () => {
    let failing = true;
    const { hub, loads, errors } = hubWith(new Map([["a", snap()]]), { fail: () => failing });
    const r = recorder("a");
    const unsubscribe = hub.subscribe(r.sub, snap());
    await hub.pollNow();
    expect(errors).toHaveLength(1);
    failing = false;
    await hub.pollNow();
    expect(loads).toHaveLength(2);
    unsubscribe();
    expect(hub.running).toBe(false);
    await hub.pollNow();
    expect(loads).toHaveLength(2); // nothing watched: no query

    let alive = true;
    const d = recorder("a", () => alive);
    hub.subscribe(d.sub, snap());
    alive = false;
    await hub.pollNow();
    expect(d.seen.ended).toBe(1);
    expect(hub.size).toBe(0);
    expect(hub.running).toBe(false);
  });

  it("close() ends every connection; later subscriptions end at once", () => {
    const { hub } = hubWith(new Map());
    const r1 = recorder("a");
    const r2 = recorder("b");
    hub.subscribe(r1.sub, snap());
    hub.subscribe(r2.sub, snap());
    hub.close();
    expect([r1.seen.ended, r2.seen.ended]).toEqual([1, 1]);
    expect(hub.running).toBe(false);
    const r3 = recorder("c");
    hub.subscribe(r3.sub, snap());
    expect(r3.seen.ended).toBe(1);
    expect(hub.size).toBe(0);
  });

  it("polls on its own interval while subscribed", async () => {
    const rows = new Map([["a", snap()]]);
    const hub = new LiveStatusHub({
      load: async () => rows,
      intervalMs: 5,
    });
    const r = recorder("a");
    const changed = new Promise<LiveSnapshot>((resolve) => {
      r.sub.onChange = resolve;
    });
    hub.subscribe(r.sub, snap());
    rows.set("a", snap({ status: "failed" }));
    expect((await changed).status).toBe("failed");
    hub.close();
  });
});

describe("logo files are recognised by their bytes", () => {
  it("PNG, JPEG and WebP with their sizes; SVG, HTML, GIF, truncated or oversized files are not logos", () => {
    expect(sniffLogo(makePng(120, 40))).toEqual({ contentType: "image/png", width: 120, height: 40 });
    expect(sniffLogo(jpegHeader(300, 100))).toEqual({ contentType: "image/jpeg", width: 300, height: 100 });
    expect(sniffLogo(webpHeader(64, 32))).toEqual({ contentType: "image/webp", width: 64, height: 32 });
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    expect(sniffLogo(svg)).toBeNull();
    expect(sniffLogo(Buffer.from("<!doctype html><script>alert(1)</script>"))).toBeNull();
    expect(sniffLogo(Buffer.from("GIF89a\x01\x00\x01\x00"))).toBeNull();
    expect(sniffLogo(makePng(10, 10).subarray(0, 20))).toBeNull();
    expect(checkLogo(new Uint8Array())).toEqual({ error: { field: "logo", message: "is empty" } });
    expect(checkLogo(makePng(4096, 1))).toMatchObject({ error: { field: "logo" } });
    const big = Buffer.concat([makePng(1, 1), Buffer.alloc(256 * 1024)]);
    expect(checkLogo(big)).toMatchObject({ error: { message: expect.stringContaining("256 KiB") } });
  });

  it("display names: trimmed, 1–80 characters, no control or bidi characters", () => {
    expect(parseDisplayName("  Acme Shop  ")).toEqual({ value: "Acme Shop" });
    expect(parseDisplayName("商店".repeat(40))).toEqual({ value: "商店".repeat(40) });
    for (const bad of [
      "",
      "   ",
      "a".repeat(81),
      "Acme\u0000",
      "Acme\nShop",
      "Acme\u202eShop",
      "Acme\u200bShop",
    ])
      expect(parseDisplayName(bad), JSON.stringify(bad)).toHaveProperty("error.field", "displayName");
  });
});
