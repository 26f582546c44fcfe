// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

interface IMintable {
    function mint(address to, uint256 amount) external;
}

/// @notice Test ERC-4626 vault whose share price grows at a settable rate per second.
/// Interest is simple between accruals and compounds at each accrual; `totalAssets()` includes the
/// interest earned up to the current block, so a read at any block is the exact price of that block.
/// Interest is paid by minting the asset to the vault (the vault must be a minter of the asset).
/// The owner can halt deposits (upstream pause: `maxDeposit` 0), halt exits (`maxWithdraw`/`maxRedeem` 0)
/// and realise a loss.
contract YieldVault is ERC4626, Ownable {
    using SafeERC20 for IERC20;

    uint256 public constant WAD = 1e18;
    /// @dev 1000% a year as a sanity cap on the rate.
    uint256 public constant MAX_RATE_PER_SECOND = (10 * WAD) / 365 days;

    /// @notice Interest per second as a WAD fraction of the vault's assets.
    uint256 public ratePerSecond;
    uint256 public lastAccrual;
    /// @notice Upstream halt: deposits and mints are refused while set; exits keep working.
    bool public paused;
    /// @notice Upstream exit halt: withdrawals and redeems (claims, on the async vault) are refused.
    bool public exitsHalted;

    event RateUpdated(uint256 ratePerSecond);
    event Halted(bool paused);
    event ExitsHalted(bool halted);
    event LossRealized(uint256 assets);
    event InterestAccrued(uint256 assets);

    error RateTooHigh(uint256 ratePerSecond);

    constructor(IERC20 asset_, string memory name_, string memory symbol_, address owner_, uint256 ratePerSecond_)
        ERC20(name_, symbol_)
        ERC4626(asset_)
        Ownable(owner_)
    {
        if (ratePerSecond_ > MAX_RATE_PER_SECOND) revert RateTooHigh(ratePerSecond_);
        ratePerSecond = ratePerSecond_;
        lastAccrual = block.timestamp;
    }

    /// @notice Interest earned since the last accrual and not yet minted.
    function pendingInterest() public view returns (uint256) {
        uint256 elapsed = block.timestamp - lastAccrual;
        if (elapsed == 0 || ratePerSecond == 0) return 0;
        return (IERC20(asset()).balanceOf(address(this)) * ratePerSecond * elapsed) / WAD;
    }

    function totalAssets() public view virtual override returns (uint256) {
        return IERC20(asset()).balanceOf(address(this)) + pendingInterest();
    }

    function accrue() public {
        uint256 interest = pendingInterest();
        lastAccrual = block.timestamp;
        if (interest > 0) {
            IMintable(asset()).mint(address(this), interest);
            emit InterestAccrued(interest);
        }
    }

    function setRatePerSecond(uint256 ratePerSecond_) external onlyOwner {
        if (ratePerSecond_ > MAX_RATE_PER_SECOND) revert RateTooHigh(ratePerSecond_);
        accrue(); // the old rate applies up to now
        ratePerSecond = ratePerSecond_;
        emit RateUpdated(ratePerSecond_);
    }

    function setPaused(bool paused_) external onlyOwner {
        paused = paused_;
        emit Halted(paused_);
    }

    function setExitsHalted(bool halted) external onlyOwner {
        exitsHalted = halted;
        emit ExitsHalted(halted);
    }

    /// @notice Sends `assets` out of the vault to the owner: every holder's share price falls.
    function realizeLoss(uint256 assets) external onlyOwner {
        accrue();
        IERC20(asset()).safeTransfer(owner(), assets);
        emit LossRealized(assets);
    }

    function maxDeposit(address receiver) public view virtual override returns (uint256) {
        return paused ? 0 : super.maxDeposit(receiver);
    }

    function maxMint(address receiver) public view virtual override returns (uint256) {
        return paused ? 0 : super.maxMint(receiver);
    }

    function maxWithdraw(address owner_) public view virtual override returns (uint256) {
        return exitsHalted ? 0 : super.maxWithdraw(owner_);
    }

    function maxRedeem(address owner_) public view virtual override returns (uint256) {
        return exitsHalted ? 0 : super.maxRedeem(owner_);
    }

    // Every entry point accrues first so that the stored balance equals `totalAssets()` when shares
    // are priced (the previews already include pending interest, so they equal the real calls).
    function deposit(uint256 assets, address receiver) public virtual override returns (uint256) {
        accrue();
        return super.deposit(assets, receiver);
    }

    function mint(uint256 shares, address receiver) public virtual override returns (uint256) {
        accrue();
        return super.mint(shares, receiver);
    }

    function withdraw(uint256 assets, address receiver, address owner_) public virtual override returns (uint256) {
        accrue();
        return super.withdraw(assets, receiver, owner_);
    }

    function redeem(uint256 shares, address receiver, address owner_) public virtual override returns (uint256) {
        accrue();
        return super.redeem(shares, receiver, owner_);
    }
}
