/**
 * THE registry of networks and currency types (docs/api-reference.md#currency-types): the one place
 * that lists them. Everything else — the configuration's variables, the chain modules, the
 * database's system accounts, the HD accounts, the route schemas' enums, the web and the SDK (through
 * the generated OpenAPI enums) — is derived from it.
 *
 * Adding an EVM network is one `NetworkDefinition` in `NETWORKS` below (ARCHITECTURE.md "Adding a
 * network"); `registerNetwork` does the same at run time for a test fixture.
 */

/** How a network's chain is read and written: which chain module serves it. */
export type ChainFamily = "evm" | "tron";

/**
 * How a token's issuer freezes addresses (README.md#frozen-funds, issue #40), i.e. which view answers
 * "is this address frozen" and which events announce it:
 * - `tether`: Tether's original contract (Ethereum, TRON): `isBlackListed(address)` /
 *   `getBlackListStatus(address)`, events `AddedBlackList`, `RemovedBlackList`,
 *   `DestroyedBlackFunds`. It checks only the SENDER: a transfer TO a frozen address succeeds and
 *   the coins are stuck there for good.
 * - `tether-blocked`: Tether's newer contracts (USDT0 on Arbitrum and Polygon): `isBlocked(address)`,
 *   events `BlockPlaced`, `BlockReleased`, `DestroyedBlockedFunds`; sender checked.
 * - `usdc`: Circle's FiatToken: `isBlacklisted(address)`, events `Blacklisted`, `UnBlacklisted`;
 *   sender and recipient checked (a transfer to a frozen address reverts).
 * - `none`: no freeze function (the Binance-Peg tokens of BNB Smart Chain).
 */
export type FreezeKind = "tether" | "tether-blocked" | "usdc" | "none";

/** One token on a network. */
export interface TokenListing {
  /** `USDT`, `USDC`: the first half of the currency type. */
  readonly token: string;
  /** The token contract's decimals (the API always keeps 6: finer amounts are dust). */
  readonly decimals: number;
  /** The mainnet contract: the production default of `<TOKEN>_<NETWORK>_CONTRACT`. */
  readonly defaultContract: string;
  /**
   * This currency type's BIP44 account slot on the network's coin type: its accounts are
   * `2 × slot + 0` (production) and `2 × slot + 1` (sandbox). Fixed forever once funds exist (the
   * addresses derive from it); unique per coin type (test/domain/currency-registry.test.ts).
   */
  readonly accountSlot: number;
  /** How its issuer freezes addresses (`FreezeKind`). */
  readonly freeze: FreezeKind;
}

/** One network: what its chain module and the configuration need to know, as plain data. */
export interface NetworkDefinition {
  /** `ERC20`, `BEP20`, …: the second half of the currency type and the prefix of its variables. */
  readonly network: string;
  readonly family: ChainFamily;
  /** Human name: "Ethereum", "BNB Smart Chain". */
  readonly name: string;
  /** The hosted page's label: "Ethereum (ERC-20)". */
  readonly label: string;
  /** EIP-155 chain id (EVM); null for TRON. */
  readonly chainId: number | null;
  /**
   * EVM: the network runs EIP-7702 (Ethereum's Pectra and its counterparts): deposit addresses
   * delegate to the sweeper contract and are swept in batches without gas top-ups (issue #39).
   */
  readonly eip7702?: boolean;
  /** SLIP-44 coin type of its HD keys (60 for every EVM network: one key, one address everywhere). */
  readonly coinType: number;
  /** `CONFIRMATIONS_<NETWORK>` when unset. */
  readonly defaultConfirmations: number;
  /** `SWEEP_THRESHOLD_<NETWORK>` when unset (token units). */
  readonly defaultSweepThreshold: string;
  /** Interval between head polls while caught up (about the block time). */
  readonly pollIntervalMs: number;
  /** Default withdrawal and payout fee (token units; `FEE_SCHEDULE` overrides). */
  readonly defaultWithdrawalFee: string;
  /** Overrides of the variable names, for the names that predate this registry. */
  readonly endpointVariable?: string;
  /** The chain module's own settings: positive integers read from `variable`, else `default`. */
  readonly options?: readonly { readonly key: string; readonly variable: string; readonly default: number }[];
  readonly tokens: readonly TokenListing[];
}

