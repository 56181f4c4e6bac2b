/**
 * Test harness: TRON's resource model for the emulator (issue #38), free of HTTP and of anvil.
 * What a transaction costs on TRON and who pays it, after java-tron's `BandwidthProcessor`,
 * `EnergyProcessor` and the Stake 2.0 actuators (`FreezeBalanceV2`, `UnfreezeBalanceV2`,
 * `DelegateResource`, `UnDelegateResource`, `WithdrawExpireUnfreeze`), reduced to what a payment
 * gateway meets:
 *
 * - **Accounts exist or not.** An address comes into being by a TRX transfer to it (the sender
 *   pays the creation: `getCreateNewAccountFeeInSystemContract`, plus `getCreateAccountFee` when
 *   it has no staked bandwidth for it); one that does not exist sends nothing and receives no
 *   delegated resources. Receiving a TRC20 token does not create an account.
 * - **Bandwidth**, per transaction its size in bytes: from staked bandwidth (own and delegated in)
 *   when enough is left, else from the free daily allowance (`getFreeNetLimit`), else burned at
 *   `getTransactionFee` sun per byte. All or nothing per source, as java-tron does.
 * - **Energy**, per contract call: from staked energy first, the rest burned at `getEnergyFee` sun
 *   each, within the transaction's `fee_limit` (and the owner's balance): past it the call fails
 *   `OUT_OF_ENERGY`, having used all the staked energy and burned the whole limit.
 * - **Usage recovers** linearly over 24 hours (java-tron's window of 28,800 3-second slots).
 * - **Staking** turns TRX into a share of the network's daily limits: an account's energy is its
 *   staked TRX (own, plus delegated to it, minus delegated away) times `getTotalEnergyLimit` over the
 *   network's total staked weight (the rest of the network's weight is a setting, like the
 *   mainnet's). Bandwidth likewise with `getTotalNetLimit`.
 * - **Delegation** of staked TRX to an existing account, with an optional lock in blocks (3 s
 *   each, default 3 days); a locked delegation cannot be taken back before it expires. Taking one
 *   back moves its share of the receiver's usage to the owner.
 *
 * Balances in sun are bigint; energy and bandwidth are whole units (numbers: far below 2^53).
 * The liquid TRX balance itself is kept by the caller (the emulator keeps it in anvil); this module
 * says how much each step burns and refuses what TRON refuses.
 */

export type TronResource = "ENERGY" | "BANDWIDTH";

/** The chain parameters `wallet/getchainparameters` reports; tests change them, as governance does. */
export interface TronChainParameters {
  /** Sun burned per unit of energy a call lacks (mainnet: 420, then 210, now 100). */
  getEnergyFee: number;
  /** Sun burned per byte of bandwidth a transaction lacks. */
  getTransactionFee: number;
  /** Sun burned for the bandwidth of a transaction that creates an account, without staked bandwidth. */
  getCreateAccountFee: number;
  /** Sun the system contract charges for creating an account (a TRX transfer to a new address). */
  getCreateNewAccountFeeInSystemContract: number;
  /** Free bandwidth of every account per day, in bytes. */
  getFreeNetLimit: number;
  /** The energy the whole network gets per day, shared by stake. */
  getTotalEnergyLimit: number;
  /** The bandwidth the whole network gets per day, shared by stake. */
  getTotalNetLimit: number;
}

/** Mainnet's values (late 2025). */
export const MAINNET_PARAMETERS: TronChainParameters = {
  getEnergyFee: 100,
  getTransactionFee: 1_000,
  getCreateAccountFee: 100_000,
  getCreateNewAccountFeeInSystemContract: 1_000_000,
  getFreeNetLimit: 600,
  getTotalEnergyLimit: 180_000_000_000,
  getTotalNetLimit: 43_200_000_000,
};

/** TRX staked by the rest of the network (mainnet's order of magnitude): sets energy per TRX staked. */
export const MAINNET_OTHER_WEIGHTS = { energy: 19_000_000_000n, bandwidth: 26_000_000_000n };

