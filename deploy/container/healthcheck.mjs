// The image's HEALTHCHECK (Containerfile): the liveness of whatever role the container runs, found
// from the stablegate process's own command line (PID 1, or the child of an init such as
// `--init`), so that one image serves every role. No curl in the image: Node's fetch.
//   serve, api  GET /healthz on PORT (the production listener)
//   signer      GET /healthz on SIGNER_PORT
//   worker      no listener: the process being alive is all there is to check
//   anything else (migrate, operator commands) runs once and passes
import { readdirSync, readFileSync } from "node:fs";

function role() {
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const main = argv.findIndex((a) => a.endsWith("/dist/main.js"));
    if (main >= 0 && Number(pid) !== process.pid) return argv[main + 1] || "serve";
  }
  return undefined;
}

/** A wildcard bind address is reached through loopback. */
function local(host) {
  if (!host || host === "0.0.0.0" || host === "::" || host === "[::]") return "127.0.0.1";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

async function check(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
}

const env = process.env;
const r = role();
try {
  if (r === undefined) throw new Error("no stablegate process is running");
  if (r === "serve" || r === "api") await check(`http://${local(env.HOST)}:${env.PORT || 8080}/healthz`);
  else if (r === "signer") await check(`http://${local(env.SIGNER_HOST)}:${env.SIGNER_PORT || 8090}/healthz`);
  process.exit(0);
} catch (err) {
  console.error(`unhealthy (${r ?? "no role"}): ${err instanceof Error ? err.message : err}`);
  process.exit(1);
}
