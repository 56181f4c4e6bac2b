// The load of the upgrade check (scripts/ci-upgrade.sh, docs/decisions/upgrades.md): what a shop and
// its payers do against the api while the new release's migrations run. Node built-ins only (it runs
// from this tree against the previous release's api as well as this one's).
//
//   node scripts/ci-upgrade-load.mjs load   until STOP_FILE exists: workers repeat one round each
//   node scripts/ci-upgrade-load.mjs pre    one session on the first target, kept in STATE_FILE
//   node scripts/ci-upgrade-load.mjs post   that session and a new one read on every target
//
// Configuration in the environment: TARGETS (JSON [{ "name", "base", "from"? }]: `base` a sandbox
// base URL; a target with `from` joins the load once PHASE_FILE names that phase), API_KEY (a sandbox
// key of the merchant), PHASE_FILE, STOP_FILE, STATE_FILE, OUT (the summary, JSON; the first failure
// is written to `<OUT>.failed` as it happens), WORKERS.
//
// A round: account, balance, the transactions list, a checkout session created with an
// Idempotency-Key and the same request sent again (the stored answer, replayed), the session read
// back, its hosted page and the first event of its live status. Every request must get its expected
// status (200/201) and content; anything else — a 5xx, a 4xx, a refused connection, 10 s without an
// answer (REQUEST_TIMEOUT_MS) — is a failure. Each request is counted under the phase that was current when it started.
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const TARGETS = JSON.parse(env("TARGETS"));
const API_KEY = env("API_KEY");
// A request unanswered this long failed: a payer waiting on a migration's lock is an outage too.
const TIMEOUT_MS = Number(process.env.REQUEST_TIMEOUT_MS ?? 10_000);

const phase = () => {
  try {
    return readFileSync(env("PHASE_FILE"), "utf8").trim() || "?";
  } catch {
    return "?";
  }
};

/** Every request: [phase, target, op, status (0: no answer), ms, ok]. */
const records = [];
const failures = [];

class Failed extends Error {}

