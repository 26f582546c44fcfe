// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @notice 6-decimal USD stablecoin for the local chain and the tests. The owner and the minters it
/// names can mint; the yield vaults are minters so that they can pay their own interest. Supports
/// EIP-2612 `permit` (as USDC does), so the embed's and the SDK's permit deposit can be shown.
contract TestUSD is ERC20, ERC20Permit, Ownable {
    mapping(address => bool) public isMinter;

    event MinterSet(address indexed minter, bool allowed);

    error NotMinter(address caller);

    constructor(address owner_) ERC20("Test USD", "TUSD") ERC20Permit("Test USD") Ownable(owner_) {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function setMinter(address minter, bool allowed) external onlyOwner {
        isMinter[minter] = allowed;
        emit MinterSet(minter, allowed);
    }

    function mint(address to, uint256 amount) external {
        if (msg.sender != owner() && !isMinter[msg.sender]) revert NotMinter(msg.sender);
        _mint(to, amount);
    }
}
