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
/// - Stateless: no storage variables (a delegating account's storage is its own, may have been
///   written by an earlier delegation and must never steer this code), no owner, no initialiser.
/// - Anyone may call `sweep` and `sweepMany`: the worst a caller can do is move a deposit's tokens to
///   the hot wallet early, which is what the gateway wants anyway. Re-entrancy (a hostile token whose
///   `transfer` calls back into the account) can only do the same, since nothing is stored.
/// - A `receive` that does nothing, so that a delegated account still takes plain ETH as it did
///   before it delegated: the gateway tops up a deposit address's gas to return a held deposit to
///   its sender (the address signs that transaction itself). Nothing in this contract moves ETH.
/// - No `fallback`: unknown calls and ETH sent with call data revert, and no other selector (e.g. a
///   forged `transfer(address,uint256)`) reaches any code.
/// - No `delegatecall`, no `selfdestruct`: the code never runs anything but a token's `transfer`.
/// - Compiled for `paris` (no PUSH0) with `bytecodeHash: none`, so the creation code (and the
///   CREATE2 address) depends on the source and compiler only (scripts/build-token.ts).
/// @dev The key of a deposit address keeps full control of it (it can sign ordinary transactions or
/// re-delegate); the sweeper adds a way to move tokens to the hot wallet, never another way out.
contract StablegateSweeper {
    /// @notice Where every sweep sends the tokens; fixed in the bytecode at deployment.
    address public immutable hotWallet;

    /// @notice `sweepMany` could not sweep `account` (its `sweep` reverted: e.g. a frozen address,
    /// too little balance, a token that refuses the transfer); the other accounts are still swept.
    event SweepFailed(address indexed account);

    /// @notice The constructor's hot wallet is the zero address.
    error ZeroHotWallet();
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
    constructor(address hot) {
        if (hot == address(0)) revert ZeroHotWallet();
        hotWallet = hot;
    }

    /// @notice Moves `amount` of `token` held by this account (the delegating deposit address, or the
    /// sweeper contract itself) to `hotWallet`.
    /// @dev A low-level call of `transfer(address,uint256)`: success is no return data (Tether's USDT
    /// returns nothing) from a token that has code, or a return that decodes to `true`. Anything else
    /// reverts with `TransferFailed`.
    /// @param token The ERC20 token.
    /// @param amount Base units to move.
    function sweep(address token, uint256 amount) external {
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(ISweptToken.transfer, (hotWallet, amount)));
        bool accepted = ok &&
            (ret.length == 0 ? token.code.length != 0 : (ret.length >= 32 && abi.decode(ret, (bool))));
        if (!accepted) revert TransferFailed(token);
    }

    /// @notice Sweeps `amounts[i]` of `token` from each delegated `accounts[i]` to `hotWallet`, in one
    /// transaction (sent by the gas tank, with the accounts' authorizations in it when they are new).
    /// @dev Calls `accounts[i].sweep(token, amounts[i])`: an account that reverts emits `SweepFailed`
    /// and does not revert the batch. An account without code (not delegated) succeeds doing nothing:
    /// the caller checks the token's Transfer logs for what moved.
    /// One exception: a sweep that failed leaving less than 1/8 of the gas there was before the call
    /// ran out of gas somewhere (a call keeps 1/64 of its gas back, EIP-150, so an out-of-gas up to
    /// 7 calls deep, e.g. in a proxy token's implementation, returns only a few 64ths): the whole
    /// batch reverts with `InsufficientGas` instead of reporting the account as failed. Otherwise a
    /// gas limit just too low would still succeed with the last accounts unswept and reported as
    /// failed, and `eth_estimateGas` (which looks for the lowest limit at which the transaction
    /// succeeds) would return such a limit. A sweep that fails for a reason (a frozen address, too
    /// little balance) returns long before using 7/8 of the gas. A token that burns all the gas it
    /// gets therefore reverts the whole batch: a batch is of one token, the gateway's own.
    /// @param token The ERC20 token.
    /// @param accounts The delegated deposit addresses.
    /// @param amounts Base units to move from each account.
    function sweepMany(address token, address[] calldata accounts, uint256[] calldata amounts) external {
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
