import { HDKey } from "@scure/bip32";
import fc from "fast-check";
import { TronWeb } from "tronweb";
import { bytesToHex } from "viem";
import { privateKeyToAddress } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { addressFromPublicKey, normalizeAddress, validateAddress } from "../../src/chains/address.js";
import { InvalidAddressError } from "../../src/chains/errors.js";
import { tronAddressFromHex, tronAddressToEvm, tronAddressToHex } from "../../src/chains/tron/address.js";
import { AddressDeriver, SECP256K1_ENGINE } from "../../src/wallet/address-deriver.js";
import {
  derivationPath,
  FIRST_DEPOSIT_INDEX,
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
} from "../../src/wallet/derivation-path.js";
import { generateMnemonic, isValidMnemonic } from "../../src/wallet/mnemonic.js";
import { PrivateKeyDeriver } from "../../src/wallet/private-key-deriver.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const addresses = AddressDeriver.fromMnemonic(MNEMONIC);
const keys = PrivateKeyDeriver.fromMnemonic(MNEMONIC);

describe("mnemonic", () => {
  it("generates valid 24-word mnemonics", () => {
    const m = generateMnemonic();
    expect(m.split(" ")).toHaveLength(24);
    expect(isValidMnemonic(m)).toBe(true);
    expect(generateMnemonic()).not.toBe(m);
  });

  it("rejects a bad checksum, unknown words and empty input; tolerates spacing and case", () => {
    expect(isValidMnemonic(MNEMONIC)).toBe(true);
    expect(isValidMnemonic(`  ${MNEMONIC.toUpperCase().replaceAll(" ", "\n ")}\n`)).toBe(true);
    expect(isValidMnemonic("test test test test test test test test test test test test")).toBe(false);
    expect(isValidMnemonic("test test test test test test test test test test test junkx")).toBe(false);
    expect(isValidMnemonic("")).toBe(false);
    expect(() => AddressDeriver.fromMnemonic("not a mnemonic")).toThrow(/Invalid BIP39/);
  });
});

describe("derivation paths", () => {
  it("uses a BIP44 account per environment and reserves the first indexes", () => {
    expect(HOT_WALLET_INDEX).toBe(0);
    expect(GAS_TANK_INDEX).toBe(1);
    expect(FIRST_DEPOSIT_INDEX).toBe(100);
    expect(derivationPath("USDT-ERC20", "production", 0)).toBe("m/44'/60'/0'/0/0");
    expect(derivationPath("USDT-ERC20", "sandbox", 100)).toBe("m/44'/60'/1'/0/100");
    expect(derivationPath("USDT-TRC20", "production", 1)).toBe("m/44'/195'/0'/0/1");
    expect(derivationPath("USDT-TRC20", "sandbox", 7)).toBe("m/44'/195'/1'/0/7");
    expect(() => derivationPath("USDT-ERC20", "sandbox", -1)).toThrow(RangeError);
    expect(() => derivationPath("USDT-ERC20", "sandbox", 2 ** 31)).toThrow(RangeError);
    expect(() => derivationPath("USDT-ERC20", "sandbox", 1.5)).toThrow(RangeError);
  });
});

