// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Deposits into an ERC-4626 engine with an EIP-2612 permit instead of an approval: one
/// signature and one transaction. Stateless, ownerless and engine-agnostic: one router per chain
/// serves every engine (the service deploys it with CREATE2, so its address is the same on every
/// chain). It never keeps funds: what it takes from the caller it deposits in the same call, and
/// the engine's allowance it grants is spent whole.
///
/// Only the caller's own funds move: the permit and the transfer are both for `msg.sender`, so a
/// permit signature seen in the mempool is of no use to anyone else. A permit front-run (someone
/// submits the same signature to the asset first, which makes ours revert) is tolerated: the
/// allowance it set is used (OpenZeppelin's "trustless permit" pattern).
contract PermitDepositRouter {
    using SafeERC20 for IERC20;

    /// @notice The permit failed and the allowance it was to set is not there.
    error PermitFailed(address asset, address owner, uint256 allowance, uint256 needed);

    event PermitDeposit(address indexed engine, address indexed owner, address indexed receiver, uint256 assets, uint256 shares);

    /// @notice Takes `assets` of the engine's asset from the caller by permit and deposits them for
    /// `receiver`; returns the shares minted.
    function depositWithPermit(
        IERC4626 engine,
        uint256 assets,
        address receiver,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256 shares) {
        IERC20 asset = IERC20(engine.asset());
        try IERC20Permit(address(asset)).permit(msg.sender, address(this), assets, deadline, v, r, s) {}
        catch {
            uint256 allowance = asset.allowance(msg.sender, address(this));
            if (allowance < assets) revert PermitFailed(address(asset), msg.sender, allowance, assets);
        }
        asset.safeTransferFrom(msg.sender, address(this), assets);
        asset.forceApprove(address(engine), assets);
        shares = engine.deposit(assets, receiver);
        // The engine spends exactly `assets`; no allowance of the router's is left standing.
        if (asset.allowance(address(this), address(engine)) != 0) asset.forceApprove(address(engine), 0);
        emit PermitDeposit(address(engine), msg.sender, receiver, assets, shares);
    }
}
