// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {YieldVault} from "./YieldVault.sol";

/// @notice Test vault following the ERC-7540 reference pattern for asynchronous redeems: every
/// request of a controller is filed under request id 0 and the vault's owner fulfils them by amount,
/// in parts, each at the price of its own fulfilment (`fulfillRedeem`). Fulfilled shares are burnt and
/// their assets set aside; the controller's claims pay the average price of what it has claimable,
/// as the reference does. Deposits stay synchronous (ERC-4626).
contract PooledAsyncVault is YieldVault {
    using SafeERC20 for IERC20;
    using Math for uint256;

    uint256 private constant REQUEST_ID = 0;

    mapping(address => uint256) public pendingShares;
    mapping(address => uint256) public claimableShares;
    mapping(address => uint256) public claimableAssets;
    /// @notice Assets set aside for fulfilled requests: no part of the share price.
    uint256 public totalClaimableAssets;

    event RedeemRequest(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event RedeemFulfilled(address indexed controller, uint256 shares, uint256 assets);

    error Unauthorized(address caller, address controller);
    error ZeroShares();
    error AsyncPreview();
    error ExceedsPending(uint256 shares, uint256 pending);

    constructor(IERC20 asset_, string memory name_, string memory symbol_, address owner_, uint256 ratePerSecond_)
        YieldVault(asset_, name_, symbol_, owner_, ratePerSecond_)
    {}

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x620ee8e4 || interfaceId == 0x01ffc9a7;
    }

    function totalAssets() public view override returns (uint256) {
        return super.totalAssets() - totalClaimableAssets;
    }

    function requestRedeem(uint256 shares, address controller, address owner_) external returns (uint256) {
        if (shares == 0) revert ZeroShares();
        accrue();
        if (msg.sender != owner_) _spendAllowance(owner_, msg.sender, shares);
        _transfer(owner_, address(this), shares);
        pendingShares[controller] += shares;
        emit RedeemRequest(controller, owner_, REQUEST_ID, msg.sender, shares);
        return REQUEST_ID;
    }

    /// @notice Fulfils `shares` of the controller's pending shares at the current price.
    function fulfillRedeem(address controller, uint256 shares) external onlyOwner returns (uint256 assets) {
        accrue();
        uint256 pending = pendingShares[controller];
        if (shares > pending) revert ExceedsPending(shares, pending);
        assets = _convertToAssets(shares, Math.Rounding.Floor);
        pendingShares[controller] = pending - shares;
        claimableShares[controller] += shares;
        claimableAssets[controller] += assets;
        totalClaimableAssets += assets;
        _burn(address(this), shares);
        emit RedeemFulfilled(controller, shares, assets);
    }

    function pendingRedeemRequest(uint256, address controller) external view returns (uint256) {
        return pendingShares[controller];
    }

    function claimableRedeemRequest(uint256, address controller) external view returns (uint256) {
        return exitsHalted ? 0 : claimableShares[controller];
    }

    function maxRedeem(address controller) public view override returns (uint256) {
        return exitsHalted ? 0 : claimableShares[controller];
    }

    function maxWithdraw(address controller) public view override returns (uint256) {
        return exitsHalted ? 0 : claimableAssets[controller];
    }

    function previewRedeem(uint256) public pure override returns (uint256) {
        revert AsyncPreview();
    }

    function previewWithdraw(uint256) public pure override returns (uint256) {
        revert AsyncPreview();
    }

    function redeem(uint256 shares, address receiver, address controller) public override returns (uint256 assets) {
        if (msg.sender != controller) revert Unauthorized(msg.sender, controller);
        // Interest is minted on the whole balance, set-aside assets included (they go to the pool):
        // accrue before they leave, so that a claim never moves the share price.
        accrue();
        uint256 max = maxRedeem(controller);
        if (shares > max) revert ERC4626ExceededMaxRedeem(controller, shares, max);
        uint256 cs = claimableShares[controller];
        uint256 ca = claimableAssets[controller];
        assets = shares == cs ? ca : ca.mulDiv(shares, cs);
        claimableShares[controller] = cs - shares;
        claimableAssets[controller] = ca - assets;
        totalClaimableAssets -= assets;
        IERC20(asset()).safeTransfer(receiver, assets);
        emit Withdraw(msg.sender, receiver, controller, assets, shares);
    }

    function withdraw(uint256, address, address) public pure override returns (uint256) {
        revert AsyncPreview();
    }
}
