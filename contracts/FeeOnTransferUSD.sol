// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @notice Test stablecoin that burns `transferFeeBps` of every transfer between two holders (mints
/// and burns are exempt), as fee-on-transfer tokens do. The owner and its minters can mint.
contract FeeOnTransferUSD is ERC20, Ownable {
    uint256 public immutable transferFeeBps;
    mapping(address => bool) public isMinter;

    error NotMinter(address caller);

    constructor(address owner_, uint256 transferFeeBps_) ERC20("Fee USD", "FUSD") Ownable(owner_) {
        transferFeeBps = transferFeeBps_;
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function setMinter(address minter, bool allowed) external onlyOwner {
        isMinter[minter] = allowed;
    }

    function mint(address to, uint256 amount) external {
        if (msg.sender != owner() && !isMinter[msg.sender]) revert NotMinter(msg.sender);
        _mint(to, amount);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from == address(0) || to == address(0)) return super._update(from, to, value);
        uint256 fee = (value * transferFeeBps) / 10_000;
        super._update(from, address(0), fee);
        super._update(from, to, value - fee);
    }
}