export const SUN_PER_TRX = 1_000_000n;
/** java-tron's resource window: 28,800 slots of 3 s. */
export const WINDOW_MS = 24 * 60 * 60 * 1000;
/** A lock period is counted in blocks of 3 s; without one, a locked delegation lasts 3 days. */
export const BLOCK_MS = 3_000;
export const DEFAULT_LOCK_BLOCKS = 86_400;
/** Unstaked TRX can be withdrawn 14 days later. */
export const UNFREEZE_DELAY_MS = 14 * 24 * 60 * 60 * 1000;
/** What java-tron adds to a transaction's size for its result (`MAX_RESULT_SIZE_IN_TX`). */
export const RESULT_BYTES = 64;

/** A refusal as the node answers it at broadcast (the transaction never reaches a block). */
export class TronRefusal extends Error {
  constructor(
    readonly code: "CONTRACT_VALIDATE_ERROR" | "BANDWITH_ERROR",
    message: string,
  ) {
    super(message);
  }
}

interface Usage {
  used: number;
  at: number;
}

interface Delegation {
  to: string;
  resource: TronResource;
  sun: bigint;
  /** Epoch ms before which it cannot be taken back (0: not locked). */
  lockedUntil: number;
}

interface Account {
  frozen: Record<TronResource, bigint>;
  /** Staked TRX of others delegated to this account. */
  acquired: Record<TronResource, bigint>;
  delegations: Delegation[];
  unfreezing: { sun: bigint; expiresAt: number }[];
  energy: Usage;
  net: Usage;
  freeNet: Usage;
}

/** What a transaction used and burned (the receipt of `gettransactioninfobyid`). */
export interface Charges {
  netUsage: number;
  netFee: bigint;
  energyUsage: number;
  energyFee: bigint;
  energyTotal: number;
  /** Burned by the system contract itself (creating an account). */
  contractFee: bigint;
  outOfEnergy: boolean;
}

export const noCharges = (): Charges => ({
  netUsage: 0,
  netFee: 0n,
  energyUsage: 0,
  energyFee: 0n,
  energyTotal: 0,
  contractFee: 0n,
  outOfEnergy: false,
});

export const burned = (c: Charges) => c.netFee + c.energyFee + c.contractFee;

export class TronResources {
  parameters: TronChainParameters;
  otherWeights: { energy: bigint; bandwidth: bigint };
  private readonly accounts = new Map<string, Account>();
  private readonly activated = new Set<string>();

  constructor(
    private readonly now: () => number,
    parameters: Partial<TronChainParameters> = {},
  ) {
    this.parameters = { ...MAINNET_PARAMETERS, ...parameters };
    this.otherWeights = { ...MAINNET_OTHER_WEIGHTS };
  }

  // --- accounts -----------------------------------------------------------------------------

  exists(address: string): boolean {
    return this.activated.has(key(address));
  }

  /** The account comes into being (a TRX transfer to it, or funds given at genesis). */
  activate(address: string): void {
    this.activated.add(key(address));
  }

  private account(address: string): Account {
    const k = key(address);
    let a = this.accounts.get(k);
    if (!a) {
      const t = this.now();
      a = {
        frozen: { ENERGY: 0n, BANDWIDTH: 0n },
        acquired: { ENERGY: 0n, BANDWIDTH: 0n },
        delegations: [],
        unfreezing: [],
        energy: { used: 0, at: t },
        net: { used: 0, at: t },
        freeNet: { used: 0, at: t },
      };
      this.accounts.set(k, a);
    }
    return a;
  }

  // --- limits -------------------------------------------------------------------------------

  private delegatedAway(a: Account, resource: TronResource): bigint {
    return a.delegations.filter((d) => d.resource === resource).reduce((s, d) => s + d.sun, 0n);
  }

  /** TRX (sun) whose resource this account uses: its own stake not delegated away, plus what it acquired. */
  private effectiveStake(a: Account, resource: TronResource): bigint {
    return a.frozen[resource] - this.delegatedAway(a, resource) + a.acquired[resource];
  }

  /** The network's staked weight in whole TRX: the rest of the network plus every account here. */
  totalWeight(resource: TronResource): bigint {
    let ours = 0n;
    for (const a of this.accounts.values()) ours += a.frozen[resource];
    const other = resource === "ENERGY" ? this.otherWeights.energy : this.otherWeights.bandwidth;
    return other + ours / SUN_PER_TRX;
  }

