// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// The sweeper as a delegated deposit address exposes it (contracts/StablegateSweeper.sol).
interface IStablegateSweeper {
    function sweep(address token, uint256 amount) external;

    function sweepMany(address token, address[] calldata accounts, uint256[] calldata amounts) external;
}

/// The other token's functions the attacks try.
interface IVictimToken {
    function balanceOf(address owner) external view returns (uint256);
}

/// @title HostileToken
/// @notice TESTS ONLY (test/chains/sweeper-contract.test.ts): an ERC20-ish token whose `transfer`
/// attacks the account that calls it, i.e. a deposit address delegated to StablegateSweeper that is
/// sweeping this token. From inside the sweep it re-enters the account (`sweep` and `sweepMany` of
/// `otherToken`), forges a `transfer(attacker, …)` call to the account, tries `transferFrom` of the
/// account's `otherToken` to `attacker`, and sends the account plain calls and ETH; each attempt emits
/// `Attempt(kind, ok)`. `gasBurn` makes every transfer burn that much gas first. Then, by `mode`, it moves its own balance as an ERC20 does (reverting for a
/// sender in `refuses`, which undoes the attack), returns false or returns a non-bool.
contract HostileToken {
    /// A plain ERC20 transfer, no attack.
    uint8 public constant HONEST = 0;
    /// Attacks, then transfers and returns true (or reverts for a sender in `refuses`).
    uint8 public constant ATTACK = 1;
    /// Returns false without moving anything.
    uint8 public constant RETURN_FALSE = 2;
    /// Returns 32 bytes that are not an ABI bool (2).
    uint8 public constant RETURN_GARBAGE = 3;

    // Attempt kinds.
    uint8 public constant REENTER_SWEEP = 1;
    uint8 public constant FORGED_TRANSFER = 2;
    uint8 public constant TRANSFER_FROM = 3;
    uint8 public constant REENTER_SWEEP_MANY = 4;
    uint8 public constant UNKNOWN_SELECTOR = 5;
    uint8 public constant EMPTY_CALL = 6;
    uint8 public constant SWEEP_SELF = 7;

    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;

    uint8 public mode;
    address public otherToken;
    address public attacker;
    address[] public victims;
    /// Senders whose transfer attacks and then reverts (their sweep fails, the attack is undone).
    mapping(address => bool) public refuses;
    /// Gas every transfer burns first (a legitimately expensive token), 0 for none.
    uint256 public gasBurn;
    bool private attacking;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Attempt(uint8 indexed kind, bool ok);

    /// Anyone may configure (tests only).
    function configure(uint8 mode_, address otherToken_, address attacker_, address[] calldata victims_)
        external
    {
        mode = mode_;
        otherToken = otherToken_;
        attacker = attacker_;
        victims = victims_;
    }

    function setRefuses(address account, bool on) external {
        refuses[account] = on;
    }

    function setGasBurn(uint256 gas) external {
        gasBurn = gas;
    }

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 burn = gasBurn;
        if (burn != 0) {
            uint256 start = gasleft();
            while (start - gasleft() < burn) {}
        }
        uint8 m = mode;
        if (m == RETURN_FALSE) return false;
        if (m == RETURN_GARBAGE) {
            assembly {
                mstore(0, 2)
                return(0, 32)
            }
        }
        if (m == ATTACK && !attacking) {
            attacking = true;
            attack(msg.sender);
            attacking = false;
        }
        if (refuses[msg.sender]) revert("hostile");
        require(balanceOf[msg.sender] >= value, "balance");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }

    function attack(address account) private {
        address other = otherToken;
        address thief = attacker;
        uint256 held = IVictimToken(other).balanceOf(account);
        bool ok;

        // Re-enter the account's sweep of the other token: it can only pay the hot wallet.
        (ok, ) = account.call(abi.encodeCall(IStablegateSweeper.sweep, (other, held)));
        emit Attempt(REENTER_SWEEP, ok);

        // Call the account as if it were the token: `transfer(attacker, …)` is no function of the
        // sweeper (no fallback): it reverts.
        (ok, ) = account.call(abi.encodeWithSignature("transfer(address,uint256)", thief, held));
        emit Attempt(FORGED_TRANSFER, ok);

        // Pull the other token from the account: no allowance.
        (ok, ) = other.call(abi.encodeWithSignature("transferFrom(address,address,uint256)", account, thief, 1));
        emit Attempt(TRANSFER_FROM, ok);

        // Re-enter sweepMany over the victims (other delegated deposit addresses): their whole
        // balances, which again can only go to the hot wallet.
        address[] memory vs = victims;
        uint256[] memory amounts = new uint256[](vs.length);
        for (uint256 i = 0; i < vs.length; ++i) amounts[i] = IVictimToken(other).balanceOf(vs[i]);
        (ok, ) = account.call(abi.encodeCall(IStablegateSweeper.sweepMany, (other, vs, amounts)));
        emit Attempt(REENTER_SWEEP_MANY, ok);

        // An unknown selector (no fallback: refused) and an empty call (taken by `receive`: it moves
        // nothing).
        (ok, ) = account.call(abi.encodeWithSignature("execute(address,uint256,bytes)", thief, 0, ""));
        emit Attempt(UNKNOWN_SELECTOR, ok);
        (ok, ) = account.call{value: 0}("");
        emit Attempt(EMPTY_CALL, ok);

        // Sweep this hostile token itself from inside its own transfer (nothing, so the outer
        // transfer still has its balance; the guard stops the loop).
        (ok, ) = account.call(abi.encodeCall(IStablegateSweeper.sweep, (address(this), 0)));
        emit Attempt(SWEEP_SELF, ok);
    }
}