/** An EVM network's definition; `costs`: its sweep threshold and withdrawal fee (token units). */
const evm = (
  network: string,
  name: string,
  label: string,
  chainId: number,
  defaultConfirmations: number,
  pollIntervalMs: number,
  tokens: TokenListing[],
  costs: { sweepThreshold: string; withdrawalFee: string } = { sweepThreshold: "10", withdrawalFee: "1" },
): NetworkDefinition => ({
  network,
  family: "evm",
  name,
  label,
  chainId,
  // Every built-in EVM network runs EIP-7702: Ethereum (Pectra), BNB Smart Chain (Pascal), Polygon
  // (Bhilai), Arbitrum (ArbOS 40), Base (Isthmus).
  eip7702: true,
  coinType: 60,
  defaultConfirmations,
  defaultSweepThreshold: costs.sweepThreshold,
  defaultWithdrawalFee: costs.withdrawalFee,
  pollIntervalMs,
  tokens,
});

/** The networks of a deployment, in display order. Account slots: see `TokenListing.accountSlot`. */
const BUILT_IN_NETWORKS = [
  {
    network: "TRC20",
    family: "tron",
    name: "TRON",
    label: "TRON (TRC-20)",
    chainId: null,
    coinType: 195,
    defaultConfirmations: 19,
    defaultSweepThreshold: "10",
    defaultWithdrawalFee: "1",
    pollIntervalMs: 1_000,
    endpointVariable: "TRC20_API_URL",
    // `fee_limit` of token transfers, in sun: the most TRX one may burn (100 TRX).
    // The energy engine (issue #38, docs/decisions/tron-resources.md): how long a transfer waits for
    // delegated energy before it burns TRX, the burn small enough to pay at once, the TRX the
    // resource account keeps unstaked (its own fees), and the share of its stake for bandwidth.
    options: [
      { key: "feeLimitSun", variable: "TRC20_FEE_LIMIT_SUN", default: 100_000_000 },
      { key: "energyMaxWaitSeconds", variable: "TRC20_ENERGY_MAX_WAIT_SECONDS", default: 3_600 },
      { key: "burnCeilingSun", variable: "TRC20_BURN_CEILING_SUN", default: 1 },
      { key: "resourceReserveSun", variable: "TRC20_RESOURCE_RESERVE_SUN", default: 10_000_000 },
      { key: "bandwidthStakePercent", variable: "TRC20_BANDWIDTH_STAKE_PERCENT", default: 6 },
      // Energy rental (decision 21): how long a transfer waits for rented energy to arrive.
      { key: "rentalWaitSeconds", variable: "TRC20_RENTAL_WAIT_SECONDS", default: 600 },
    ],
    tokens: [
      {
        token: "USDT",
        decimals: 6,
        defaultContract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
        accountSlot: 0,
        freeze: "tether",
      },
    ],
  },
  evm(
    "ERC20",
    "Ethereum",
    "Ethereum (ERC-20)",
    1,
    12,
    2_000,
    [
      {
        token: "USDT",
        decimals: 6,
        defaultContract: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        accountSlot: 0,
        freeze: "tether",
      },
      {
        token: "USDC",
        decimals: 6,
        defaultContract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        accountSlot: 1,
        freeze: "usdc",
      },
      // Ethereum's gas makes small sweeps and withdrawals dear.
    ],
    { sweepThreshold: "50", withdrawalFee: "5" },
  ),
  evm("BEP20", "BNB Smart Chain", "BNB Smart Chain (BEP-20)", 56, 15, 1_000, [
    {
      token: "USDT",
      decimals: 18,
      defaultContract: "0x55d398326f99059fF775485246999027B3197955",
      accountSlot: 2,
      freeze: "none",
    },
    {
      token: "USDC",
      decimals: 18,
      defaultContract: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
      accountSlot: 3,
      freeze: "none",
    },
  ]),
  evm("POLYGON", "Polygon", "Polygon PoS", 137, 128, 1_000, [
    {
      token: "USDT",
      decimals: 6,
      defaultContract: "0xc2132D05D31c914a87C6611C10748AEb04B58e8F",
      accountSlot: 4,
      freeze: "tether-blocked",
    },
    {
      token: "USDC",
      decimals: 6,
      defaultContract: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
      accountSlot: 5,
      freeze: "usdc",
    },
  ]),
  evm("ARBITRUM", "Arbitrum One", "Arbitrum One", 42161, 20, 1_000, [
    {
      token: "USDT",
      decimals: 6,
      defaultContract: "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9",
      accountSlot: 6,
      freeze: "tether-blocked",
    },
    {
      token: "USDC",
      decimals: 6,
      defaultContract: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
      accountSlot: 7,
      freeze: "usdc",
    },
  ]),
  evm("BASE", "Base", "Base", 8453, 20, 1_000, [
    {
      token: "USDC",
      decimals: 6,
      defaultContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      accountSlot: 8,
      freeze: "usdc",
    },
  ]),
] as const satisfies readonly NetworkDefinition[];

