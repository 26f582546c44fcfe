// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {YieldVault} from "./YieldVault.sol";

/// @notice Test vault with ERC-7540-style asynchronous redeem: deposits are synchronous; an exit is a
/// `requestRedeem` that escrows the shares, claimable by its controller after `settlementDelay`.
/// Escrowed shares stay in the supply and keep earning until claimed: the claim pays them at the
/// price of the claim block. Synchronous `withdraw`/`redeem` are disabled (max 0).
contract AsyncYieldVault is YieldVault {
    using SafeERC20 for IERC20;

    /// @dev ERC-7540 asynchronous redeem interface id.
    bytes4 public constant ASYNC_REDEEM_INTERFACE_ID = 0x620ee8e4;

    struct Request {
        address controller;
        uint128 shares;
        uint64 claimableAt;
        bool claimed;
    }

    uint256 public settlementDelay;
    uint256 public nextRequestId = 1;
    mapping(uint256 => Request) public requests;

    event RedeemRequest(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event SettlementDelayUpdated(uint256 settlementDelay);

    error NotController(uint256 requestId, address caller);
    error NotClaimable(uint256 requestId, uint256 claimableAt);
    error ZeroShares();

    constructor(
        IERC20 asset_,
        string memory name_,
        string memory symbol_,
        address owner_,
        uint256 ratePerSecond_,
        uint256 settlementDelay_
    ) YieldVault(asset_, name_, symbol_, owner_, ratePerSecond_) {
        settlementDelay = settlementDelay_;
    }

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == ASYNC_REDEEM_INTERFACE_ID || interfaceId == 0x01ffc9a7;
    }

    function setSettlementDelay(uint256 settlementDelay_) external onlyOwner {
        settlementDelay = settlementDelay_;
        emit SettlementDelayUpdated(settlementDelay_);
    }

    function requestRedeem(uint256 shares, address controller, address owner_) external returns (uint256 requestId) {
        if (shares == 0) revert ZeroShares();
        if (msg.sender != owner_) _spendAllowance(owner_, msg.sender, shares);
        _transfer(owner_, address(this), shares);
        requestId = nextRequestId++;
        requests[requestId] = Request({
            controller: controller,
            shares: uint128(shares),
            claimableAt: uint64(block.timestamp + settlementDelay),
            claimed: false
        });
        emit RedeemRequest(controller, owner_, requestId, msg.sender, shares);
    }

    /// @notice Shares of a request still waiting for settlement (ERC-7540 view, per request).
    function pendingRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        Request memory r = requests[requestId];
        if (r.controller != controller || r.claimed || block.timestamp >= r.claimableAt) return 0;
        return r.shares;
    }

    /// @notice Shares of a request that can be claimed now (ERC-7540 view, per request).
    function claimableRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        Request memory r = requests[requestId];
        if (r.controller != controller || r.claimed || block.timestamp < r.claimableAt) return 0;
        return r.shares;
    }

    /// @notice Claims a settled request: burns the escrowed shares and pays their value now.
    function claim(uint256 requestId, address receiver) external returns (uint256 assets) {
        Request storage r = requests[requestId];
        if (r.controller != msg.sender || r.claimed) revert NotController(requestId, msg.sender);
        if (block.timestamp < r.claimableAt) revert NotClaimable(requestId, r.claimableAt);
        accrue();
        uint256 shares = r.shares;
        r.claimed = true;
        assets = previewRedeem(shares);
        _burn(address(this), shares);
        IERC20(asset()).safeTransfer(receiver, assets);
        emit Withdraw(msg.sender, receiver, msg.sender, assets, shares);
    }

    function maxWithdraw(address) public pure override returns (uint256) {
        return 0;
    }

    function maxRedeem(address) public pure override returns (uint256) {
        return 0;
    }
}
