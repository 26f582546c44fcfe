// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @dev The asynchronous (ERC-7540-style) redeem surface of `AsyncYieldVault`.
interface IAsyncRedeemVault {
    function requestRedeem(uint256 shares, address controller, address owner) external returns (uint256);
    function claim(uint256 requestId, address receiver) external returns (uint256);
    function requests(uint256 requestId)
        external
        view
        returns (address controller, uint128 shares, uint64 claimableAt, bool claimed);
}

interface IERC165Probe {
    function supportsInterface(bytes4 interfaceId) external view returns (bool);
}

/// @title YieldEngine
/// @notice ERC-4626 vault over `asset` that invests everything in one underlying ERC-4626 vault and
/// charges a fee on yield only, split between the service and the partner.
///
/// Accounting
/// - `totalAssets()` = idle asset + value (underlying `convertToAssets`) of the underlying shares held
///   and of those pending in asynchronous redeem requests.
/// - Fee: yield above a per-share high-water mark is charged `serviceFeeBps + partnerFeeBps`, minted as
///   new shares at accrual. Accrual runs before every deposit, mint, withdraw, redeem, redeem request,
///   claim and fee change, and on the public `accrueFees()`.
/// - `totalSupply()` is the ERC-20 supply (= sum of balances): it does NOT include fee shares not yet
///   minted. Previews and conversions price with `totalSupplyAfterFees()` = `totalSupply()` +
///   `pendingFeeShares()`, so a preview equals the real call. The net share price a reader wants at a
///   block is `totalAssets() / totalSupplyAfterFees()` (both read at that block, e.g. with
///   `accountingSnapshot()` in one call).
/// - Decimals offset 6 (shares have asset decimals + 6) defends against the donation/inflation attack.
contract YieldEngine is ERC4626, Ownable, Pausable {
    using Math for uint256;
    using SafeERC20 for IERC20;

    uint16 public constant MAX_TOTAL_FEE_BPS = 5_000;
    uint256 private constant BPS = 10_000;
    /// @dev Scale of the high-water mark: assets per share base unit times 1e27.
    uint256 public constant PRICE_SCALE = 1e27;
    bytes4 private constant ASYNC_REDEEM_INTERFACE_ID = 0x620ee8e4;
    uint8 private constant DECIMALS_OFFSET = 6;

    IERC4626 private immutable _underlying;
    bool public immutable isAsync;
    address public immutable serviceFeeRecipient;
    address public immutable partnerFeeRecipient;

    uint16 public serviceFeeBps;
    uint16 public partnerFeeBps;
    bool public deprecated;
    /// @notice Highest net share price (PRICE_SCALE-scaled assets per share base unit, virtual
    /// offsets included) on which fees have been charged.
    uint256 public highWaterMark;

    // Cumulative fees per recipient, for reconciliation: shares minted and their asset value at accrual.
    uint256 public serviceFeeSharesTotal;
    uint256 public partnerFeeSharesTotal;
    uint256 public serviceFeeAssetsTotal;
    uint256 public partnerFeeAssetsTotal;

    struct RedeemRequest {
        address controller;
        address owner;
        uint256 shares;
        uint256 underlyingRequestId;
        uint256 underlyingShares;
        bool claimed;
    }

    uint256 public nextRequestId = 1;
    mapping(uint256 => RedeemRequest) private _requests;
    /// @notice Underlying shares sitting in the underlying vault's redeem escrow for this engine.
    uint256 public pendingUnderlyingShares;

    /// @notice Fee of one accrual. Shares are minted to the recipients; assets are their value at
    /// accrual. The rounding remainder of the split goes to the partner.
    event FeesAccrued(
        address indexed serviceRecipient,
        address indexed partnerRecipient,
        uint256 serviceShares,
        uint256 partnerShares,
        uint256 serviceAssets,
        uint256 partnerAssets,
        uint256 highWaterMark
    );
    event FeesUpdated(uint16 serviceFeeBps, uint16 partnerFeeBps);
    event Deprecated(address indexed operator);
    event RedeemRequested(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event RedeemClaimed(
        address indexed controller, address indexed receiver, uint256 indexed requestId, uint256 assets, uint256 shares
    );

    error FeeTooHigh(uint256 totalBps);
    error ZeroAddress();
    error EngineDeprecated();
    error AlreadyDeprecated();
    error NotAsync();
    error ZeroShares();
    error NotController(uint256 requestId, address caller);
    error AlreadyClaimed(uint256 requestId);
    error WrongAsset(address expected, address actual);

    constructor(
        IERC20 asset_,
        IERC4626 underlying_,
        string memory name_,
        string memory symbol_,
        address serviceRecipient_,
        address partnerRecipient_,
        uint16 serviceFeeBps_,
        uint16 partnerFeeBps_,
        address operator_
    ) ERC20(name_, symbol_) ERC4626(asset_) Ownable(operator_) {
        if (serviceRecipient_ == address(0) || partnerRecipient_ == address(0)) revert ZeroAddress();
        if (underlying_.asset() != address(asset_)) revert WrongAsset(address(asset_), underlying_.asset());
        _checkFees(serviceFeeBps_, partnerFeeBps_);
        _underlying = underlying_;
        serviceFeeRecipient = serviceRecipient_;
        partnerFeeRecipient = partnerRecipient_;
        serviceFeeBps = serviceFeeBps_;
        partnerFeeBps = partnerFeeBps_;
        isAsync = _probeAsync(address(underlying_));
        // The price of an empty vault under the virtual offsets: 1 asset unit per 10**offset shares.
        highWaterMark = PRICE_SCALE / (10 ** DECIMALS_OFFSET);
        asset_.forceApprove(address(underlying_), type(uint256).max);
    }

    // ---------------------------------------------------------------- views the service reads

    function underlying() public view returns (address) {
        return address(_underlying);
    }

    function underlyingVault() external view returns (address) {
        return address(_underlying);
    }

    function isPaused() external view returns (bool) {
        return paused();
    }

    function idleAssets() public view returns (uint256) {
        return IERC20(asset()).balanceOf(address(this));
    }

    function heldUnderlyingShares() public view returns (uint256) {
        return _underlying.balanceOf(address(this));
    }

    function totalAssets() public view override returns (uint256) {
        return idleAssets() + _underlying.convertToAssets(heldUnderlyingShares() + pendingUnderlyingShares);
    }

    /// @notice Fee shares that the next accrual would mint at this block (service + partner).
    function pendingFeeShares() public view returns (uint256 feeShares) {
        (feeShares,,) = _computeFee();
    }

    /// @notice Asset value of the fee that the next accrual would charge at this block, split exactly
    /// as `accrueFees()` splits it (rounding remainder to the partner). The service's daily "earned"
    /// figures are the minted counters (`*FeeAssetsTotal`) plus these, read at the day-boundary block.
    function pendingFees() external view returns (uint256 serviceAssets, uint256 partnerAssets) {
        (, uint256 feeAssets,) = _computeFee();
        if (feeAssets == 0) return (0, 0);
        serviceAssets = feeAssets.mulDiv(serviceFeeBps, uint256(serviceFeeBps) + partnerFeeBps);
        partnerAssets = feeAssets - serviceAssets;
    }

    function totalSupplyAfterFees() public view returns (uint256) {
        return totalSupply() + pendingFeeShares();
    }

    /// @notice Everything needed to price a share at one block, read in one call.
    function accountingSnapshot()
        external
        view
        returns (uint256 assets, uint256 supply, uint256 feeShares, uint256 hwm)
    {
        (feeShares,,) = _computeFee();
        return (totalAssets(), totalSupply(), feeShares, highWaterMark);
    }

    function redeemRequest(uint256 requestId) external view returns (RedeemRequest memory) {
        return _requests[requestId];
    }

    /// @notice When the underlying vault lets the request be claimed (0 for an unknown request).
    function claimableAt(uint256 requestId) external view returns (uint256) {
        RedeemRequest memory r = _requests[requestId];
        if (r.controller == address(0)) return 0;
        (,, uint64 readyAt,) = IAsyncRedeemVault(address(_underlying)).requests(r.underlyingRequestId);
        return readyAt;
    }

    // ---------------------------------------------------------------- fees

    function accrueFees() public {
        (uint256 feeShares, uint256 feeAssets, uint256 newMark) = _computeFee();
        if (newMark > highWaterMark) highWaterMark = newMark;
        if (feeShares == 0) return;
        uint256 totalBps = uint256(serviceFeeBps) + partnerFeeBps;
        uint256 serviceShares = feeShares.mulDiv(serviceFeeBps, totalBps);
        uint256 partnerShares = feeShares - serviceShares;
        uint256 serviceAssets = feeAssets.mulDiv(serviceFeeBps, totalBps);
        uint256 partnerAssets = feeAssets - serviceAssets;
        serviceFeeSharesTotal += serviceShares;
        partnerFeeSharesTotal += partnerShares;
        serviceFeeAssetsTotal += serviceAssets;
        partnerFeeAssetsTotal += partnerAssets;
        if (serviceShares > 0) _mint(serviceFeeRecipient, serviceShares);
        if (partnerShares > 0) _mint(partnerFeeRecipient, partnerShares);
        emit FeesAccrued(
            serviceFeeRecipient, partnerFeeRecipient, serviceShares, partnerShares, serviceAssets, partnerAssets, newMark
        );
    }

    /// @dev Fee owed at this block and the price after minting it. Prices use the same virtual
    /// offsets as the conversions (assets + 1, supply + 10**offset), so they are defined when empty.
    function _computeFee() internal view returns (uint256 feeShares, uint256 feeAssets, uint256 newMark) {
        uint256 assets = totalAssets() + 1;
        uint256 supply = totalSupply() + 10 ** DECIMALS_OFFSET;
        uint256 price = assets.mulDiv(PRICE_SCALE, supply);
        uint256 mark = highWaterMark;
        if (price <= mark) return (0, 0, mark); // loss, or recovery still below the mark: no fee
        uint256 totalBps = uint256(serviceFeeBps) + partnerFeeBps;
        if (totalBps == 0) return (0, 0, price); // no fee on this gain: the mark follows the price
        uint256 profit = (price - mark).mulDiv(supply, PRICE_SCALE);
        feeAssets = profit.mulDiv(totalBps, BPS);
        // A fee that rounds to zero charges nothing, so the mark stays: the gain remains above it
        // and is charged by a later accrual (calling accrueFees() often cannot shave the fee).
        if (feeAssets == 0) return (0, 0, mark);
        // Shares worth exactly `feeAssets` once minted: f / (supply + f) = feeAssets / assets.
        feeShares = feeAssets.mulDiv(supply, assets - feeAssets);
        if (feeShares == 0) return (0, 0, mark);
        // The mark moves by the gain this fee was charged on, not to the price: `feeAssets` is the
        // floor of profit * bps, so the gain whose fee rounded away stays above the new mark.
        // mark' * supply' = mark * supply + feeAssets * BPS / totalBps (the charged gain, at most
        // the profit), both in PRICE_SCALE units.
        uint256 newSupply = supply + feeShares;
        newMark = mark.mulDiv(supply, newSupply) + feeAssets.mulDiv(BPS * PRICE_SCALE, totalBps * newSupply);
        if (newMark < mark) newMark = mark; // the mark never falls
    }

    function setFees(uint16 serviceFeeBps_, uint16 partnerFeeBps_) external onlyOwner {
        _checkFees(serviceFeeBps_, partnerFeeBps_);
        accrueFees(); // past yield is charged at the old rates
        // The gain left above the mark (its fee at the old rates rounded below one base unit) is
        // forgiven rather than charged at the new rates.
        uint256 price = (totalAssets() + 1).mulDiv(PRICE_SCALE, totalSupply() + 10 ** DECIMALS_OFFSET);
        if (price > highWaterMark) highWaterMark = price;
        serviceFeeBps = serviceFeeBps_;
        partnerFeeBps = partnerFeeBps_;
        emit FeesUpdated(serviceFeeBps_, partnerFeeBps_);
    }

    function _checkFees(uint16 s, uint16 p) private pure {
        if (uint256(s) + p > MAX_TOTAL_FEE_BPS) revert FeeTooHigh(uint256(s) + p);
    }

    // ---------------------------------------------------------------- operator

    function pause() external onlyOwner {
        _pause();
    }

    function unpause() external onlyOwner {
        _unpause();
    }

    /// @notice One-way: deposits stop for good; exits keep working.
    function deprecate() external onlyOwner {
        if (deprecated) revert AlreadyDeprecated();
        deprecated = true;
        emit Deprecated(msg.sender);
    }

    // ---------------------------------------------------------------- ERC-4626

    function _decimalsOffset() internal pure override returns (uint8) {
        return DECIMALS_OFFSET;
    }

    function _convertToShares(uint256 assets, Math.Rounding rounding) internal view override returns (uint256) {
        return assets.mulDiv(totalSupplyAfterFees() + 10 ** DECIMALS_OFFSET, totalAssets() + 1, rounding);
    }

    function _convertToAssets(uint256 shares, Math.Rounding rounding) internal view override returns (uint256) {
        return shares.mulDiv(totalAssets() + 1, totalSupplyAfterFees() + 10 ** DECIMALS_OFFSET, rounding);
    }

    function maxDeposit(address) public view override returns (uint256) {
        if (paused() || deprecated) return 0;
        return _underlying.maxDeposit(address(this));
    }

    function maxMint(address receiver) public view override returns (uint256) {
        uint256 maxAssets = maxDeposit(receiver);
        if (maxAssets == type(uint256).max) return type(uint256).max;
        return _convertToShares(maxAssets, Math.Rounding.Floor);
    }

    function maxWithdraw(address owner_) public view override returns (uint256) {
        return isAsync ? 0 : super.maxWithdraw(owner_);
    }

    function maxRedeem(address owner_) public view override returns (uint256) {
        return isAsync ? 0 : super.maxRedeem(owner_);
    }

    function deposit(uint256 assets, address receiver) public override returns (uint256) {
        accrueFees();
        return super.deposit(assets, receiver);
    }

    function mint(uint256 shares, address receiver) public override returns (uint256) {
        accrueFees();
        return super.mint(shares, receiver);
    }

    function withdraw(uint256 assets, address receiver, address owner_) public override returns (uint256) {
        accrueFees();
        return super.withdraw(assets, receiver, owner_);
    }

    function redeem(uint256 shares, address receiver, address owner_) public override returns (uint256) {
        accrueFees();
        return super.redeem(shares, receiver, owner_);
    }

    function _deposit(address caller, address receiver, uint256 assets, uint256 shares) internal override {
        super._deposit(caller, receiver, assets, shares);
        _underlying.deposit(assets, address(this));
    }

    function _withdraw(address caller, address receiver, address owner_, uint256 assets, uint256 shares)
        internal
        override
    {
        uint256 idle = idleAssets();
        if (idle < assets) _underlying.withdraw(assets - idle, address(this), address(this));
        super._withdraw(caller, receiver, owner_, assets, shares);
    }

    // ---------------------------------------------------------------- asynchronous redeem

    /// @notice Opens an exit on an engine over an asynchronous vault. The shares are escrowed in the
    /// engine (still in the supply) and the matching underlying shares are requested; totalAssets and
    /// the share price do not move. `claimRedeem` pays the escrowed shares at the claim-block price.
    function requestRedeem(uint256 shares, address controller, address owner_)
        external
        returns (uint256 requestId)
    {
        if (!isAsync) revert NotAsync();
        if (shares == 0) revert ZeroShares();
        if (controller == address(0)) revert ZeroAddress();
        accrueFees();
        if (msg.sender != owner_) _spendAllowance(owner_, msg.sender, shares);
        uint256 assets = _convertToAssets(shares, Math.Rounding.Floor);
        _transfer(owner_, address(this), shares);
        // Round the underlying request up (capped by what is held) so the claim covers the holder.
        uint256 uShares = Math.min(_underlying.previewWithdraw(assets), heldUnderlyingShares());
        uint256 uRequestId =
            uShares == 0 ? 0 : IAsyncRedeemVault(address(_underlying)).requestRedeem(uShares, address(this), address(this));
        pendingUnderlyingShares += uShares;
        requestId = nextRequestId++;
        _requests[requestId] = RedeemRequest(controller, owner_, shares, uRequestId, uShares, false);
        emit RedeemRequested(controller, owner_, requestId, msg.sender, shares);
    }

    /// @notice Claims a settled request (caller must be its controller) and emits the standard
    /// `Withdraw(sender, receiver, controller, assets, shares)`.
    function claimRedeem(uint256 requestId, address receiver) external returns (uint256 assets) {
        RedeemRequest storage r = _requests[requestId];
        if (r.controller != msg.sender) revert NotController(requestId, msg.sender);
        if (r.claimed) revert AlreadyClaimed(requestId);
        accrueFees();
        uint256 shares = r.shares;
        assets = _convertToAssets(shares, Math.Rounding.Floor);
        r.claimed = true;
        if (r.underlyingShares > 0) {
            pendingUnderlyingShares -= r.underlyingShares;
            IAsyncRedeemVault(address(_underlying)).claim(r.underlyingRequestId, address(this));
        }
        // The underlying pays at its own rounding; never pay more than the engine holds.
        assets = Math.min(assets, idleAssets());
        _burn(address(this), shares);
        IERC20(asset()).safeTransfer(receiver, assets);
        emit Withdraw(msg.sender, receiver, msg.sender, assets, shares);
        emit RedeemClaimed(msg.sender, receiver, requestId, assets, shares);
    }

    function _probeAsync(address vault) private view returns (bool) {
        try IERC165Probe(vault).supportsInterface(ASYNC_REDEEM_INTERFACE_ID) returns (bool yes) {
            return yes;
        } catch {
            return false;
        }
    }
}
