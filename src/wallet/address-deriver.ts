import { HDKey } from "@scure/bip32";
import { addressFromPublicKey } from "../chains/address.js";
import type { Network } from "../chains/network.js";
import type { Environment } from "../domain/environment.js";
import { accountPath, assertAddressIndex } from "./derivation-path.js";
import { masterKeyFromMnemonic } from "./mnemonic.js";

/**
 * Derives receiving addresses. It keeps only the account-level extended PUBLIC keys
 * (`m/44'/<coin>'/<account>'`), so a process that only hands out addresses holds no private key.
 */
export class AddressDeriver {
  private readonly cache = new Map<string, HDKey>();

  private constructor(private readonly accountXpub: (network: Network, environment: Environment) => string) {}

  static fromMnemonic(mnemonic: string, passphrase = ""): AddressDeriver {
    const master = masterKeyFromMnemonic(mnemonic, passphrase);
    const xpubs = new Map<string, string>();
    for (const network of ["USDT-ERC20", "USDT-TRC20"] as const) {
      for (const environment of ["production", "sandbox"] as const) {
        xpubs.set(
          `${network}/${environment}`,
          master.derive(accountPath(network, environment)).publicExtendedKey,
        );
      }
    }
    return new AddressDeriver((network, environment) => xpubs.get(`${network}/${environment}`)!);
  }

  /**
   * Watch-only: from the account xpubs alone (keys `"<network>/<environment>"`, as
   * `accountExtendedPublicKey` returns them). Derives nothing for a missing pair.
   */
  static fromAccountExtendedPublicKeys(xpubs: Readonly<Record<string, string>>): AddressDeriver {
    return new AddressDeriver((network, environment) => {
      const xpub = xpubs[`${network}/${environment}`];
      if (!xpub) throw new Error(`No account key for ${network}/${environment}.`);
      return xpub;
    });
  }

  /** The account xpub of (network, environment), for watch-only tooling. */
  accountExtendedPublicKey(network: Network, environment: Environment): string {
    return this.accountXpub(network, environment);
  }

  /** The address at `m/44'/<coin>'/<env account>'/0/<index>`, EIP-55 or base58check. */
  address(network: Network, environment: Environment, index: number): string {
    assertAddressIndex(index);
    const key = `${network}/${environment}`;
    let external = this.cache.get(key);
    if (!external) {
      external = HDKey.fromExtendedKey(this.accountXpub(network, environment)).deriveChild(0);
      this.cache.set(key, external);
    }
    const child = external.deriveChild(index);
    if (!child.publicKey) throw new Error("BIP32 derivation produced no public key.");
    return addressFromPublicKey(network, child.publicKey);
  }
}
