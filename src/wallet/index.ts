/**
 * The wallet feature's public face: HD derivation of addresses (never private keys: the signer's
 * `PrivateKeyDeriver` is exported for it alone), the reserved indexes, deposit-address allocation
 * and the account keys of a deployment.
 */
export { type AccountKeys, accountXpubsOf, differingAccounts, resolveAccountKeys } from "./account-keys.js";
export { AddressDeriver, type DeriverOptions, SECP256K1_ENGINE } from "./address-deriver.js";
export {
  type AllocateDepositAddressRequest,
  type AllocatedAddress,
  allocateDepositAddress,
  nextDepositIndex,
  watchedAddressRows,
  watchedAddressValues,
} from "./allocation.js";
export {
  accountNumber,
  accountPath,
  assertAddressIndex,
  derivationPath,
  ENVIRONMENT_ACCOUNT,
  FIRST_DEPOSIT_INDEX,
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  MAX_ADDRESS_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "./derivation-path.js";
export { DEPOSIT_INDEX_BLOCK, DepositIndexReserve, reserveIndexes } from "./index-reserve.js";
export { generateMnemonic, isValidMnemonic, normalizeMnemonic } from "./mnemonic.js";
export { pinAccountKeys, recordedAccountKeys } from "./pinned-account-keys.js";
export { PrivateKeyDeriver } from "./private-key-deriver.js";
