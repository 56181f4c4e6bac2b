import type { Config } from "../config/config.js";
import type { ResolvedSecrets } from "../config/secrets.js";
import type { Db } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";
import { HttpSignerClient } from "./http-client.js";
import { createLocalSigner, outflowCapped } from "./local-signer.js";
import type { Signer } from "./protocol.js";

/**
 * The signer a process role uses: `serve` runs the signer in-process (it resolves the mnemonic
 * for private keys; no other role but `signer` does; its policy reads `db`); `worker` talks to
 * the signer role at `SIGNER_URL` with `INTERNAL_SHARED_SECRET`, or has none; `api` and `migrate`
 * never sign (and do not hold the secret: docs/decisions/security.md).
 */
export async function createRoleSigner(
  config: Config,
  role: string,
  secrets: ResolvedSecrets,
  deps: { db: Db; logger: Logger; registry?: Registry },
): Promise<Signer | null> {
  const remote = (url: string) => {
    if (!secrets.INTERNAL_SHARED_SECRET) throw new Error(`the ${role} role has no INTERNAL_SHARED_SECRET`);
    return new HttpSignerClient({ url, secret: secrets.INTERNAL_SHARED_SECRET });
  };
  if (role === "serve") {
    if (config.sending.signerUrl) return remote(config.sending.signerUrl);
    // Embedded, the cap shares the process of the api (whoever takes that process holds the
    // mnemonic: no cap helps); it still bounds a compromise of the database alone. Not required.
    if (config.production && !outflowCapped(config.sending.outflowCap))
      deps.logger.warn(
        { alert: "signer_outflow_uncapped" },
        "serve signs without an outflow cap: set SIGNER_MAX_OUTFLOW_PER_HOUR and SIGNER_MAX_OUTFLOW_PER_DAY",
      );
    return createLocalSigner(config, deps.db, deps.logger, deps.registry ? { registry: deps.registry } : {});
  }
  if (role === "worker" && config.sending.signerUrl) return remote(config.sending.signerUrl);
  return null;
}
