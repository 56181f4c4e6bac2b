import type { Config } from "../config/config.js";
import { resolveSecrets } from "../config/secrets.js";
import { systemClock } from "../lib/clock.js";
import { createLogger } from "../observability/logger.js";
import { createLocalSigner } from "./local-signer.js";
import { type RunningSignerServer, startSignerServer } from "./server.js";

/**
 * `stablegate signer`: the one process that holds the mnemonic. It opens no database and listens
 * on `SIGNER_HOST:SIGNER_PORT` (keep it on a private network); workers reach it with `SIGNER_URL`
 * and `INTERNAL_SHARED_SECRET`. `serve` runs the same signer in-process instead.
 */
export async function startSignerRole(config: Config): Promise<RunningSignerServer> {
  const logger = createLogger(config.logLevel);
  const secrets = await resolveSecrets(config);
  const signer = await createLocalSigner(config);
  const server = await startSignerServer({
    signer,
    secret: secrets.INTERNAL_SHARED_SECRET,
    host: config.sending.signerHost,
    port: config.sending.signerPort,
    clock: systemClock,
    logger,
  });
  logger.info({ url: server.url }, "stablegate signer listening");
  return server;
}
