import { type ChainRegistry, normalizeAddress, ownershipSpellings } from "../chains/index.js";
import type { Db } from "../db/database.js";
import { type CurrencyType, currencyOf } from "../domain/currency.js";
import { isRefusedBurnAddress } from "../domain/destination.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { formatAmount } from "../domain/money.js";
import { getBalances } from "../ledger/index.js";
import { addressBlock, type Screening } from "../screening/index.js";
import { type AddressDeriver, FIRST_DEPOSIT_INDEX } from "../wallet/index.js";
import { isIssuedDepositAddress } from "../watcher/index.js";

/** What the destination check derives the gateway's system addresses with (watch-only is enough). */
export type SystemAddresses = Pick<AddressDeriver, "address">;

/**
 * The destination of a withdrawal request or payout, checked at request time before anything is
 * held (issue #34, findings 10 and 11): 400 `VALIDATION_ERROR` on `walletAddress` when it is
 *
 * - a burn address of its network (`domain/destination.ts`; in the sandbox the test failure
 *   addresses stay usable, docs/merchants/sandbox.md#test-failure-addresses);
 * - one of the gateway's own addresses on that network, in either environment: the system wallets
 *   (indexes below `FIRST_DEPOSIT_INDEX`: the hot wallet, the gas tank and the ones reserved for
 *   future system wallets) and every deposit address it issued (`watched_addresses`, any merchant).
 *   Paying one would debit the merchant while the coins stay inside: books and chain would disagree.
 *
 * Both environments, because the production and sandbox accounts of one network come from the same
 * mnemonic: an address of either is ours on every chain of that network. An address that does not
 * parse is left to `validateWithdrawal`, which names the format error.
 */
export async function checkDestination(
  db: Db,
  addresses: SystemAddresses,
  environment: Environment,
  network: CurrencyType,
  walletAddress: string,
): Promise<void> {
  let address: string;
  try {
    address = normalizeAddress(network, walletAddress);
  } catch {
    return;
  }
  if (isRefusedBurnAddress(network, environment, address))
    throw refused(`is a burn address of ${network} (whatever is sent there is destroyed)`);
  // Every currency type of the key space: an EVM address of ours is ours on every EVM network (the
  // hot wallet of USDT-ERC20 is a key on Polygon too), and in every spelling (the TRON spelling of
  // an EVM key's 20 bytes is the same key), so paying it keeps the coins inside while the merchant
  // is debited.
  for (const spelling of ownershipSpellings(network, address)) {
    if (spelling.networks.some((c) => systemAddresses(addresses, c).has(comparable(c, spelling.address))))
      throw refused("is one of this gateway's own system wallets, not an outside destination");
    if (await isIssuedDepositAddress(db, spelling.networks, spelling.address))
      throw refused("is a deposit address issued by this gateway, not an outside destination");
  }
}

function refused(message: string): AppError {
  return AppError.validation([{ field: "walletAddress", message }]);
}

/** EVM addresses compare without their EIP-55 checksum casing; TRON's base58check is exact. */
function comparable(network: CurrencyType, address: string): string {
  return currencyOf(network).definition.family === "evm" ? address.toLowerCase() : address;
}

/** Per deriver and network: the system wallets of both environments (derived once, ~200 addresses). */
const derived = new WeakMap<SystemAddresses, Map<CurrencyType, Set<string>>>();

function systemAddresses(addresses: SystemAddresses, network: CurrencyType): Set<string> {
  let byNetwork = derived.get(addresses);
  if (!byNetwork) {
    byNetwork = new Map();
    derived.set(addresses, byNetwork);
  }
  let set = byNetwork.get(network);
  if (!set) {
    set = new Set();
    for (const environment of ENVIRONMENTS) {
      try {
        for (let index = 0; index < FIRST_DEPOSIT_INDEX; index++)
          set.add(comparable(network, addresses.address(network, environment, index)));
      } catch {
        // No account key for this (network, environment) in this process (watch-only from
        // MASTER_XPUBS): nothing of it to compare; the signer's policy checks again.
      }
    }
    byNetwork.set(network, set);
  }
  return set;
}

/**
 * A read of the available balance before the chain and the screening provider are asked (issue
 * #40): a request the balance cannot cover is refused (422 `INSUFFICIENT_BALANCE`) without an RPC
 * or provider call. Not the authority: the hold in the request's transaction still decides.
 */
export async function checkAffordable(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  currencyType: CurrencyType,
  amount: bigint,
): Promise<void> {
  const balances = await getBalances(db, scope.merchantId, scope.environment, [currencyType]);
  const available = balances.find((b) => b.currencyType === currencyType)?.available ?? 0n;
  if (available >= amount) return;
  throw new AppError("INSUFFICIENT_BALANCE", "The available balance is too low for this amount.", {
    available: formatAmount(available),
    required: formatAmount(amount),
  });
}

/**
 * The destination against the token's freeze list and the screening provider (issue #40), at
 * request time before anything is held: 422 `DESTINATION_BLOCKED` with `details.reason`
 * (`token_blacklist` or `screening`). Checked again just before signing (the sender's
 * `destinationCheck`): an address frozen in between fails the transfer and releases the hold.
 */
export async function checkNotBlocked(
  deps: { chains: Pick<ChainRegistry, "get">; screening: Screening },
  scope: { merchantId: string; environment: Environment },
  network: CurrencyType,
  walletAddress: string,
): Promise<void> {
  const { environment, merchantId } = scope;
  let address: string;
  try {
    address = normalizeAddress(network, walletAddress);
  } catch {
    return; // validateWithdrawal names the format error
  }
  const chain = deps.chains.get(network, environment);
  const block = await addressBlock(chain.adapter, deps.screening, {
    address,
    network,
    direction: "outgoing",
    subject: { environment, merchantId },
  });
  if (!block) return;
  throw new AppError(
    "DESTINATION_BLOCKED",
    block.reason === "token_blacklist"
      ? `The token's issuer has frozen ${address} on ${network}: whatever is sent there can never be moved again.`
      : "The screening provider refused this destination.",
    { reason: block.reason, ...(block.message ? { message: block.message } : {}) },
  );
}
