// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {YieldVault} from "./YieldVault.sol";

/// @notice Test vault whose deposit limit is everything that still fits: `maxDeposit` =
/// 2^256 - 1 - totalAssets (as some vaults answer), near 2^256 but not "unlimited".
contract HugeDepositVault is YieldVault {
    constructor(IERC20 asset_, string memory name_, string memory symbol_, address owner_, uint256 ratePerSecond_)
        YieldVault(asset_, name_, symbol_, owner_, ratePerSecond_)
    {}

    function maxDeposit(address) public view override returns (uint256) {
        return paused ? 0 : type(uint256).max - totalAssets();
    }
}
