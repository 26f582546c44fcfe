// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice Test stablecoin that rebases, as stETH or aTokens do: holders own shares, and a balance is
/// shares × index, so balances grow without transfers. The owner mints and moves the index.
contract RebasingUSD {
    string public constant name = "Rebasing USD";
    string public constant symbol = "rUSD";
    uint8 public constant decimals = 6;
    address public immutable owner;
    uint256 public index = 1.05e18;
    uint256 public totalShares;
    mapping(address => uint256) public sharesOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(address owner_) {
        owner = owner_;
    }

    function balanceOf(address who) public view returns (uint256) {
        return sharesOf[who] * index / 1e18;
    }

    function totalSupply() external view returns (uint256) {
        return totalShares * index / 1e18;
    }

    function setIndex(uint256 index_) external {
        require(msg.sender == owner, "owner");
        index = index_;
    }

    function mint(address to, uint256 amount) external {
        require(msg.sender == owner, "owner");
        uint256 shares = amount * 1e18 / index;
        sharesOf[to] += shares;
        totalShares += shares;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "allowance");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) private {
        uint256 shares = value * 1e18 / index;
        sharesOf[from] -= shares;
        sharesOf[to] += shares;
        emit Transfer(from, to, value);
    }
}
