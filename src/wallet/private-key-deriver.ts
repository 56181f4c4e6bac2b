import type { HDKey } from "@scure/bip32";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { derivationPath } from "./derivation-path.js";
import { masterKeyFromMnemonic } from "./mnemonic.js";

/**
 * Private keys of the HD wallet. Only the transaction signer may import this module;
 * everything else derives addresses with `AddressDeriver`.
 */
export class PrivateKeyDeriver {
  private constructor(private readonly master: HDKey) {}

  static fromMnemonic(mnemonic: string, passphrase = ""): PrivateKeyDeriver {
    return new PrivateKeyDeriver(masterKeyFromMnemonic(mnemonic, passphrase));
  }

  /** The 32-byte secp256k1 private key at `m/44'/<coin>'/<env account>'/0/<index>`. */
  privateKey(network: CurrencyType, environment: Environment, index: number): Uint8Array {
    const key = this.master.derive(derivationPath(network, environment, index)).privateKey;
    if (!key) throw new Error("BIP32 derivation produced no private key.");
    return key;
  }
}
