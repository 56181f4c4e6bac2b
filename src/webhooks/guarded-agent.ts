import { isIP, type LookupFunction, type Socket } from "node:net";
import { Agent, buildConnector } from "undici";
import { checkAddress, inAllowList } from "./ip-addresses.js";
import {
  PortNotAllowedError,
  type ResolvedAddress,
  resolveAllowed,
  SsrfBlockedError,
  type SsrfPolicy,
} from "./ssrf.js";

// ── the guarded dispatcher (delivery time) ───────────────────────────────────────────────────

/**
 * A `net` lookup that resolves through the policy and refuses forbidden addresses (and, given the
 * port it is for, a port the host is not exempt on: `net` does not tell a lookup the port).
 */
export function guardedLookup(policy: SsrfPolicy, port?: number): LookupFunction {
  return (hostname, options, callback) => {
    resolveAllowed(hostname, policy, port).then(
      (addresses) => {
        const family = typeof options === "object" ? options.family : options;
        const usable =
          family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) {
          const err = Object.assign(new Error(`no IPv${family} address for ${hostname}`), {
            code: "ENOTFOUND",
          });
          (callback as (e: Error) => void)(err);
          return;
        }
        if (typeof options === "object" && options.all) {
          (callback as (e: null, a: ResolvedAddress[]) => void)(null, usable);
        } else {
          const first = usable[0] as ResolvedAddress;
          (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
        }
      },
      (err: Error) => (callback as (e: Error) => void)(err),
    );
  };
}

export interface GuardedAgentOptions {
  policy: SsrfPolicy;
  connectTimeoutMs: number;
  /** Keep-alive connections per origin (deliveries to one merchant reuse them). */
  connections?: number;
}

/**
 * The undici dispatcher for deliveries: a port outside `WEBHOOK_ALLOWED_PORTS` is refused before
 * anything is resolved or dialled unless `SSRF_ALLOW_CIDRS` exempts the host (then its lookup
 * demands that every address be exempt); every connection goes through the guarded lookup; IP
 * literal hosts (which `net` never looks up) are checked before dialling; the remote address of
 * every new socket is checked again. No proxy: this Agent ignores HTTP(S)_PROXY.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const { policy } = options;
  const base = buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup(policy) });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.replace(/^\[|\]$/g, "");
    const port = Number(opts.port) || (opts.protocol === "https:" ? 443 : 80);
    const portRefused = !policy.ports.has(port);
    if (portRefused && policy.allow.length === 0) {
      callback(new PortNotAllowedError(port, policy), null);
      return;
    }
    if (isIP(host) !== 0) {
      const v = checkAddress(host, policy.allow);
      if (!v.allowed) {
        callback(new SsrfBlockedError(`address ${host} is not allowed (${v.reason})`), null);
        return;
      }
      if (portRefused && !inAllowList(host, policy.allow)) {
        callback(new PortNotAllowedError(port, policy), null);
        return;
      }
    }
    // Only exempt hosts get here with a refused port (development and tests): a connector whose
    // lookup knows the port. Allowed ports share the one connector (and its TLS session cache).
    const connector = portRefused
      ? buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup(policy, port) })
      : base;
    connector(opts, (err, socket) => {
      if (err || !socket) {
        callback(err ?? new Error("connect failed"), null);
        return;
      }
      const remote = (socket as Socket).remoteAddress;
      const v = remote ? checkAddress(remote, policy.allow) : { allowed: false as const, reason: "unknown" };
      if (!v.allowed) {
        socket.destroy();
        callback(new SsrfBlockedError(`connected address ${remote} is not allowed (${v.reason})`), null);
        return;
      }
      if (portRefused && !inAllowList(remote as string, policy.allow)) {
        socket.destroy();
        callback(new PortNotAllowedError(port, policy), null);
        return;
      }
      callback(null, socket);
    });
  };
  return new Agent({
    connect,
    connections: options.connections ?? 64,
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
  });
}
