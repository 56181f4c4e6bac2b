import {
  concatHex,
  decodeFunctionData,
  encodeAbiParameters,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  keccak256,
  parseAbi,
  toHex,
} from "viem";
import { type EvmAddress, normalizeEvmAddress } from "./address.js";
import { SWEEPER_CREATION_CODE } from "./sweeper-code.js";

/**
 * The EIP-7702 sweeper (issue #39; contracts/StablegateSweeper.sol, docs/decisions/evm-sweeps.md).
 * One contract per hot wallet and token (a currency type), both fixed in its code: a deposit address
 * delegates its code to it once (an authorisation its key signs), and one transaction of the gas tank
 * then calls `sweepMany`, which moves each listed address's amount of that token to that hot wallet.
 * No call of it can send anywhere else, nor move another token (the currency types of a network share
 * deposit addresses: a USDC deposit at an address delegated to USDT's sweeper stays where it is).
 *
 * Its address is a pure function of the hot wallet and the token: deployed through the deterministic
 * CREATE2 deployer every EVM chain of ours has (and anvil), with a fixed salt, so the signer computes
 * it from its own hot wallet key, its configured token contract and the committed creation code, and
 * never takes it from a request.
 */

/** The deterministic-deployment proxy (Arachnid): the same address on every EVM chain. */
export const CREATE2_DEPLOYER: EvmAddress = normalizeEvmAddress("0x4e59b44847b379578588920ca78fbf26c0b4956c");
/** The salt of our deployment (its version: a new sweeper contract takes a new salt). */
export const SWEEPER_SALT: Hex = keccak256(toHex("stablegate.sweeper.v1"));

export const SWEEPER_CALL_ABI = parseAbi([
  "function sweepMany(address token, address[] accounts, uint256[] amounts)",
]);

/** The creation code for `hotWallet` and `token`: the committed bytecode and its constructor arguments. */
export function sweeperInitCode(hotWallet: string, token: string): Hex {
  return concatHex([
    SWEEPER_CREATION_CODE,
    encodeAbiParameters(
      [{ type: "address" }, { type: "address" }],
      [normalizeEvmAddress(hotWallet), normalizeEvmAddress(token)],
    ),
  ]);
}

/** The sweeper contract's address for `hotWallet` and `token` (CREATE2 through `CREATE2_DEPLOYER`). */
export function sweeperAddress(hotWallet: string, token: string): EvmAddress {
  return normalizeEvmAddress(
    getContractAddress({
      opcode: "CREATE2",
      from: CREATE2_DEPLOYER,
      salt: SWEEPER_SALT,
      bytecode: sweeperInitCode(hotWallet, token),
    }),
  );
}

/** The data of the deployment transaction (to `CREATE2_DEPLOYER`): salt ‖ creation code. */
export function sweeperDeployData(hotWallet: string, token: string): Hex {
  return concatHex([SWEEPER_SALT, sweeperInitCode(hotWallet, token)]);
}

export function sweepManyData(token: string, accounts: readonly string[], amounts: readonly bigint[]): Hex {
  return encodeFunctionData({
    abi: SWEEPER_CALL_ABI,
    functionName: "sweepMany",
    args: [normalizeEvmAddress(token), accounts.map(normalizeEvmAddress), [...amounts]],
  });
}

/** The `sweepMany` call `data` decodes to, or null when it is not one. */
export function decodeSweepMany(
  data: Hex,
): { token: EvmAddress; accounts: EvmAddress[]; amounts: bigint[] } | null {
  try {
    const d = decodeFunctionData({ abi: SWEEPER_CALL_ABI, data });
    const [token, accounts, amounts] = d.args;
    // Canonical bytes only: what the signer signs must be what it decoded, nothing appended.
    if (sweepManyData(token, accounts, amounts).toLowerCase() !== data.toLowerCase()) return null;
    return {
      token: normalizeEvmAddress(token),
      accounts: accounts.map(normalizeEvmAddress),
      amounts: [...amounts],
    };
  } catch {
    return null;
  }
}

/** EIP-7702's delegation designator: the code of an address that delegated to `target`. */
export function delegationCode(target: string): Hex {
  return `0xef0100${normalizeEvmAddress(target).slice(2).toLowerCase()}`;
}

/** The most gas the gas tank's deployment of the sweeper may use (it takes about 400,000). */
export const DEPLOY_GAS_CAP = 1_000_000n;

/**
 * Gas of a batch, a cap not a price (unused gas is not paid): the call, each address's sweep (a
 * cold account, the token's two balance slots) and each authorisation (EIP-7702 charges 25,000 per
 * authorisation up front).
 */
export const BATCH_BASE_GAS = 60_000n;
export const BATCH_ITEM_GAS = 60_000n;
export const AUTHORIZATION_GAS = 25_000n;

export function batchGas(items: number, authorizations: number): bigint {
  return BATCH_BASE_GAS + BigInt(items) * BATCH_ITEM_GAS + BigInt(authorizations) * AUTHORIZATION_GAS;
}
