// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestToken
/// @notice An ERC20 for stablegate's tests whose name, symbol and decimals are chosen at deployment,
/// e.g. 6 decimals to emulate USDC or 18 to emulate Binance-Peg USDT/USDC on BNB Smart Chain.
/// Otherwise identical to TestUSDT (same mint/transfer/transferFrom/approve and events).
/// Anyone may mint: it only ever runs on local test chains.
///
/// `freezeStyle` (chosen at deployment) is how its issuer freezes addresses, as the registry's
/// `FreezeKind`; the owner (the deployer) freezes. Each style has only its own functions working,
/// every other freeze function and view reverts ("no freeze"), so a registry entry of another kind
/// is a fault the adapter sees, never "not frozen":
/// - 0 `none` (Binance-Peg): no freeze at all.
/// - 1 `usdc` (Circle's FiatToken): `blacklist`, `unBlacklist`, `isBlacklisted`; a transfer from or
///   to a blacklisted account (or by a blacklisted spender) reverts.
/// - 2 `tether-blocked` (Tether's USDT0): `addToBlockedList`, `removeFromBlockedList`,
///   `destroyBlockedFunds`, `isBlocked`; only the sender (and a spender) is checked, a transfer TO
///   a blocked address succeeds.
contract TestToken {
    uint8 internal constant FREEZE_NONE = 0;
    uint8 internal constant FREEZE_USDC = 1;
    uint8 internal constant FREEZE_TETHER_BLOCKED = 2;

    string public name;
    string public symbol;
    uint8 public immutable decimals;
    uint8 public immutable freezeStyle;
    address public immutable owner;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    mapping(address => bool) internal frozen;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    // Style 1 (FiatToken).
    event Blacklisted(address indexed _account);
    event UnBlacklisted(address indexed _account);

    // Style 2 (USDT0).
    event BlockPlaced(address indexed _user);
    event BlockReleased(address indexed _user);
    event DestroyedBlockedFunds(address indexed _blockedUser, uint256 _balance);

    constructor(string memory name_, string memory symbol_, uint8 decimals_, uint8 freezeStyle_) {
        require(freezeStyle_ <= FREEZE_TETHER_BLOCKED, "freeze style");
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        freezeStyle = freezeStyle_;
        owner = msg.sender;
    }

    /// The function belongs to `style`: it reverts on a token of another style.
    modifier styled(uint8 style) {
        require(freezeStyle == style, "no freeze");
        _;
    }

    modifier onlyOwner() {
        require(msg.sender == owner, "owner");
        _;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _checkFrozen(msg.sender, msg.sender, to);
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        _checkFrozen(msg.sender, from, to);
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "allowance");
        if (allowed != type(uint256).max) {
            allowance[from][msg.sender] = allowed - value;
        }
        _transfer(from, to, value);
        return true;
    }

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    // ---- Style 1: Circle's FiatToken ----

    function isBlacklisted(address _account) external view styled(FREEZE_USDC) returns (bool) {
        return frozen[_account];
    }

    function blacklist(address _account) external styled(FREEZE_USDC) onlyOwner {
        frozen[_account] = true;
        emit Blacklisted(_account);
    }

    function unBlacklist(address _account) external styled(FREEZE_USDC) onlyOwner {
        frozen[_account] = false;
        emit UnBlacklisted(_account);
    }

    // ---- Style 2: Tether's USDT0 ----

    function isBlocked(address _user) external view styled(FREEZE_TETHER_BLOCKED) returns (bool) {
        return frozen[_user];
    }

    function addToBlockedList(address _user) external styled(FREEZE_TETHER_BLOCKED) onlyOwner {
        frozen[_user] = true;
        emit BlockPlaced(_user);
    }

    function removeFromBlockedList(address _user) external styled(FREEZE_TETHER_BLOCKED) onlyOwner {
        frozen[_user] = false;
        emit BlockReleased(_user);
    }

    /// As Tether's: a burn (a Transfer to the zero address), then DestroyedBlockedFunds.
    function destroyBlockedFunds(address _blockedUser) external styled(FREEZE_TETHER_BLOCKED) onlyOwner {
        require(frozen[_blockedUser], "not blocked");
        uint256 blockedFunds = balanceOf[_blockedUser];
        balanceOf[_blockedUser] = 0;
        totalSupply -= blockedFunds;
        emit Transfer(_blockedUser, address(0), blockedFunds);
        emit DestroyedBlockedFunds(_blockedUser, blockedFunds);
    }

    function _checkFrozen(address spender, address from, address to) internal view {
        if (freezeStyle == FREEZE_USDC) {
            require(!frozen[spender] && !frozen[from] && !frozen[to], "Blacklistable: account is blacklisted");
        } else if (freezeStyle == FREEZE_TETHER_BLOCKED) {
            require(!frozen[spender] && !frozen[from], "Blocked: sender is blocked");
        }
    }

    function _transfer(address from, address to, uint256 value) internal {
        require(to != address(0), "zero address");
        require(balanceOf[from] >= value, "balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