async function request(target, op, path, { method = "GET", headers = {}, body, expect, check } = {}) {
  const at = phase();
  const started = performance.now();
  let status = 0;
  let detail = "";
  let result;
  try {
    const res = await fetch(`${target.base}${path}`, {
      method,
      headers: {
        ...(path.startsWith("/pay/") ? {} : { apikey: API_KEY }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    status = res.status;
    const text = op === "pay-events" ? await firstEvent(res) : await res.text();
    if (status !== expect) detail = `expected ${expect}: ${text.slice(0, 300)}`;
    else {
      const problem = check?.(text, res);
      if (typeof problem === "string") detail = problem;
      else result = { text, res };
    }
  } catch (err) {
    detail = `no answer: ${err?.cause?.code ?? err?.name ?? ""} ${err?.message ?? err}`;
  }
  const ms = Math.round(performance.now() - started);
  const ok = detail === "";
  records.push([at, target.name, op, status, ms, ok]);
  if (!ok) {
    const failure = { phase: at, target: target.name, op, path, status, ms, detail };
    failures.push(failure);
    // The first one at once (`<OUT>.failed`): the script stops the upgrade there, not at the end.
    if (failures.length === 1 && process.env.OUT)
      writeFileSync(`${process.env.OUT}.failed`, JSON.stringify(failure));
    throw new Failed(detail);
  }
  return result;
}

/** The live status stream: read until its first `event: status`, then hang up. */
async function firstEvent(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (!text.includes("event: status")) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text;
}

const json = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};
const dataCheck = (test) => (text) => {
  const body = json(text);
  if (body?.success !== true) return `not a success envelope: ${text.slice(0, 300)}`;
  return test(body.data);
};

const NEW_SESSION = { amount: "12.5", currencyType: "USDT-TRC20", expiresInMinutes: 60 };

async function createSession(target, body = NEW_SESSION) {
  const key = randomUUID();
  const sent = { ...body, orderId: `upgrade-${key.slice(0, 8)}` };
  const first = await request(target, "session-create", "/checkout/session", {
    method: "POST",
    headers: { "idempotency-key": key },
    body: sent,
    expect: 201,
    check: dataCheck((d) => (typeof d?.id === "string" && d.walletAddress ? undefined : "no id/address")),
  });
  const created = json(first.text).data;
  await request(target, "session-replay", "/checkout/session", {
    method: "POST",
    headers: { "idempotency-key": key },
    body: sent,
    expect: 201,
    check: (text, res) =>
      res.headers.get("idempotent-replayed") !== "true"
        ? "the same Idempotency-Key was not replayed"
        : json(text)?.data?.id !== created.id
          ? "the replay answered another session"
          : undefined,
  });
  return created;
}

async function readSession(target, session) {
  await request(target, "session-get", `/checkout/session/${session.id}`, {
    expect: 200,
    check: dataCheck((d) =>
      d?.id !== session.id ||
      d.walletAddress !== session.walletAddress ||
      d.amount !== session.amount ||
      d.status !== "pending"
        ? `not the session created: ${JSON.stringify(d).slice(0, 300)}`
        : undefined,
    ),
  });
  await request(target, "pay-page", `/pay/${session.id}`, {
    expect: 200,
    check: (text) =>
      text.includes(session.walletAddress) ? undefined : "the hosted page does not show the address",
  });
  await request(target, "pay-events", `/pay/${session.id}/events`, {
    expect: 200,
    check: (text) => (text.includes('"status":"pending"') ? undefined : `no pending status: ${text}`),
  });
}

async function round(creator, reader) {
  await request(creator, "account", "/api/v1/public/account", {
    expect: 200,
    check: dataCheck((d) => (d?.environment === "sandbox" ? undefined : "not the sandbox account")),
  });
  await request(reader, "balance", "/api/v1/public/balance", {
    expect: 200,
    check: dataCheck((d) => (Array.isArray(d) && d.length > 0 ? undefined : "no balances")),
  });
  await request(reader, "transactions", "/api/v1/public/transactions?limit=20", {
    expect: 200,
    check: dataCheck((d) => (Array.isArray(d) ? undefined : "no list")),
  });
  const session = await createSession(creator);
  await readSession(reader, session);
}

async function load() {
  const stopFile = env("STOP_FILE");
  const workers = Number(process.env.WORKERS ?? 3);
  let rounds = 0;
  const seen = new Set(); // the phases met so far: a target joins at its phase and stays
  const worker = async (w) => {
    for (let i = 0; !existsSync(stopFile); i++) {
      const now = phase();
      const active = TARGETS.filter((t) => !t.from || t.from === now || seen.has(t.from));
      seen.add(now);
      // Created on one api, read on another (when several serve).
      const creator = active[(i + w) % active.length];
      const reader = active[(i + w + 1) % active.length];
      try {
        await round(creator, reader);
        rounds++;
      } catch (err) {
        if (!(err instanceof Failed)) throw err;
        await new Promise((r) => setTimeout(r, 200)); // a failed round: counted, not spun on
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  summarise({ rounds });
}

function summarise(extra) {
  const phases = [];
  for (const [at, target, op, status, ms, ok] of records) {
    let p = phases.find((x) => x.phase === at);
    if (!p) {
      p = { phase: at, requests: 0, failed: 0, maxMs: 0, ms: [], byOp: {}, byTarget: {} };
      phases.push(p);
    }
    p.requests++;
    if (!ok) p.failed++;
    p.maxMs = Math.max(p.maxMs, ms);
    p.ms.push(ms);
    p.byOp[op] = (p.byOp[op] ?? 0) + 1;
    p.byTarget[target] = (p.byTarget[target] ?? 0) + 1;
    if (status >= 500) p.serverErrors = (p.serverErrors ?? 0) + 1;
  }
  for (const p of phases) {
    p.ms.sort((a, b) => a - b);
    p.p95Ms = p.ms[Math.min(p.ms.length - 1, Math.floor(p.ms.length * 0.95))] ?? 0;
    delete p.ms;
  }
  const summary = { ...extra, requests: records.length, failed: failures.length, phases, failures };
  writeFileSync(env("OUT"), `${JSON.stringify(summary, null, 2)}\n`);
  for (const p of phases) {
    const ops = Object.entries(p.byOp)
      .map(([op, n]) => `${op} ${n}`)
      .join(", ");
    const targets = Object.entries(p.byTarget)
      .map(([t, n]) => `${t} ${n}`)
      .join(", ");
    console.log(
      `  ${p.phase.padEnd(14)} ${String(p.requests).padStart(5)} requests, ${p.failed} failed, ` +
        `p95 ${p.p95Ms} ms, max ${p.maxMs} ms  [${targets}]  (${ops})`,
    );
  }
  for (const f of failures.slice(0, 20)) console.log(`  FAILED ${JSON.stringify(f)}`);
  if (failures.length > 20) console.log(`  … and ${failures.length - 20} more failures (${env("OUT")})`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

/** Before the upgrade: one session on the previous release, remembered. */
async function pre() {
  const session = await createSession(TARGETS[0]);
  await readSession(TARGETS[0], session);
  writeFileSync(env("STATE_FILE"), JSON.stringify({ before: session }));
  console.log(`  session ${session.id} created on ${TARGETS[0].name} before the upgrade`);
}

/**
 * After it, with every api up: the session from before read on each; a session priced in fiat with
 * a return address (the new columns set) created on the api named `new` and read on each.
 */
async function post() {
  const { before } = JSON.parse(readFileSync(env("STATE_FILE"), "utf8"));
  for (const t of TARGETS) await readSession(t, before);
  const newer = TARGETS.find((t) => t.name === "new") ?? TARGETS[TARGETS.length - 1];
  const priced = await createSession(newer, {
    priceAmount: "10",
    priceCurrency: "EUR",
    currencyType: "USDT-TRC20",
    successUrl: "http://shop.example/thanks",
    expiresInMinutes: 60,
  });
  for (const t of TARGETS) await readSession(t, priced);
  console.log(
    `  session ${before.id} (made before the upgrade) and ${priced.id} (made by ${newer.name}, priced ` +
      `10 EUR = ${priced.amount} USDT) answer the same on ${TARGETS.map((t) => t.name).join(", ")}`,
  );
}

const mode = process.argv[2];
const run = { load, pre, post }[mode];
if (!run) {
  console.error("usage: ci-upgrade-load.mjs load|pre|post");
  process.exit(2);
}
await run().catch((err) => {
  if (!(err instanceof Failed)) throw err;
  for (const f of failures) console.log(`  FAILED ${JSON.stringify(f)}`);
  process.exitCode = 1;
});
