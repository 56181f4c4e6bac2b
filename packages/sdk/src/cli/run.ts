import { StablegateError } from "../errors.js";
import { CURRENCY_TYPES } from "../generated/enums.js";
import { describeApiError } from "./describe.js";
import { ListenError, listen } from "./listen.js";
import { CONNECTION_OPTIONS, connection, parseArgs, parsed, UsageError } from "./options.js";
import { type Currency, TRIGGER_EVENTS, TriggerError, type TriggerEvent, trigger } from "./trigger.js";

const CONNECTION_HELP = `Connection (options, else the environment variables):
  --api-key <ak_…>        STABLEGATE_API_KEY
  --api-secret <sk_…>     STABLEGATE_API_SECRET
  --environment <env>     sandbox | production (default: from the key's prefix)
  --base-url <url>        STABLEGATE_BASE_URL (default: http://localhost:8081 for the sandbox,
                          http://localhost:8080 for production)
  -h, --help              this help`;

export const USAGE = `stablegate-dev: local development with a stablegate gateway

Usage:
  stablegate-dev listen --forward-to <url> [connection options]
  stablegate-dev trigger <event> [options] [connection options]
  stablegate-dev <command> --help

Commands:
  listen    forward every webhook of this environment to a local URL, as it is created
  trigger   create the real sandbox objects that send a webhook event

${CONNECTION_HELP}`;

export const LISTEN_USAGE = `Usage: stablegate-dev listen --forward-to <url> [connection options]

Streams every new webhook delivery of the key's environment (GET /api/v1/webhook/stream) and POSTs
each one to --forward-to with the exact body bytes and the signed headers a real delivery carries,
so the receiver verifies it with the environment's webhook secret. One line per event: time, event,
transaction id, the local answer's status and latency, the webhook event id. A dropped connection
is reopened with backoff and Last-Event-ID: no event is missed or forwarded twice. A stream the
gateway ends at its maximum lifetime is reopened at once; one it ends because the key pair lost its
access (revoked, rotated, the member it acts for removed or demoted) stops the command (exit 1).

Options:
  --forward-to <url>      the local receiver, e.g. http://localhost:3000/hooks (required)
  --last-event-id <id>    start after this webhook event instead of now

${CONNECTION_HELP}`;

export const TRIGGER_USAGE = `Usage: stablegate-dev trigger <event> [options] [connection options]

Creates, through the public API of the sandbox, the real objects that cause <event>, and waits for it:
  deposit.confirmed      a checkout session, paid in full from the sandbox faucet
  deposit.failed         a checkout session paid in part, left to expire (it waits for the expiry:
                         --expires-in-minutes, default 5, the gateway's default minimum)
  withdrawal.completed   a withdrawal under the auto-approve threshold (approved if it waits)
  withdrawal.failed      a withdrawal to the sandbox failure address
  withdrawal.pending     a withdrawal above the auto-approve threshold (default 1000), left pending
  withdrawal.rejected    the same, then rejected
Withdrawals first top the sandbox balance up from the faucet when it is short (a deposit, which sends
its own deposit.confirmed). Sandbox only.

Options:
  --currency <type>           a currency type the gateway enables (GET /api/v1/public/currencies;
                              default: the first of them), one of: ${CURRENCY_TYPES.join(", ")}
  --amount <n>                the deposit or withdrawal amount, in the token (USDT, USDC)
  --expires-in-minutes <n>    deposit.failed: the session's lifetime (fractions allowed)

${CONNECTION_HELP}`;

export interface RunIo {
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  out(line: string): void;
  err(line: string): void;
  fetch?: typeof fetch;
}

/** Runs the command line; returns the exit code (0 done, 1 failed, 2 bad usage). */
export async function run(argv: string[], io: RunIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined) throw new UsageError("a command is required: listen | trigger (--help)");
    if (command === "--help" || command === "-h" || command === "help") {
      io.out(USAGE);
      return 0;
    }
    if (command === "listen") return await listenCommand(rest, io);
    if (command === "trigger") return await triggerCommand(rest, io);
    throw new UsageError(`unknown command ${JSON.stringify(command)} (listen, trigger; --help)`);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`stablegate-dev: ${err.message}`);
      return 2;
    }
    if (err instanceof ListenError || err instanceof TriggerError) {
      io.err(`stablegate-dev: ${err.message}`);
      return 1;
    }
    if (err instanceof StablegateError) {
      io.err(`stablegate-dev: ${describeApiError(command ?? "", err)}`);
      return 1;
    }
    throw err;
  }
}

async function listenCommand(args: string[], io: RunIo): Promise<number> {
  const { values, positionals } = parsed(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...CONNECTION_OPTIONS,
        "forward-to": { type: "string" },
        "last-event-id": { type: "string" },
      },
    }),
  );
  if (values.help) {
    io.out(LISTEN_USAGE);
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError(`listen takes no argument ${JSON.stringify(positionals[0])}`);
  const forwardTo = values["forward-to"];
  if (!forwardTo) throw new UsageError("listen needs --forward-to <url>");
  let target: URL;
  try {
    target = new URL(forwardTo);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${JSON.stringify(forwardTo)}`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new UsageError("--forward-to must be an http or https URL");
  }
  const c = connection(values, io.env);
  await listen({
    ...c,
    forwardTo: target.toString(),
    lastEventId: values["last-event-id"],
    signal: io.signal,
    onLine: io.out,
    onStatus: io.err,
    ...(io.fetch ? { fetch: io.fetch } : {}),
  });
  return 0;
}

async function triggerCommand(args: string[], io: RunIo): Promise<number> {
  const { values, positionals } = parsed(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...CONNECTION_OPTIONS,
        currency: { type: "string" },
        amount: { type: "string" },
        "expires-in-minutes": { type: "string" },
      },
    }),
  );
  if (values.help) {
    io.out(TRIGGER_USAGE);
    return 0;
  }
  const [event, extra] = positionals;
  if (!event) throw new UsageError(`trigger needs an event: ${TRIGGER_EVENTS.join(" | ")}`);
  if (extra !== undefined) throw new UsageError(`trigger takes one event, not also ${JSON.stringify(extra)}`);
  if (!(TRIGGER_EVENTS as readonly string[]).includes(event)) {
    throw new UsageError(`unknown event ${JSON.stringify(event)}: ${TRIGGER_EVENTS.join(" | ")}`);
  }
  const currency = values.currency;
  if (currency !== undefined && !(CURRENCY_TYPES as readonly string[]).includes(currency)) {
    throw new UsageError(
      `--currency must be one of ${CURRENCY_TYPES.join(" | ")}, not ${JSON.stringify(currency)}`,
    );
  }
  const amount = positiveNumber("--amount", values.amount);
  const expiresInMinutes = positiveNumber("--expires-in-minutes", values["expires-in-minutes"]);
  if (expiresInMinutes !== undefined && event !== "deposit.failed") {
    throw new UsageError("--expires-in-minutes applies to deposit.failed only");
  }
  const c = connection(values, io.env);
  if (c.environment !== "sandbox") {
    throw new UsageError("trigger runs only against the sandbox: use a sandbox key (ak_test_…)");
  }
  await trigger({
    ...c,
    event: event as TriggerEvent,
    currency: currency as Currency | undefined,
    amount,
    expiresInMinutes,
    signal: io.signal,
    onLine: io.out,
    ...(io.fetch ? { fetch: io.fetch } : {}),
  });
  return 0;
}

function positiveNumber(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(n) || n <= 0) {
    throw new UsageError(`${name} must be a positive number, not ${JSON.stringify(raw)}`);
  }
  return n;
}