/** A currency type, `<TOKEN>-<NETWORK>`: the unit of balances, chains, addresses and fees. */
export type CurrencyType =
  | "USDT-TRC20"
  | "USDT-ERC20"
  | "USDC-ERC20"
  | "USDT-BEP20"
  | "USDC-BEP20"
  | "USDT-POLYGON"
  | "USDC-POLYGON"
  | "USDT-ARBITRUM"
  | "USDC-ARBITRUM"
  | "USDC-BASE";

/** A currency type with everything the registry knows of it. */
export interface CurrencyDefinition extends TokenListing {
  readonly currencyType: CurrencyType;
  readonly network: string;
  readonly definition: NetworkDefinition;
}

/** Every network (live: `registerNetwork` appends). */
export const NETWORKS: readonly NetworkDefinition[] = [...BUILT_IN_NETWORKS];
/** Every currency type the code knows, in display order (live, like `NETWORKS`). */
export const CURRENCY_TYPES: readonly CurrencyType[] = [];
const CURRENCIES = new Map<string, CurrencyDefinition>();

function add(definition: NetworkDefinition): void {
  for (const listing of definition.tokens) {
    const currencyType = `${listing.token}-${definition.network}` as CurrencyType;
    CURRENCIES.set(currencyType, { ...listing, currencyType, network: definition.network, definition });
    (CURRENCY_TYPES as CurrencyType[]).push(currencyType);
  }
}
for (const n of NETWORKS) add(n);

/**
 * Adds a network at run time: what a test fixture does with its own EVM network (one definition, this
 * one line). Call it before anything reads the registry (the route schemas read it when their
 * modules load, so a fixture imports the service after registering).
 */
export function registerNetwork(definition: NetworkDefinition): void {
  if (NETWORKS.some((n) => n.network === definition.network)) {
    throw new Error(`Network ${definition.network} is already registered.`);
  }
  (NETWORKS as NetworkDefinition[]).push(definition);
  add(definition);
}

export function isCurrencyType(v: unknown): v is CurrencyType {
  return typeof v === "string" && CURRENCIES.has(v);
}

/** The registry's entry of a currency type; throws for an unknown one (a bug: inputs are validated). */
export function currencyOf(currencyType: CurrencyType): CurrencyDefinition {
  const c = CURRENCIES.get(currencyType);
  if (!c) throw new Error(`Unknown currency type ${currencyType}.`);
  return c;
}

/** The definition of a network by its name (`ERC20`), or undefined. */
export function networkDefinition(network: string): NetworkDefinition | undefined {
  return NETWORKS.find((n) => n.network === network);
}

/** The currency types of one network. */
export function currencyTypesOf(network: string): CurrencyType[] {
  return CURRENCY_TYPES.filter((c) => currencyOf(c).network === network);
}

/** The currency types enabled when `CURRENCY_TYPES` is unset. */
export const DEFAULT_ENABLED_CURRENCY_TYPES: readonly CurrencyType[] = ["USDT-TRC20", "USDT-ERC20"];

/** The API's scale: every amount has at most 6 decimals whatever the token's on-chain decimals. */
export const API_DECIMALS = 6;

/**
 * Test failure addresses (docs/merchants/sandbox.md#test-failure-addresses): like test card numbers,
 * an outgoing transfer to one of these fails on-chain in the sandbox simulator. One per family.
 */
const FAILURE_ADDRESS_OF_FAMILY: Readonly<Record<ChainFamily, string>> = {
  tron: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  evm: "0x000000000000000000000000000000000000dEaD",
};

