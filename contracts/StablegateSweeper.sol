// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The one token function the sweeper calls (a bool return is optional: see `sweep`).
interface ISweptToken {
    function transfer(address to, uint256 amount) external returns (bool);
}

/// @title StablegateSweeper
/// @notice The code a stablegate deposit address delegates to with EIP-7702 (a type-4 transaction's
/// authorization signed by the deposit key), so that the gateway's "gas tank" sweeps tokens out of
/// deposit addresses that hold no ETH, many in one transaction.
///
/// Design:
/// - The ONLY destination is `hotWallet`, an immutable: it lives in this contract's bytecode, so it
///   is the same for every account that delegates here and cannot be changed by any call. No function
///   takes a destination. Changing the hot wallet means deploying another sweeper and having each
///   deposit key authorise it (re-delegation): an authorization names the code, hence the hot wallet.
/// - The ONLY token is `token`, an immutable too: one sweeper per (hot wallet, token), i.e. per
///   currency type. The currency types of one chain (e.g. USDT and USDC on Ethereum) share deposit
///   addresses but each has its own hot wallet, so a sweeper that moved any token would let anyone
///   move, say, a USDC deposit at an address delegated to USDT's sweeper into USDT's hot wallet, where
///   USDC is stuck. `sweep` and `sweepMany` still take the token (the gateway's calls name it) but
///   revert with `WrongToken` for any other: a deposit of another token at a delegated address cannot
///   be moved by this sweeper at all. Its own currency type's batch re-authorises the address to its
///   own sweeper (re-delegation, as for a new hot wallet), which then moves it to its own hot wallet.
/// - Stateless: no storage variables (a delegating account's storage is its own, may have been
///   written by an earlier delegation and must never steer this code), no owner, no initialiser.
/// - Anyone may call `sweep` and `sweepMany`: the worst a caller can do is move a deposit's `token`
///   to the hot wallet early, which is what the gateway wants anyway. Re-entrancy (a hostile token
///   whose `transfer` calls back into the account) can only do the same, since nothing is stored.
/// - A `receive` that does nothing, so that a delegated account still takes plain ETH as it did
///   before it delegated: the gateway tops up a deposit address's gas to return a held deposit to
///   its sender (the address signs that transaction itself). Nothing in this contract moves ETH.
/// - No `fallback`: unknown calls and ETH sent with call data revert, and no other selector (e.g. a
///   forged `transfer(address,uint256)`) reaches any code.
/// - No `delegatecall`, no `selfdestruct`: the code never runs anything but a token's `transfer`.
/// - Compiled for `paris` (no PUSH0) with `bytecodeHash: none`, so the creation code (and the
///   CREATE2 address) depends on the source and compiler only (scripts/build-token.ts).
/// @dev The key of a deposit address keeps full control of it (it can sign ordinary transactions or
/// re-delegate); the sweeper adds a way to move its token to its hot wallet, never another way out.
contract StablegateSweeper {
    /// @notice Where every sweep sends the tokens; fixed in the bytecode at deployment.
    address public immutable hotWallet;
    /// @notice The only token any sweep moves (the currency type's); fixed in the bytecode at deployment.
    address public immutable token;

    /// @notice `sweepMany` could not sweep `account` (its `sweep` reverted: e.g. a frozen address,
    /// too little balance, a token that refuses the transfer); the other accounts are still swept.
    event SweepFailed(address indexed account);

    /// @notice The constructor's hot wallet is the zero address.
    error ZeroHotWallet();
    /// @notice The constructor's token is the zero address.
    error ZeroToken();
    /// @notice `sweep` or `sweepMany` was called for `token`, which is not this sweeper's `token`
    /// (another currency type's deposit at the same address: not this sweeper's to move).
    error WrongToken(address token);
    /// @notice `sweepMany`'s `accounts` and `amounts` differ in length.
    error LengthMismatch();
    /// @notice An account's sweep ran out of gas: the transaction's gas limit is too low for the batch.
    error InsufficientGas();
    /// @notice The token's `transfer` reverted, returned `false` or something that is not a bool, or
    /// the token has no code.
    error TransferFailed(address token);

    /// @notice Plain ETH is taken, as by the account before it delegated (a gas top-up); it stays
    /// there: no function of this contract moves ETH.
    receive() external payable {}

    /// @param hot The hot wallet every sweep sends to (not the zero address).
    /// @param token_ The only token this sweeper moves (not the zero address).
    constructor(address hot, address token_) {
        if (hot == address(0)) revert ZeroHotWallet();
        if (token_ == address(0)) revert ZeroToken();
        hotWallet = hot;
        token = token_;
    }

    /// @notice Moves `amount` of `token` held by this account (the delegating deposit address, or the
    /// sweeper contract itself) to `hotWallet`.
    /// @dev Reverts with `WrongToken` unless `token_` is `token`. Then a low-level call of
    /// `transfer(address,uint256)`: success is no return data (Tether's USDT returns nothing) from a
    /// token that has code, or a return that decodes to `true`. Anything else reverts with
    /// `TransferFailed`.
    /// @param token_ The ERC20 token: must be `token` (the parameter stays so the call names it).
    /// @param amount Base units to move.
    function sweep(address token_, uint256 amount) external {
        if (token_ != token) revert WrongToken(token_);
        (bool ok, bytes memory ret) = token_.call(abi.encodeCall(ISweptToken.transfer, (hotWallet, amount)));
        bool accepted = ok &&
            (ret.length == 0 ? token_.code.length != 0 : (ret.length >= 32 && abi.decode(ret, (bool))));
        if (!accepted) revert TransferFailed(token_);
    }

    /// @notice Sweeps `amounts[i]` of `token` from each delegated `accounts[i]` to `hotWallet`, in one
    /// transaction (sent by the gas tank, with the accounts' authorizations in it when they are new).
    /// @dev Reverts the whole batch with `WrongToken`, before any account, unless `token_` is `token`.
    /// Calls `accounts[i].sweep(token, amounts[i])`: an account that reverts emits `SweepFailed` and
    /// does not revert the batch (e.g. an account delegated to another currency type's sweeper, whose
    /// `sweep` refuses this token). An account without code (not delegated) succeeds doing nothing:
    /// the caller checks the token's Transfer logs for what moved.
    /// One exception: a sweep that failed leaving less than 1/8 of the gas there was before the call
    /// ran out of gas somewhere (a call keeps 1/64 of its gas back, EIP-150, so an out-of-gas up to
    /// 7 calls deep, e.g. in a proxy token's implementation, returns only a few 64ths): the whole
    /// batch reverts with `InsufficientGas` instead of reporting the account as failed. Otherwise a
    /// gas limit just too low would still succeed with the last accounts unswept and reported as
    /// failed, and `eth_estimateGas` (which looks for the lowest limit at which the transaction
    /// succeeds) would return such a limit. A sweep that fails for a reason (a frozen address, too
    /// little balance) returns long before using 7/8 of the gas. A token that burns all the gas it
    /// gets therefore reverts the whole batch: a batch is of one token, this sweeper's `token`.
    /// @param token_ The ERC20 token: must be `token` (the parameter stays so the call names it).
    /// @param accounts The delegated deposit addresses.
    /// @param amounts Base units to move from each account.
    function sweepMany(address token_, address[] calldata accounts, uint256[] calldata amounts) external {
        if (token_ != token) revert WrongToken(token_);
        if (accounts.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < accounts.length; ++i) {
            uint256 gasBefore = gasleft();
            (bool ok, ) = accounts[i].call(abi.encodeCall(this.sweep, (token, amounts[i])));
            if (!ok) {
                if (gasleft() < gasBefore / 8) revert InsufficientGas();
                emit SweepFailed(accounts[i]);
            }
        }
    }
}
