import type { Config } from "../config/config.js";
import type { ResolvedSecrets } from "../config/secrets.js";
import { HttpSignerClient } from "./http-client.js";
import { createLocalSigner } from "./local-signer.js";
import type { Signer } from "./protocol.js";

/**
 * The signer a process role uses: `serve` runs the signer in-process (it resolves the mnemonic
 * for private keys; no other role but `signer` does); `worker` talks to the signer role at
 * `SIGNER_URL` with `INTERNAL_SHARED_SECRET`, or has none; `api` and `migrate` never sign.
 */
export async function createRoleSigner(
  config: Config,
  role: string,
  secrets: ResolvedSecrets,
): Promise<Signer | null> {
  if (role === "serve") {
    return config.sending.signerUrl
      ? new HttpSignerClient({ url: config.sending.signerUrl, secret: secrets.INTERNAL_SHARED_SECRET })
      : createLocalSigner(config);
  }
  if (role === "worker" && config.sending.signerUrl) {
    return new HttpSignerClient({ url: config.sending.signerUrl, secret: secrets.INTERNAL_SHARED_SECRET });
  }
  return null;
}