/** The test failure address of a currency type's network. */
export function testFailureAddress(currencyType: CurrencyType): string {
  return FAILURE_ADDRESS_OF_FAMILY[currencyOf(currencyType).definition.family];
}

/** The test failure address of each built-in currency type (what tests and docs quote). */
export const TEST_FAILURE_ADDRESSES: Readonly<Record<CurrencyType, string>> = Object.fromEntries(
  CURRENCY_TYPES.map((c) => [c, testFailureAddress(c)]),
) as Record<CurrencyType, string>;

/**
 * Test frozen addresses (docs/merchants/sandbox.md#test-frozen-addresses, issue #40): the sandbox
 * simulator's token has these on its blacklist, so a withdrawal or payout to one is 422
 * `DESTINATION_BLOCKED` and a sandbox payment sent `from` one is `held`. One per family.
 */
const FROZEN_ADDRESS_OF_FAMILY: Readonly<Record<ChainFamily, string>> = {
  tron: "T9yD14Nj9j7xAB4dbGeiX9h8upGUqmaajC",
  evm: "0x000000000000000000000000000000000000B10C",
};

/** The test frozen address of a currency type's network. */
export function testFrozenAddress(currencyType: CurrencyType): string {
  return FROZEN_ADDRESS_OF_FAMILY[currencyOf(currencyType).definition.family];
}

/**
 * On-chain base units per API base unit of a currency type: 1 for 6-decimal tokens, 10^12 for the
 * 18-decimal tokens of BNB Smart Chain. A token has at least 6 decimals (the registry's test).
 */
export function chainScale(currencyType: CurrencyType): bigint {
  return 10n ** BigInt(currencyOf(currencyType).decimals - API_DECIMALS);
}

/** An on-chain amount as the API's units (truncated) and the remainder left out (on-chain units). */
export function fromChainUnits(raw: bigint, scale: bigint): { units: bigint; dust: bigint } {
  return { units: raw / scale, dust: raw % scale };
}

/**
 * The other enabled currency types an address made for `network` is also watched on (wrong network,
 * issue #37): those of the same key space (coin type: every EVM network, the same address), since a
 * customer may send the token on another network, or another token, to it. Nothing arriving there is
 * lost: each transfer is credited as its own deposit in the currency type it arrived as.
 */
export function wrongNetworkTwins(network: CurrencyType, enabled: readonly CurrencyType[]): CurrencyType[] {
  const coin = currencyOf(network).definition.coinType;
  return enabled.filter((c) => c !== network && currencyOf(c).definition.coinType === coin);
}

/**
 * Every currency type of the key space of `network` (the same coin type: every EVM network, whose
 * addresses are one key on all of them), `network` first. An address of ours on one of them is ours
 * on all: what the destination checks compare against.
 */
export function sameKeySpace(network: CurrencyType): CurrencyType[] {
  return [network, ...wrongNetworkTwins(network, CURRENCY_TYPES)];
}

/** Chain families in words, for messages: "a TRON address", "an EVM address". */
export const FAMILY_NAMES: Readonly<Record<ChainFamily, string>> = { tron: "TRON", evm: "EVM" };

/**
 * Customer deposit addresses start at this derivation index; below it are the system wallets (hot
 * wallet 0, gas tank 1, TRON resource account 2; 3..99 kept free; src/wallet/derivation-path.ts).
 */
export const FIRST_DEPOSIT_INDEX = 100;

/**
 * The currency type whose account holds the deposit addresses of `network`: the one with slot 0 on
 * the same coin type (USDT-ERC20 for every EVM currency type, USDT-TRC20 on TRON). Deposit addresses
 * of all EVM currency types come from one account and one index sequence, so an address is one key
 * on every EVM network: a payment sent on the wrong network can be credited and swept there
 * (issue #37). System wallets (the indexes below 100: hot wallet, gas tank; src/wallet/derivation-path.ts) stay in each currency type's
 * own account, so no two currency types share a sending address (nor its nonces on one chain).
 */
export function depositAccountOf(network: CurrencyType): CurrencyType {
  const coin = currencyOf(network).definition.coinType;
  const owner = CURRENCY_TYPES.find(
    (c) => currencyOf(c).definition.coinType === coin && currencyOf(c).accountSlot === 0,
  );
  if (!owner) throw new Error(`No currency type has account slot 0 on coin type ${coin}.`);
  return owner;
}
