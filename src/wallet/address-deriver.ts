import { createHmac } from "node:crypto";
import { createRequire } from "node:module";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { HDKey } from "@scure/bip32";
import { addressFromPublicKey } from "../chains/index.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { accountPath, assertAddressIndex, keyAccountOf } from "./derivation-path.js";
import { masterKeyFromMnemonic } from "./mnemonic.js";

/**
 * Derives receiving addresses. It keeps only the account-level extended PUBLIC keys
 * (`m/44'/<coin>'/<account>'`), so a process that only hands out addresses holds no private key.
 */
const { Point } = secp256k1;
type SecpPoint = InstanceType<typeof Point>;
// A window-8 table for the generator (once per process, a few ms): every derivation multiplies
// it, and this halves what noble's default table costs per multiplication.
Point.BASE.precompute(8);

/** The external chain node (`…/0`) of an account: its public point kept parsed, and its chain code. */
interface ExternalNode {
  point: SecpPoint;
  compressed: Uint8Array;
  chainCode: Uint8Array;
}

export class AddressDeriver {
  private readonly cache = new Map<string, ExternalNode>();

  /** libsecp256k1, or undefined for noble's pure-JS arithmetic. */
  private readonly native: NativeSecp256k1 | undefined;

  private constructor(
    private readonly accountXpub: (network: CurrencyType, environment: Environment) => string,
    options: DeriverOptions,
  ) {
    this.native = options.pureJs ? undefined : native;
  }

  /** Which arithmetic this deriver uses. */
  get engine(): "libsecp256k1" | "noble" {
    return this.native ? "libsecp256k1" : "noble";
  }

  static fromMnemonic(mnemonic: string, passphrase = "", options: DeriverOptions = {}): AddressDeriver {
    const master = masterKeyFromMnemonic(mnemonic, passphrase);
    // Each account's key on first use (hardened steps cost a few ms each; most currency types are
    // not enabled).
    const xpubs = new Map<string, string>();
    return new AddressDeriver((network, environment) => {
      const key = `${network}/${environment}`;
      let xpub = xpubs.get(key);
      if (xpub === undefined) {
        xpub = master.derive(accountPath(network, environment)).publicExtendedKey;
        xpubs.set(key, xpub);
      }
      return xpub;
    }, options);
  }

  /**
   * Watch-only: from the account xpubs alone (keys `"<network>/<environment>"`, as
   * `accountExtendedPublicKey` returns them). Derives nothing for a missing pair.
   */
  static fromAccountExtendedPublicKeys(
    xpubs: Readonly<Record<string, string>>,
    options: DeriverOptions = {},
  ): AddressDeriver {
    return new AddressDeriver((network, environment) => {
      const xpub = xpubs[`${network}/${environment}`];
      if (!xpub) throw new Error(`No account key for ${network}/${environment}.`);
      return xpub;
    }, options);
  }

  /** The account xpub of (network, environment), for watch-only tooling. */
  accountExtendedPublicKey(network: CurrencyType, environment: Environment): string {
    return this.accountXpub(network, environment);
  }

  /** The address at `m/44'/<coin>'/<env account>'/0/<index>`, EIP-55 or base58check. */
  address(network: CurrencyType, environment: Environment, index: number): string {
    assertAddressIndex(index);
    return addressFromPublicKey(
      network,
      childPublicKey(this.externalNode(keyAccountOf(network, index), environment), index, this.native),
    );
  }

  private externalNode(network: CurrencyType, environment: Environment): ExternalNode {
    const key = `${network}/${environment}`;
    let node = this.cache.get(key);
    if (!node) {
      const external = HDKey.fromExtendedKey(this.accountXpub(network, environment)).deriveChild(0);
      if (!external.publicKey || !external.chainCode)
        throw new Error("BIP32 derivation produced no public key.");
      node = {
        point: Point.fromBytes(external.publicKey),
        compressed: external.publicKey,
        chainCode: external.chainCode,
      };
      this.cache.set(key, node);
    }
    return node;
  }
}

/** The one call used from libsecp256k1's binding (the `secp256k1` package, an N-API prebuild). */
interface NativeSecp256k1 {
  publicKeyTweakAdd(publicKey: Uint8Array, tweak: Uint8Array, compressed: boolean): Uint8Array;
}

/**
 * libsecp256k1 when its binding loads (linux/macOS/windows prebuilds ship in the npm package), for
 * `parent + tweak·G`: ~35 µs against ~150 µs for noble's pure-JS arithmetic, and address derivation
 * is on the path of every checkout session. Loaded from `bindings.js` on purpose: the package's
 * main module would fall back to `elliptic`; we fall back to noble (same results, property-tested).
 */
function loadNative(): NativeSecp256k1 | undefined {
  try {
    return createRequire(import.meta.url)("secp256k1/bindings.js") as NativeSecp256k1;
  } catch {
    return undefined;
  }
}
const native = loadNative();

/** Whether libsecp256k1 loaded in this process (the tests assert that it does here). */
export const SECP256K1_ENGINE: "libsecp256k1" | "noble" = native ? "libsecp256k1" : "noble";

export interface DeriverOptions {
  /** Use noble's pure-JS arithmetic even where libsecp256k1 loads (tests of the fallback). */
  pureJs?: boolean;
}

/**
 * BIP32 CKDpub of a non-hardened index, returning the child's UNCOMPRESSED public key (what the
 * address functions hash). Written out here rather than `HDKey.deriveChild` because that parses
 * the parent's compressed key again on every call and builds a full child node (fingerprint,
 * compressed key) that is parsed once more for the address: three modular square roots per
 * address, most of the CPU of a checkout session creation. Same rules as @scure/bip32 (a tweak
 * outside the curve order, or a child at infinity, is refused for that index); a property test
 * holds it to `HDKey.deriveChild` byte for byte.
 */
function childPublicKey(
  parent: ExternalNode,
  index: number,
  native: NativeSecp256k1 | undefined,
): Uint8Array {
  const data = new Uint8Array(37);
  data.set(parent.compressed, 0);
  new DataView(data.buffer).setUint32(33, index, false);
  // OpenSSL's HMAC-SHA512 (~5 µs here) rather than the pure-JS one (~15 µs): same bytes.
  const i = createHmac("sha512", parent.chainCode).update(data).digest();
  const tweakBytes = i.subarray(0, 32);
  const tweak = Point.Fn.fromBytes(tweakBytes, true);
  if (!Point.Fn.isValid(tweak)) throw new Error("Tweak bigger than curve order");
  if (native && tweak !== 0n) {
    try {
      return native.publicKeyTweakAdd(parent.compressed, tweakBytes, false);
    } catch {
      // libsecp256k1 refuses only a sum at infinity here (the tweak was checked above).
      throw new Error("The tweak was equal to negative P, which made the result key invalid");
    }
  }
  // Variable-time multiplication: the tweak is no secret (anyone holding the account xpub computes
  // it), so the constant-time ladder's dummy additions buy nothing here; this is ~40 % cheaper.
  const child = tweak === 0n ? parent.point : parent.point.add(Point.BASE.multiplyUnsafe(tweak));
  if (child.equals(Point.ZERO))
    throw new Error("The tweak was equal to negative P, which made the result key invalid");
  return child.toBytes(false);
}