  private limitOf(a: Account, resource: TronResource): number {
    const total =
      resource === "ENERGY" ? this.parameters.getTotalEnergyLimit : this.parameters.getTotalNetLimit;
    const weight = this.totalWeight(resource);
    if (weight === 0n) return 0;
    return Number(((this.effectiveStake(a, resource) / SUN_PER_TRX) * BigInt(total)) / weight);
  }

  /** Usage decays linearly to nothing over the window. */
  private usedNow(u: Usage): number {
    const elapsed = this.now() - u.at;
    if (elapsed >= WINDOW_MS) return 0;
    return Math.ceil((u.used * (WINDOW_MS - elapsed)) / WINDOW_MS);
  }

  private use(u: Usage, amount: number): void {
    u.used = this.usedNow(u) + amount;
    u.at = this.now();
  }

  energyLeft(address: string): number {
    const a = this.account(address);
    return Math.max(0, this.limitOf(a, "ENERGY") - this.usedNow(a.energy));
  }

  /** `wallet/getaccountresource` as java-tron answers it (zero fields left out, as it does). */
  accountResource(address: string): Record<string, number> {
    const a = this.account(address);
    const fields: Record<string, number> = {
      freeNetUsed: this.usedNow(a.freeNet),
      freeNetLimit: this.exists(address) ? this.parameters.getFreeNetLimit : 0,
      NetUsed: this.usedNow(a.net),
      NetLimit: this.limitOf(a, "BANDWIDTH"),
      EnergyUsed: this.usedNow(a.energy),
      EnergyLimit: this.limitOf(a, "ENERGY"),
      TotalNetLimit: this.parameters.getTotalNetLimit,
      TotalNetWeight: Number(this.totalWeight("BANDWIDTH")),
      TotalEnergyLimit: this.parameters.getTotalEnergyLimit,
      TotalEnergyWeight: Number(this.totalWeight("ENERGY")),
    };
    return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== 0));
  }

  /** The Stake 2.0 fields of `wallet/getaccount` (zero ones left out). */
  accountFields(address: string): Record<string, unknown> {
    const a = this.account(address);
    const out: Record<string, unknown> = {};
    const frozenV2 = [
      ...(a.frozen.BANDWIDTH > 0n ? [{ amount: Number(a.frozen.BANDWIDTH) }] : []),
      ...(a.frozen.ENERGY > 0n ? [{ type: "ENERGY", amount: Number(a.frozen.ENERGY) }] : []),
    ];
    if (frozenV2.length > 0) out.frozenV2 = frozenV2;
    if (a.unfreezing.length > 0)
      out.unfrozenV2 = a.unfreezing.map((u) => ({
        unfreeze_amount: Number(u.sun),
        unfreeze_expire_time: u.expiresAt,
      }));
    const away = (r: TronResource) => Number(this.delegatedAway(a, r));
    if (away("BANDWIDTH") > 0) out.delegated_frozenV2_balance_for_bandwidth = away("BANDWIDTH");
    if (a.acquired.BANDWIDTH > 0n)
      out.acquired_delegated_frozenV2_balance_for_bandwidth = Number(a.acquired.BANDWIDTH);
    const resource: Record<string, number> = {};
    if (away("ENERGY") > 0) resource.delegated_frozenV2_balance_for_energy = away("ENERGY");
    if (a.acquired.ENERGY > 0n)
      resource.acquired_delegated_frozenV2_balance_for_energy = Number(a.acquired.ENERGY);
    const energyUsed = this.usedNow(a.energy);
    if (energyUsed > 0) resource.energy_usage = energyUsed;
    if (Object.keys(resource).length > 0) out.account_resource = resource;
    const netUsed = this.usedNow(a.net);
    if (netUsed > 0) out.net_usage = netUsed;
    const freeUsed = this.usedNow(a.freeNet);
    if (freeUsed > 0) out.free_net_usage = freeUsed;
    return out;
  }

  /** The delegations from `owner` (to one receiver, or all), for `wallet/getdelegatedresourcev2`. */
  delegationsOf(
    owner: string,
    to?: string,
  ): { to: string; resource: TronResource; sun: bigint; lockedUntil: number }[] {
    return this.account(owner).delegations.filter((d) => to === undefined || d.to === key(to));
  }

  /** How much staked TRX (sun) `owner` can delegate now: stake not delegated and not in use. */
  canDelegate(owner: string, resource: TronResource): bigint {
    const a = this.account(owner);
    const free = a.frozen[resource] - this.delegatedAway(a, resource);
    const limit = this.limitOf(a, resource);
    const used = resource === "ENERGY" ? this.usedNow(a.energy) : this.usedNow(a.net);
    if (limit === 0 || used === 0) return free > 0n ? free : 0n;
    // The share of the stake the usage stands for stays (java-tron's getcandelegatedmaxsize).
    const inUse = (this.effectiveStake(a, resource) * BigInt(used)) / BigInt(limit);
    const left = free - inUse;
    return left > 0n ? left : 0n;
  }

  // --- charges ------------------------------------------------------------------------------

  /**
   * The bandwidth of a transaction of `bytes` (its size plus the result's), taken from `owner`;
   * `createsAccount` for a TRX transfer to an address that does not exist yet. Returns what it
   * burns (the caller takes it from the balance); refuses when the balance cannot cover it.
   */
  chargeBandwidth(
    owner: string,
    bytes: number,
    balance: bigint,
    createsAccount: boolean,
  ): Pick<Charges, "netUsage" | "netFee"> {
    const a = this.account(owner);
    const stakedLeft = this.limitOf(a, "BANDWIDTH") - this.usedNow(a.net);
    if (createsAccount) {
      // java-tron's consumeForCreateNewAccount: staked bandwidth, else the account creation fee.
      if (stakedLeft >= bytes) {
        this.use(a.net, bytes);
        return { netUsage: bytes, netFee: 0n };
      }
      const fee = BigInt(this.parameters.getCreateAccountFee);
      if (balance < fee) throw new TronRefusal("BANDWITH_ERROR", "Account resource insufficient error.");
      return { netUsage: 0, netFee: fee };
    }
    if (stakedLeft >= bytes) {
      this.use(a.net, bytes);
      return { netUsage: bytes, netFee: 0n };
    }
    if (this.parameters.getFreeNetLimit - this.usedNow(a.freeNet) >= bytes) {
      this.use(a.freeNet, bytes);
      return { netUsage: bytes, netFee: 0n };
    }
    const fee = BigInt(bytes) * BigInt(this.parameters.getTransactionFee);
    if (balance < fee) throw new TronRefusal("BANDWITH_ERROR", "Account resource insufficient error.");
    return { netUsage: 0, netFee: fee };
  }

  /**
   * The energy of a contract call needing `needed`: staked energy first, the rest burned within
   * `feeLimit` and `balance`. Past them: out of energy (all the staked energy used, the limit burned).
   */
  chargeEnergy(
    owner: string,
    needed: number,
    feeLimit: bigint,
    balance: bigint,
  ): Pick<Charges, "energyUsage" | "energyFee" | "energyTotal" | "outOfEnergy"> {
    const a = this.account(owner);
    const left = Math.max(0, this.limitOf(a, "ENERGY") - this.usedNow(a.energy));
    const price = BigInt(this.parameters.getEnergyFee);
    const fromStake = Math.min(left, needed);
    const burn = BigInt(needed - fromStake) * price;
    let canBurn = feeLimit;
    if (balance < canBurn) canBurn = balance;
    if (burn <= canBurn) {
      if (fromStake > 0) this.use(a.energy, fromStake);
      return { energyUsage: fromStake, energyFee: burn, energyTotal: needed, outOfEnergy: false };
    }
    // java-tron: the call's energy limit is what the stake and the fee limit buy; all of it is spent.
    const bought = Number(canBurn / price);
    const fee = BigInt(bought) * price;
    if (left > 0) this.use(a.energy, left);
    return { energyUsage: left, energyFee: fee, energyTotal: left + bought, outOfEnergy: true };
  }

  // --- the Stake 2.0 contracts (validated as java-tron's actuators do) ---------------------------

  freeze(owner: string, sun: bigint, resource: TronResource, balance: bigint): void {
    if (sun < SUN_PER_TRX) throw validate("frozenBalance must be greater than or equal to 1 TRX");
    if (sun > balance) throw validate("frozenBalance must be less than or equal to accountBalance");
    this.account(owner).frozen[resource] += sun;
  }

  /** Starts unstaking `sun` (withdrawable 14 days later); its share of usage stays with the account. */
  unfreeze(owner: string, sun: bigint, resource: TronResource): void {
    const a = this.account(owner);
    const free = a.frozen[resource] - this.delegatedAway(a, resource);
    if (sun <= 0n || sun > free)
      throw validate(`Invalid unfreeze_balance, [${sun}] is invalid; the stake not delegated is ${free}`);
    a.frozen[resource] -= sun;
    a.unfreezing.push({ sun, expiresAt: this.now() + UNFREEZE_DELAY_MS });
  }

  /** The unstaked TRX whose 14 days are over, back to the balance: returns how much. */
  withdrawExpired(owner: string): bigint {
    const a = this.account(owner);
    const now = this.now();
    const due = a.unfreezing.filter((u) => u.expiresAt <= now);
    if (due.length === 0) throw validate("no unFreeze balance to withdraw");
    a.unfreezing = a.unfreezing.filter((u) => u.expiresAt > now);
    return due.reduce((s, u) => s + u.sun, 0n);
  }

  delegate(owner: string, to: string, sun: bigint, resource: TronResource, lockBlocks: number | null): void {
    if (key(owner) === key(to)) throw validate("receiverAddress must not be the same as ownerAddress");
    if (!this.exists(to)) throw validate(`Account [${key(to)}] does not exist`);
    if (sun < SUN_PER_TRX) throw validate("delegateBalance must be greater than or equal to 1 TRX");
    const max = this.canDelegate(owner, resource);
    if (sun > max)
      throw validate(`delegateBalance must be less than or equal to available FreezeV2 balance (${max})`);
    const lockedUntil = lockBlocks === null ? 0 : this.now() + (lockBlocks || DEFAULT_LOCK_BLOCKS) * BLOCK_MS;
    const a = this.account(owner);
    const same = a.delegations.find(
      (d) => d.to === key(to) && d.resource === resource && d.lockedUntil > 0 === lockedUntil > 0,
    );
    if (same) {
      // A locked delegation added to keeps the later lock (java-tron refuses a shorter one).
      if (lockedUntil > 0 && lockedUntil < same.lockedUntil)
        throw validate("the lock period must not be shorter than the remaining lock");
      same.sun += sun;
      same.lockedUntil = Math.max(same.lockedUntil, lockedUntil);
    } else a.delegations.push({ to: key(to), resource, sun, lockedUntil });
    this.account(to).acquired[resource] += sun;
  }

  /** Takes back `sun` of what `owner` delegated to `to` (only what is not locked any more). */
  undelegate(owner: string, to: string, sun: bigint, resource: TronResource): void {
    const a = this.account(owner);
    const now = this.now();
    const open = a.delegations.filter(
      (d) => d.to === key(to) && d.resource === resource && d.lockedUntil <= now,
    );
    const available = open.reduce((s, d) => s + d.sun, 0n);
    if (sun <= 0n || sun > available)
      throw validate(
        `insufficient delegatedFrozenBalance(${resource}), request=${sun}, unlock_balance=${available}`,
      );
    const receiver = this.account(to);
    // The receiver's usage, in the share the taken-back stake stood for, moves to the owner.
    const usage = resource === "ENERGY" ? "energy" : "net";
    const receiverStake = this.effectiveStake(receiver, resource);
    const receiverUsed = this.usedNow(receiver[usage]);
    const moved = receiverStake > 0n ? Number((BigInt(receiverUsed) * sun) / receiverStake) : 0;
    if (moved > 0) {
      this.use(receiver[usage], -moved);
      this.use(a[usage], moved);
    }
    let rest = sun;
    for (const d of open) {
      let take = rest;
      if (d.sun < take) take = d.sun;
      d.sun -= take;
      rest -= take;
      if (rest === 0n) break;
    }
    a.delegations = a.delegations.filter((d) => d.sun > 0n);
    receiver.acquired[resource] -= sun;
  }
}

const key = (address: string) => address.toLowerCase();
const validate = (message: string) => new TronRefusal("CONTRACT_VALIDATE_ERROR", message);