describe("EVM derivation", () => {
  it("matches the published vector m/44'/60'/0'/0/0 of the test mnemonic", () => {
    expect(addresses.address("USDT-ERC20", "production", 0)).toBe(
      "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    );
    // Anvil/Hardhat account #1 is m/44'/60'/0'/0/1.
    expect(addresses.address("USDT-ERC20", "production", 1)).toBe(
      "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    );
    expect(bytesToHex(keys.privateKey("USDT-ERC20", "production", 0))).toBe(
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    );
  });

  it("derives the same address from the xpub as from the private key, and sandbox differs", () => {
    for (const env of ["production", "sandbox"] as const) {
      for (const index of [0, 1, 100, 101, 2 ** 31 - 1]) {
        const key = bytesToHex(keys.privateKey("USDT-ERC20", env, index));
        expect(addresses.address("USDT-ERC20", env, index)).toBe(privateKeyToAddress(key));
      }
    }
    expect(addresses.address("USDT-ERC20", "sandbox", 0)).not.toBe(
      addresses.address("USDT-ERC20", "production", 0),
    );
  });
});

describe("TRON derivation", () => {
  it("matches the published vector m/44'/195'/0'/0/0 of the test mnemonic", () => {
    // Published in several independent TRON wallet test suites (private key 15f0bbb1…0954).
    expect(addresses.address("USDT-TRC20", "production", 0)).toBe("TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6");
    expect(Buffer.from(keys.privateKey("USDT-TRC20", "production", 0)).toString("hex")).toBe(
      "15f0bbb1774be40b7a8d7965d637f324bda2f711fc5726a3dcc19585c6950954",
    );
    expect(tronAddressToHex("TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6")).toBe(
      "41e2e1a54926527fbb4e4420de4c6bab82beaee24d",
    );
  });

  it("agrees with tronweb's own derivation and address utilities", () => {
    for (const env of ["production", "sandbox"] as const) {
      for (const index of [0, 1, 100, 12345]) {
        const path = derivationPath("USDT-TRC20", env, index);
        const theirs = TronWeb.fromMnemonic(MNEMONIC, path);
        const ours = addresses.address("USDT-TRC20", env, index);
        expect(ours).toBe(theirs.address);
        expect(`0x${Buffer.from(keys.privateKey("USDT-TRC20", env, index)).toString("hex")}`).toBe(
          theirs.privateKey,
        );
        expect(TronWeb.address.toHex(ours).toLowerCase()).toBe(tronAddressToHex(ours));
        expect(TronWeb.isAddress(ours)).toBe(true);
      }
    }
  });
});

describe("the deriver's own CKDpub", () => {
  const pairs = [
    ["USDT-ERC20", "production"],
    ["USDT-ERC20", "sandbox"],
    ["USDT-TRC20", "production"],
    ["USDT-TRC20", "sandbox"],
  ] as const;
  const matchesScure = (deriver: AddressDeriver) =>
    fc.assert(
      fc.property(
        fc.constantFrom(...pairs),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        ([network, env], index) => {
          const external = HDKey.fromExtendedKey(deriver.accountExtendedPublicKey(network, env)).deriveChild(
            0,
          );
          const reference = addressFromPublicKey(
            network,
            external.deriveChild(index).publicKey as Uint8Array,
          );
          expect(deriver.address(network, env, index)).toBe(reference);
        },
      ),
      { numRuns: 200 },
    );

  it("uses libsecp256k1 on this platform (the prebuilt binding loads)", () => {
    expect(SECP256K1_ENGINE).toBe("libsecp256k1");
  });

  it("gives exactly what @scure/bip32's deriveChild gives from the account xpub, for any index", () => {
    matchesScure(addresses);
  });

  it("gives the same with the pure-JS fallback (noble) forced", () => {
    const js = AddressDeriver.fromMnemonic(MNEMONIC, "", { pureJs: true });
    expect(js.engine).toBe("noble");
    matchesScure(js);
  });
});

describe("address validation and normalisation", () => {
  it("EVM: EIP-55 checksum", () => {
    const good = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    expect(validateAddress("USDT-ERC20", good)).toBe(true);
    expect(validateAddress("USDT-ERC20", good.toLowerCase())).toBe(true);
    expect(normalizeAddress("USDT-ERC20", good.toLowerCase())).toBe(good);
    // One letter's case flipped: a broken checksum.
    expect(validateAddress("USDT-ERC20", "0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(false);
    expect(validateAddress("USDT-ERC20", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb9226")).toBe(false);
    expect(validateAddress("USDT-ERC20", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb922666")).toBe(false);
    expect(validateAddress("USDT-ERC20", "f39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(false);
    expect(validateAddress("USDT-ERC20", "0xg39fd6e51aad88f6f4ce6ab8827279cfffb92266")).toBe(false);
    expect(validateAddress("USDT-ERC20", "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6")).toBe(false);
    expect(() => normalizeAddress("USDT-ERC20", "0x1234")).toThrow(InvalidAddressError);
  });

  it("TRON: base58check with the 0x41 prefix", () => {
    const good = "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6";
    expect(validateAddress("USDT-TRC20", good)).toBe(true);
    expect(normalizeAddress("USDT-TRC20", good)).toBe(good);
    expect(validateAddress("USDT-TRC20", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")).toBe(true); // mainnet USDT
    expect(validateAddress("USDT-TRC20", "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb")).toBe(true); // test failure
    // Bad checksum: last character changed.
    expect(validateAddress("USDT-TRC20", "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL7")).toBe(false);
    // Case matters in base58.
    expect(validateAddress("USDT-TRC20", "tWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6")).toBe(false);
    // Wrong prefix: the same 20 bytes with a Bitcoin P2PKH version byte (0x00) is a valid base58check string.
    expect(validateAddress("USDT-TRC20", "1Mge2VK1vj7kV7kQs8Fq8hGdGJhZ2ktfHy")).toBe(false);
    // Wrong payload length with a valid checksum: 0x41 + 21 bytes, 0x41 + 19 bytes.
    expect(validateAddress("USDT-TRC20", "321t3PprR8eoUPbCdqW6vi377yZ3Ae9PTuoa")).toBe(false);
    expect(validateAddress("USDT-TRC20", "71NiU5uxXTnhUUppEEM4Yge6vwhmAyPC1")).toBe(false);
    // Wrong length: too short / too long / hex forms are not user input.
    expect(validateAddress("USDT-TRC20", good.slice(0, 33))).toBe(false);
    expect(validateAddress("USDT-TRC20", `${good}1`)).toBe(false);
    expect(validateAddress("USDT-TRC20", "41e2e1a54926527fbb4e4420de4c6bab82beaee24d")).toBe(false);
    expect(validateAddress("USDT-TRC20", "0xe2E1a54926527Fbb4E4420DE4c6BAb82beAEE24D")).toBe(false);
    expect(validateAddress("USDT-TRC20", "")).toBe(false);
    expect(() => normalizeAddress("USDT-TRC20", "T0000")).toThrow(InvalidAddressError);
  });

  it("TRON hex conversions round-trip", () => {
    const b58 = "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6";
    expect(tronAddressFromHex("41e2e1a54926527fbb4e4420de4c6bab82beaee24d")).toBe(b58);
    expect(tronAddressFromHex("e2e1a54926527fbb4e4420de4c6bab82beaee24d")).toBe(b58);
    expect(tronAddressFromHex("0xe2e1a54926527fbb4e4420de4c6bab82beaee24d")).toBe(b58);
    expect(tronAddressToEvm(b58)).toBe("0xe2E1a54926527Fbb4E4420DE4c6BAb82beAEE24D");
    expect(TronWeb.address.fromHex("41e2e1a54926527fbb4e4420de4c6bab82beaee24d")).toBe(b58);
  });
});
