// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {AsyncYieldVault} from "./AsyncYieldVault.sol";

/// @notice Test underlying (test/chain): an `AsyncYieldVault` that, on entering `requestRedeem` and
/// `redeem`, reads its caller's price views, as a callback could (read-only reentrancy), and
/// keeps what it saw. The engine's views must not be skewed by the call in progress.
contract ProbingAsyncVault is AsyncYieldVault {
    uint256 public constant PROBE_SHARES = 1e12;

    /// @notice What the caller's views answered on entry to the last requestRedeem / redeem.
    uint256 public seenTotalAssets;
    uint256 public seenActiveAssets;
    uint256 public seenConvertToAssets;

    constructor(IERC20 asset_, address owner_, uint256 ratePerSecond_, uint256 settlementDelay_)
        AsyncYieldVault(asset_, "Probing Async Vault", "pAYV", owner_, ratePerSecond_, settlementDelay_)
    {}

    function requestRedeem(uint256 shares, address controller, address owner_)
        public
        override
        returns (uint256 requestId)
    {
        _probe();
        return super.requestRedeem(shares, controller, owner_);
    }

    function redeem(uint256 shares, address receiver, address controller) public override returns (uint256) {
        _probe();
        return super.redeem(shares, receiver, controller);
    }

    function _probe() private {
        IERC4626 caller = IERC4626(msg.sender);
        seenTotalAssets = caller.totalAssets();
        seenConvertToAssets = caller.convertToAssets(PROBE_SHARES);
        (bool ok, bytes memory ret) = msg.sender.staticcall(abi.encodeWithSignature("activeAssets()"));
        seenActiveAssets = ok ? abi.decode(ret, (uint256)) : 0;
    }
}
