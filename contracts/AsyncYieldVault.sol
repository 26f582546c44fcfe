// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {YieldVault} from "./YieldVault.sol";

/// @notice Test vault with a strict ERC-7540 asynchronous redeem (deposits stay synchronous, ERC-4626):
/// - `requestRedeem(shares, controller, owner)` moves the owner's shares into the vault's escrow and
///   emits the standard `RedeemRequest`; the request is Pending for `settlementDelay` seconds, then
///   Claimable (`pendingRedeemRequest` / `claimableRedeemRequest` per request id).
/// - The controller (or an operator it approved with `setOperator`) claims with the ERC-4626
///   `redeem(shares, receiver, controller)` or `withdraw(assets, receiver, controller)`; claimable
///   shares of one controller are fungible and consumed oldest request first.
/// - `maxRedeem(controller)` / `maxWithdraw(controller)` are the claimable amounts;
///   `previewRedeem` / `previewWithdraw` revert, as ERC-7540 requires of asynchronous flows.
/// - Escrowed shares stay in the supply and keep earning until claimed: a claim pays them at the
///   price of the claim block.
/// `claimableAt(requestId)` is a non-standard extra view (when a request becomes claimable).
contract AsyncYieldVault is YieldVault {
    using SafeERC20 for IERC20;
    using Math for uint256;

    bytes4 public constant ASYNC_REDEEM_INTERFACE_ID = 0x620ee8e4;
    bytes4 public constant OPERATOR_INTERFACE_ID = 0xe3bc4e65;
    bytes4 public constant ERC7575_INTERFACE_ID = 0x2f0a18c5;
    bytes4 public constant ERC165_INTERFACE_ID = 0x01ffc9a7;

    struct Request {
        address controller;
        uint256 shares;
        uint256 claimed;
        uint64 claimableAt;
    }

    uint256 public settlementDelay;
    uint256 public nextRequestId = 1;
    mapping(uint256 => Request) private _requests;
    /// @dev Request ids per controller, oldest first, and the first one not yet fully claimed.
    mapping(address => uint256[]) private _queue;
    mapping(address => uint256) private _head;
    mapping(address => mapping(address => bool)) public isOperator;

    event RedeemRequest(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event OperatorSet(address indexed controller, address indexed operator, bool approved);
    event SettlementDelayUpdated(uint256 settlementDelay);

    error Unauthorized(address caller, address controller);
    error ZeroShares();
    error AsyncPreview();

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
        return interfaceId == ASYNC_REDEEM_INTERFACE_ID || interfaceId == OPERATOR_INTERFACE_ID
            || interfaceId == ERC7575_INTERFACE_ID || interfaceId == ERC165_INTERFACE_ID;
    }

    function setSettlementDelay(uint256 settlementDelay_) external onlyOwner {
        settlementDelay = settlementDelay_;
        emit SettlementDelayUpdated(settlementDelay_);
    }

    function setOperator(address operator, bool approved) external returns (bool) {
        isOperator[msg.sender][operator] = approved;
        emit OperatorSet(msg.sender, operator, approved);
        return true;
    }

    /// @notice ERC-7575: the vault is its own share token.
    function share() external view returns (address) {
        return address(this);
    }

    // ---------------------------------------------------------------- requests

    function requestRedeem(uint256 shares, address controller, address owner_) public virtual returns (uint256 requestId) {
        if (shares == 0) revert ZeroShares();
        if (msg.sender != owner_ && !isOperator[owner_][msg.sender]) _spendAllowance(owner_, msg.sender, shares);
        _transfer(owner_, address(this), shares);
        requestId = nextRequestId++;
        _requests[requestId] = Request({
            controller: controller,
            shares: shares,
            claimed: 0,
            claimableAt: uint64(block.timestamp + settlementDelay)
        });
        _queue[controller].push(requestId);
        emit RedeemRequest(controller, owner_, requestId, msg.sender, shares);
    }

    function pendingRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        Request memory r = _requests[requestId];
        if (r.controller != controller || block.timestamp >= r.claimableAt) return 0;
        return r.shares;
    }

    function claimableRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        Request memory r = _requests[requestId];
        if (r.controller != controller || block.timestamp < r.claimableAt || exitsHalted) return 0;
        return r.shares - r.claimed;
    }

    /// @notice Non-standard: when the request becomes claimable (0 for an unknown request).
    function claimableAt(uint256 requestId) external view returns (uint256) {
        return _requests[requestId].claimableAt;
    }

    // ---------------------------------------------------------------- claims (ERC-4626 with controller)

    function maxRedeem(address controller) public view override returns (uint256 shares) {
        if (exitsHalted) return 0;
        uint256[] storage queue = _queue[controller];
        for (uint256 i = _head[controller]; i < queue.length; i++) {
            Request storage r = _requests[queue[i]];
            if (block.timestamp >= r.claimableAt) shares += r.shares - r.claimed;
        }
    }

    function maxWithdraw(address controller) public view override returns (uint256) {
        return _convertToAssets(maxRedeem(controller), Math.Rounding.Floor);
    }

    function previewRedeem(uint256) public pure override returns (uint256) {
        revert AsyncPreview();
    }

    function previewWithdraw(uint256) public pure override returns (uint256) {
        revert AsyncPreview();
    }

    function redeem(uint256 shares, address receiver, address controller) public virtual override returns (uint256 assets) {
        _checkController(controller);
        accrue();
        uint256 max = maxRedeem(controller);
        if (shares > max) revert ERC4626ExceededMaxRedeem(controller, shares, max);
        assets = _convertToAssets(shares, Math.Rounding.Floor);
        _claim(controller, receiver, assets, shares);
    }

    function withdraw(uint256 assets, address receiver, address controller) public override returns (uint256 shares) {
        _checkController(controller);
        accrue();
        uint256 max = maxWithdraw(controller);
        if (assets > max) revert ERC4626ExceededMaxWithdraw(controller, assets, max);
        shares = _convertToShares(assets, Math.Rounding.Ceil);
        _claim(controller, receiver, assets, shares);
    }

    function _checkController(address controller) private view {
        if (msg.sender != controller && !isOperator[controller][msg.sender]) {
            revert Unauthorized(msg.sender, controller);
        }
    }

    /// @dev Consumes `shares` of the controller's claimable requests, oldest first, then pays.
    function _claim(address controller, address receiver, uint256 assets, uint256 shares) private {
        uint256 left = shares;
        uint256[] storage queue = _queue[controller];
        uint256 i = _head[controller];
        while (left > 0) {
            Request storage r = _requests[queue[i]];
            if (block.timestamp >= r.claimableAt) {
                uint256 take = Math.min(left, r.shares - r.claimed);
                r.claimed += take;
                left -= take;
            }
            i++;
        }
        // Advance the head past fully claimed requests.
        uint256 h = _head[controller];
        while (h < queue.length && _requests[queue[h]].claimed == _requests[queue[h]].shares) h++;
        _head[controller] = h;
        _burn(address(this), shares);
        IERC20(asset()).safeTransfer(receiver, assets);
        emit Withdraw(msg.sender, receiver, controller, assets, shares);
    }
}
