// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC4626} from "@openzeppelin/contracts/interfaces/IERC4626.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @dev The standard ERC-7540 asynchronous redeem surface. Claims go through the ERC-4626
/// `redeem(shares, receiver, controller)` of the same vault, called by the controller.
interface IERC7540Redeem {
    function requestRedeem(uint256 shares, address controller, address owner) external returns (uint256 requestId);
    function pendingRedeemRequest(uint256 requestId, address controller) external view returns (uint256 shares);
    function claimableRedeemRequest(uint256 requestId, address controller) external view returns (uint256 shares);
}

/// @dev Optional, non-standard: when a vault publishes the time a request becomes claimable.
interface IRedeemSchedule {
    function claimableAt(uint256 requestId) external view returns (uint256);
}

interface IERC165Probe {
    function supportsInterface(bytes4 interfaceId) external view returns (bool);
}

/// @title YieldEngine
/// @notice ERC-4626 vault over `asset` that invests everything in one underlying ERC-4626 vault and
/// charges a fee on yield only, split between the service and the partner.
///
/// Accounting
/// - `totalAssets()` = the active pool + what open asynchronous redeem requests hold: the value
///   (underlying `convertToAssets`) of their underlying shares not yet redeemed, and the asset
///   reserved for them (`reservedAssets`: the idle part each request took, and on a pooled-id
///   underlying what its settled shares were redeemed for).
/// - Open asynchronous redeem requests are set apart: their engine shares (escrowed in the engine,
///   still in `totalSupply()`), underlying shares and reserved asset form no part of the share price,
///   the fee or the conversions. Each request is paid from what its own shares settled for (per
///   request id, or its interval of a pooled id's queue, each part at its own fulfilment's price),
///   never from the other holders' assets, less the fee on the yield it earned while waiting
///   (docs/engine.md, "The fee on requests").
/// - The share price, fees and conversions use the active pool: `activeAssets()` = idle + value of
///   the held underlying shares, over `activeSupply()` = `totalSupply()` - escrowed shares (plus the
///   fee shares not yet minted).
/// - Fee: yield above a per-share high-water mark is charged `serviceFeeBps + partnerFeeBps`, minted as
///   new shares at accrual. Accrual runs before every deposit, mint, withdraw, redeem, redeem request,
///   claim and fee change, and on the public `accrueFees()`. The mark moves only by the gain a fee
///   was charged on. A fee increase takes effect only `feeChangeDelay` seconds after it is scheduled
///   (fixed at deployment); a decrease applies at once.
/// - Previews and conversions price with the fee shares not yet minted, so a preview equals the real
///   call.
/// - Decimals offset 6 (shares have asset decimals + 6) defends against the donation/inflation attack.
/// - Every state-changing entry point is guarded against reentrancy; ownership moves in two steps and
///   cannot be renounced.
contract YieldEngine is ERC4626, Ownable2Step, Pausable, ReentrancyGuard {
    using Math for uint256;
    using SafeERC20 for IERC20;

    uint16 public constant MAX_TOTAL_FEE_BPS = 5_000;
    uint256 private constant BPS = 10_000;
    /// @dev Scale of the high-water mark: assets per share base unit times 1e27.
    uint256 public constant PRICE_SCALE = 1e27;
    bytes4 private constant ASYNC_REDEEM_INTERFACE_ID = 0x620ee8e4;
    uint8 private constant DECIMALS_OFFSET = 6;
    /// @notice The longest notice a deployment may set for fee increases.
    uint256 public constant MAX_FEE_CHANGE_DELAY = 90 days;
    /// @notice The shortest notice a deployment may set: a fee increase is never a surprise.
    uint256 public constant MIN_FEE_CHANGE_DELAY = 1 days;
    /// @dev Request-id schemes of the underlying, learnt from its first request.
    uint8 private constant SCHEME_OWN_IDS = 1;
    uint8 private constant SCHEME_POOLED = 2;
    /// @notice Holder of the seed shares: no key controls it, so they never leave.
    address public constant SEED_SHARES_HOLDER = 0x000000000000000000000000000000000000dEaD;
    /// @notice Assets of the first deposit (or mint) locked in seed shares, so the engine is never
    /// near-empty again: inflating a share's worth by donations then costs the donor about 10**6
    /// times that worth per base unit a depositor could lose to rounding (docs/engine.md).
    uint256 public constant SEED_ASSETS = 10_000;

    IERC4626 private immutable _underlying;
    bool public immutable isAsync;
    address public immutable serviceFeeRecipient;
    address public immutable partnerFeeRecipient;
    /// @notice Notice, in seconds, between scheduling a fee increase and the moment it may apply.
    uint256 public immutable feeChangeDelay;

    /// @notice The fees in force.
    uint16 public serviceFeeBps;
    uint16 public partnerFeeBps;
    bool public deprecated;
    /// @notice Highest net share price (PRICE_SCALE-scaled assets per share base unit, virtual
    /// offsets included) on which fees have been charged.
    uint256 public highWaterMark;

    /// @notice A scheduled fee increase: the fees and the time from which `applyFeeChange()` applies
    /// them (0: none scheduled).
    uint16 public scheduledServiceFeeBps;
    uint16 public scheduledPartnerFeeBps;
    uint64 public feeChangeEffectiveAt;

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
    /// @notice Underlying shares in the underlying vault's redeem escrow for open requests.
    uint256 public pendingUnderlyingShares;
    /// @notice Engine shares escrowed by open requests (held by the engine, still in the supply).
    uint256 public escrowedShares;
    /// @notice Asset held for open requests, out of the pool: the idle part each request took and,
    /// on a pooled-id underlying, what the settled requests' underlying shares were redeemed for.
    uint256 public reservedAssets;
    /// @notice How the underlying numbers requests: 0 not yet known, 1 an id per request (a request
    /// settles and is claimed on its own), 2 one pooled id (ERC-7540 reference pattern: every request
    /// of the engine under id 0, fulfilled by amount, possibly in parts at different prices).
    uint8 public requestIdScheme;
    /// @notice Whether the seed shares were minted (by the first deposit or mint).
    bool public seeded;

    /// @dev While the engine is inside an external call that moves its balances (the underlying's
    /// deposit, withdraw, requestRedeem or redeem, and asset transfers), `activeAssets()` and
    /// `totalAssets()` answer the state the call leaves behind, computed before it, so a price view
    /// read from within that call (read-only reentrancy) is never skewed. Stored + 1; 0 is none.
    uint256 private transient _frozenActiveAssets;
    uint256 private transient _frozenTotalAssets;

    /// @dev Pooled scheme. Requests form one queue in underlying shares: request i covers
    /// [start_i, start_i + underlyingShares_i) of the cumulative amount requested, and the
    /// underlying fulfils that queue in order. Each time the engine finds shares claimable upstream
    /// it redeems them at once and records a checkpoint: cumulative shares and assets received, and
    /// the pool's own price then. A request is settled once the checkpoints cover its interval; its
    /// assets are the checkpoints' assets over that interval (each part at the price it was settled
    /// at), so no request waits on another's and none is paid another's price.
    struct Checkpoint {
        uint256 cumShares;
        uint256 cumAssets;
        uint256 poolPrice; // active pool's assets per share (PRICE_SCALE), 0 when the pool was empty
    }

    struct RequestTerms {
        uint256 idleAssets; // engine idle asset set apart for the request at request time
        uint256 baseAssets; // fee-free base: value at request, or at the high-water mark if higher
        uint256 feeBps; // total fee in force at request: a later increase does not apply to it
        uint256 queueStart; // pooled scheme: start of the request's interval in the queue
    }

    Checkpoint[] private _checkpoints;
    /// @notice Pooled scheme: underlying shares requested in total, and settled (redeemed) in total.
    uint256 public queuedUnderlyingShares;
    uint256 public settledUnderlyingShares;
    mapping(uint256 => RequestTerms) private _terms;

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
    /// @notice New fees in force (a decrease at once, an increase when applied after its notice).
    event FeesUpdated(uint16 serviceFeeBps, uint16 partnerFeeBps);
    /// @notice A fee increase was scheduled; it may apply from `effectiveAt`.
    event FeeChangeScheduled(uint16 serviceFeeBps, uint16 partnerFeeBps, uint256 effectiveAt);
    event FeeChangeCancelled(uint16 serviceFeeBps, uint16 partnerFeeBps);
    event Deprecated(address indexed operator);
    event RedeemRequested(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event RedeemClaimed(
        address indexed controller, address indexed receiver, uint256 indexed requestId, uint256 assets, uint256 shares
    );
    /// @notice Pooled scheme: underlying shares found claimable were redeemed for `assets`.
    event RequestsSettled(uint256 underlyingShares, uint256 assets, uint256 cumulativeShares);
    /// @notice The fee on a claimed request's yield (also in `FeesAccrued` and the fee counters).
    event RequestFeeCharged(uint256 indexed requestId, uint256 grossAssets, uint256 feeAssets);

    error FeeTooHigh(uint256 totalBps);
    error FeeChangeDelayTooLong(uint256 delay);
    error FeeChangeDelayTooShort(uint256 delay);
    /// @notice The asset delivered less than was sent (fee-on-transfer): such assets are refused.
    error AssetTransferShortfall(uint256 sent, uint256 received);
    error NoFeeChangeScheduled();
    error FeeChangeNotDue(uint256 effectiveAt);
    error ZeroAddress();
    error EngineDeprecated();
    error AlreadyDeprecated();
    error NotAsync();
    error ZeroShares();
    error NotController(uint256 requestId, address caller);
    error AlreadyClaimed(uint256 requestId);
    error NotClaimable(uint256 requestId);
    error ClaimShortfall(uint256 requestId, uint256 owed, uint256 received);
    error WrongAsset(address expected, address actual);
    error RenounceDisabled();
    /// @notice The first deposit must exceed the seed (SEED_ASSETS) locked in seed shares.
    error FirstDepositTooSmall(uint256 assets, uint256 minimum);

    constructor(
        IERC20 asset_,
        IERC4626 underlying_,
        string memory name_,
        string memory symbol_,
        address serviceRecipient_,
        address partnerRecipient_,
        uint16 serviceFeeBps_,
        uint16 partnerFeeBps_,
        address operator_,
        uint256 feeChangeDelay_
    ) ERC20(name_, symbol_) ERC4626(asset_) Ownable(operator_) {
        if (serviceRecipient_ == address(0) || partnerRecipient_ == address(0)) revert ZeroAddress();
        if (underlying_.asset() != address(asset_)) revert WrongAsset(address(asset_), underlying_.asset());
        if (feeChangeDelay_ > MAX_FEE_CHANGE_DELAY) revert FeeChangeDelayTooLong(feeChangeDelay_);
        if (feeChangeDelay_ < MIN_FEE_CHANGE_DELAY) revert FeeChangeDelayTooShort(feeChangeDelay_);
        _checkFees(serviceFeeBps_, partnerFeeBps_);
        _underlying = underlying_;
        serviceFeeRecipient = serviceRecipient_;
        partnerFeeRecipient = partnerRecipient_;
        serviceFeeBps = serviceFeeBps_;
        partnerFeeBps = partnerFeeBps_;
        feeChangeDelay = feeChangeDelay_;
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

    /// @notice Asset held by the engine for the pool (the asset reserved for requests excluded).
    function idleAssets() public view returns (uint256) {
        return IERC20(asset()).balanceOf(address(this)) - reservedAssets;
    }

    function heldUnderlyingShares() public view returns (uint256) {
        return _underlying.balanceOf(address(this));
    }

    /// @notice Idle asset + value of the held underlying shares: the pool the share price is of.
    function activeAssets() public view returns (uint256) {
        uint256 frozen = _frozenActiveAssets;
        if (frozen != 0) return frozen - 1;
        return idleAssets() + _underlying.convertToAssets(heldUnderlyingShares());
    }

    /// @notice Shares in the pool the share price is of: the supply less the escrowed shares.
    function activeSupply() public view returns (uint256) {
        return totalSupply() - escrowedShares;
    }

    /// @notice Active pool + what open redeem requests hold: the value of their underlying shares
    /// not yet redeemed and the asset reserved for them.
    function totalAssets() public view override returns (uint256) {
        uint256 frozen = _frozenTotalAssets;
        if (frozen != 0) return frozen - 1;
        return activeAssets() + _underlying.convertToAssets(pendingUnderlyingShares) + reservedAssets;
    }

    /// @dev Holds the price views at `active` / `total` until `_thaw()` (see `_frozenActiveAssets`).
    function _freeze(uint256 active, uint256 total) private {
        _frozenActiveAssets = active + 1;
        _frozenTotalAssets = total + 1;
    }

    function _thaw() private {
        _frozenActiveAssets = 0;
        _frozenTotalAssets = 0;
    }

    /// @notice Assets the engine can pay out at once: idle + what the underlying lets it withdraw
    /// (nothing from an asynchronous underlying, whose claimable assets belong to open requests).
    function exitLiquidity() public view returns (uint256) {
        uint256 idle = idleAssets();
        if (isAsync) return idle;
        return idle + _underlying.maxWithdraw(address(this));
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

    /// @notice The request's idle part, fee-free base and (pooled scheme) place in the queue.
    function requestTerms(uint256 requestId) external view returns (RequestTerms memory) {
        return _terms[requestId];
    }

    /// @notice Pooled scheme: the settlement checkpoints recorded so far.
    function settlementCheckpoints() external view returns (Checkpoint[] memory) {
        return _checkpoints;
    }

    /// @notice Engine shares of an open request still waiting for the underlying (ERC-7540 view).
    function pendingRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        RedeemRequest memory r = _requests[requestId];
        if (r.controller == address(0) || r.controller != controller || r.claimed || _claimable(requestId, r)) {
            return 0;
        }
        return r.shares;
    }

    /// @notice Engine shares of an open request that its controller can claim now (ERC-7540 view).
    function claimableRedeemRequest(uint256 requestId, address controller) external view returns (uint256) {
        RedeemRequest memory r = _requests[requestId];
        if (r.controller == address(0) || r.controller != controller || r.claimed || !_claimable(requestId, r)) {
            return 0;
        }
        return r.shares;
    }

    /// @notice When the underlying vault says the request becomes claimable (0 for an unknown request,
    /// or when the underlying publishes no schedule: ERC-7540 has no standard view for it).
    function claimableAt(uint256 requestId) external view returns (uint256) {
        RedeemRequest memory r = _requests[requestId];
        if (r.controller == address(0) || r.underlyingShares == 0) return 0;
        try IRedeemSchedule(address(_underlying)).claimableAt(r.underlyingRequestId) returns (uint256 readyAt) {
            return readyAt;
        } catch {
            return 0;
        }
    }

    // ---------------------------------------------------------------- fees

    /// @notice Charges the fee due; on a pooled-id underlying also settles what it made claimable.
    function accrueFees() external nonReentrant {
        _accrueFees();
        _settleUpstream();
    }

    function _accrueFees() internal {
        (uint256 feeShares, uint256 feeAssets, uint256 newMark) = _computeFee();
        if (newMark > highWaterMark) highWaterMark = newMark;
        if (feeShares == 0) return;
        _mintFee(feeShares, feeAssets);
    }

    /// @dev Mints `feeShares` (worth `feeAssets`) to the recipients in the fee ratio, rounding
    /// remainder to the partner, and counts them.
    function _mintFee(uint256 feeShares, uint256 feeAssets) private {
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
            serviceFeeRecipient,
            partnerFeeRecipient,
            serviceShares,
            partnerShares,
            serviceAssets,
            partnerAssets,
            highWaterMark
        );
    }

    /// @dev The active pool's net share price under the virtual offsets, before unminted fees.
    function _activePrice() internal view returns (uint256) {
        return (activeAssets() + 1).mulDiv(PRICE_SCALE, activeSupply() + 10 ** DECIMALS_OFFSET);
    }

    /// @dev Fee owed at this block and the mark after charging it. Prices use the same virtual
    /// offsets as the conversions (assets + 1, supply + 10**offset), so they are defined when empty.
    /// The gain above the mark is exact (PRICE_SCALE units, no rounded price in between), and the
    /// new mark is rounded up so that, once the fee shares are minted, the gain left above it carries
    /// a fee below one base unit: an accrual leaves nothing to accrue in the same block, so previews
    /// and max* read before a call price exactly as the call does after its own accrual.
    function _computeFee() internal view returns (uint256 feeShares, uint256 feeAssets, uint256 newMark) {
        uint256 assets = activeAssets() + 1;
        uint256 supply = activeSupply() + 10 ** DECIMALS_OFFSET;
        uint256 mark = highWaterMark;
        uint256 value = assets * PRICE_SCALE;
        uint256 atMark = mark * supply;
        if (value <= atMark) return (0, 0, mark); // loss, or recovery still below the mark: no fee
        uint256 totalBps = uint256(serviceFeeBps) + partnerFeeBps;
        // No fee on this gain: the mark follows the price.
        if (totalBps == 0) return (0, 0, value / supply);
        uint256 gain = value - atMark; // assets above the mark, times PRICE_SCALE
        feeAssets = gain.mulDiv(totalBps, BPS * PRICE_SCALE);
        // A fee that rounds to zero charges nothing, so the mark stays: the gain remains above it
        // and is charged by a later accrual (calling accrueFees() often cannot shave the fee).
        if (feeAssets == 0) return (0, 0, mark);
        // Shares worth exactly `feeAssets` once minted: f / (supply + f) = feeAssets / assets.
        feeShares = feeAssets.mulDiv(supply, assets - feeAssets);
        if (feeShares == 0) return (0, 0, mark);
        // The mark moves by the gain this fee was charged on (feeAssets * BPS / totalBps, at most
        // the gain), not to the price: mark' * supply' = mark * supply + charged gain, rounded up.
        uint256 charged = Math.ceilDiv(feeAssets * BPS * PRICE_SCALE, totalBps);
        newMark = Math.ceilDiv(atMark + charged, supply + feeShares);
        if (newMark < mark) newMark = mark; // the mark never falls
    }

    /// @notice Changes the fees. A change that raises neither fee applies at once (and replaces any
    /// scheduled increase); otherwise it is scheduled and may apply `feeChangeDelay` seconds later,
    /// through `applyFeeChange()`. Until then the fees in force stay.
    function setFees(uint16 serviceFeeBps_, uint16 partnerFeeBps_) external onlyOwner nonReentrant {
        _checkFees(serviceFeeBps_, partnerFeeBps_);
        if (feeChangeEffectiveAt != 0) {
            emit FeeChangeCancelled(scheduledServiceFeeBps, scheduledPartnerFeeBps);
            _clearScheduledFees();
        }
        if (serviceFeeBps_ <= serviceFeeBps && partnerFeeBps_ <= partnerFeeBps) {
            _applyFees(serviceFeeBps_, partnerFeeBps_);
            return;
        }
        uint256 effectiveAt = block.timestamp + feeChangeDelay;
        scheduledServiceFeeBps = serviceFeeBps_;
        scheduledPartnerFeeBps = partnerFeeBps_;
        feeChangeEffectiveAt = uint64(effectiveAt);
        emit FeeChangeScheduled(serviceFeeBps_, partnerFeeBps_, effectiveAt);
    }

    /// @notice Applies the scheduled fee change once its notice has passed. Anyone may call it.
    function applyFeeChange() external nonReentrant {
        uint256 effectiveAt = feeChangeEffectiveAt;
        if (effectiveAt == 0) revert NoFeeChangeScheduled();
        if (block.timestamp < effectiveAt) revert FeeChangeNotDue(effectiveAt);
        (uint16 s, uint16 p) = (scheduledServiceFeeBps, scheduledPartnerFeeBps);
        _clearScheduledFees();
        _applyFees(s, p);
    }

    function cancelFeeChange() external onlyOwner nonReentrant {
        if (feeChangeEffectiveAt == 0) revert NoFeeChangeScheduled();
        emit FeeChangeCancelled(scheduledServiceFeeBps, scheduledPartnerFeeBps);
        _clearScheduledFees();
    }

    function _clearScheduledFees() private {
        scheduledServiceFeeBps = 0;
        scheduledPartnerFeeBps = 0;
        feeChangeEffectiveAt = 0;
    }

    function _applyFees(uint16 s, uint16 p) private {
        _accrueFees(); // past yield is charged at the old rates
        // The gain left above the mark (its fee at the old rates rounded below one base unit) is
        // forgiven rather than charged at the new rates.
        uint256 price = _activePrice();
        if (price > highWaterMark) highWaterMark = price;
        serviceFeeBps = s;
        partnerFeeBps = p;
        emit FeesUpdated(s, p);
    }

    function _checkFees(uint16 s, uint16 p) private pure {
        if (uint256(s) + p > MAX_TOTAL_FEE_BPS) revert FeeTooHigh(uint256(s) + p);
    }

    // ---------------------------------------------------------------- operator

    function pause() external onlyOwner nonReentrant {
        _pause();
    }

    function unpause() external onlyOwner nonReentrant {
        _unpause();
    }

    /// @notice One-way: deposits stop for good; exits keep working.
    function deprecate() external onlyOwner nonReentrant {
        if (deprecated) revert AlreadyDeprecated();
        deprecated = true;
        emit Deprecated(msg.sender);
    }

    /// @notice Disabled: an ownerless engine could never be paused, deprecated or have its fees set.
    function renounceOwnership() public view override onlyOwner {
        revert RenounceDisabled();
    }

    // ---------------------------------------------------------------- ERC-20 (guarded)

    function transfer(address to, uint256 value) public override(ERC20, IERC20) nonReentrant returns (bool) {
        return super.transfer(to, value);
    }

    function transferFrom(address from, address to, uint256 value)
        public
        override(ERC20, IERC20)
        nonReentrant
        returns (bool)
    {
        return super.transferFrom(from, to, value);
    }

    // ---------------------------------------------------------------- ERC-4626

    function _decimalsOffset() internal pure override returns (uint8) {
        return DECIMALS_OFFSET;
    }

    function _convertToShares(uint256 assets, Math.Rounding rounding) internal view override returns (uint256) {
        return assets.mulDiv(activeSupply() + pendingFeeShares() + 10 ** DECIMALS_OFFSET, activeAssets() + 1, rounding);
    }

    function _convertToAssets(uint256 shares, Math.Rounding rounding) internal view override returns (uint256) {
        return shares.mulDiv(activeAssets() + 1, activeSupply() + pendingFeeShares() + 10 ** DECIMALS_OFFSET, rounding);
    }

    function maxDeposit(address) public view override returns (uint256) {
        if (paused() || deprecated) return 0;
        return _underlying.maxDeposit(address(this));
    }

    function maxMint(address receiver) public view override returns (uint256) {
        uint256 maxAssets = maxDeposit(receiver);
        if (!seeded) {
            // The first mint also pays the seed.
            if (maxAssets <= SEED_ASSETS) return 0;
            if (maxAssets != type(uint256).max) maxAssets -= SEED_ASSETS;
        }
        if (maxAssets == type(uint256).max) return type(uint256).max;
        // Saturate rather than overflow (ERC-4626: max* never revert): the shares of maxAssets can
        // exceed 2^256 - 1 when an underlying accepts nearly 2^256 assets and a share is worth
        // less than one asset unit; every mint up to 2^256 - 1 shares then fits within maxAssets.
        uint256 supply = activeSupply() + pendingFeeShares() + 10 ** DECIMALS_OFFSET;
        uint256 assets = activeAssets() + 1;
        if (assets < supply && maxAssets > type(uint256).max.mulDiv(assets, supply)) return type(uint256).max;
        return maxAssets.mulDiv(supply, assets, Math.Rounding.Floor);
    }

    /// @notice The holder's assets, bounded by what the engine can pay out now (`exitLiquidity()`).
    function maxWithdraw(address owner_) public view override returns (uint256) {
        return Math.min(_convertToAssets(_sharesAfterAccrual(owner_), Math.Rounding.Floor), exitLiquidity());
    }

    /// @notice The holder's shares, bounded by the shares `exitLiquidity()` redeems.
    function maxRedeem(address owner_) public view override returns (uint256) {
        uint256 shares = _sharesAfterAccrual(owner_);
        uint256 liquidity = exitLiquidity();
        if (_convertToAssets(shares, Math.Rounding.Floor) <= liquidity) return shares;
        return Math.min(shares, _convertToShares(liquidity, Math.Rounding.Floor));
    }

    /// @dev The owner's shares once the call's own accrual minted the pending fee: a fee recipient
    /// redeems (and is bounded by) what it holds at that point, as the call itself sees it.
    function _sharesAfterAccrual(address owner_) private view returns (uint256 shares) {
        shares = balanceOf(owner_);
        if (owner_ != serviceFeeRecipient && owner_ != partnerFeeRecipient) return shares;
        (uint256 feeShares,,) = _computeFee();
        if (feeShares == 0) return shares;
        uint256 serviceShares = feeShares.mulDiv(serviceFeeBps, uint256(serviceFeeBps) + partnerFeeBps);
        if (owner_ == serviceFeeRecipient) shares += serviceShares;
        if (owner_ == partnerFeeRecipient) shares += feeShares - serviceShares;
    }

    /// @notice Until the engine is seeded, the first `SEED_ASSETS` of a deposit buy the seed shares.
    function previewDeposit(uint256 assets) public view override returns (uint256) {
        if (seeded) return _convertToShares(assets, Math.Rounding.Floor);
        if (assets <= SEED_ASSETS) return 0;
        return _convertToShares(assets - SEED_ASSETS, Math.Rounding.Floor);
    }

    /// @notice Until the engine is seeded, a mint also pays `SEED_ASSETS` for the seed shares.
    function previewMint(uint256 shares) public view override returns (uint256) {
        uint256 assets = _convertToAssets(shares, Math.Rounding.Ceil);
        return seeded ? assets : assets + SEED_ASSETS;
    }

    function deposit(uint256 assets, address receiver) public override nonReentrant returns (uint256) {
        if (!seeded && assets <= SEED_ASSETS) revert FirstDepositTooSmall(assets, SEED_ASSETS + 1);
        _accrueFees();
        return super.deposit(assets, receiver);
    }

    function mint(uint256 shares, address receiver) public override nonReentrant returns (uint256) {
        _accrueFees();
        return super.mint(shares, receiver);
    }

    function withdraw(uint256 assets, address receiver, address owner_)
        public
        override
        nonReentrant
        returns (uint256)
    {
        _accrueFees();
        return super.withdraw(assets, receiver, owner_);
    }

    function redeem(uint256 shares, address receiver, address owner_) public override nonReentrant returns (uint256) {
        _accrueFees();
        return super.redeem(shares, receiver, owner_);
    }

    /// @dev Asset policy: the engine credits shares for exactly `assets`, so it refuses an asset
    /// that delivers less than is sent (fee-on-transfer): the shortfall would otherwise come out of
    /// the other holders' assets. The balance is compared before and after the transfer.
    /// The first deposit or mint also mints the seed shares (worth `SEED_ASSETS`, priced with the
    /// depositor's shares before the transfer) to `SEED_SHARES_HOLDER`.
    function _deposit(address caller, address receiver, uint256 assets, uint256 shares) internal override {
        uint256 seedShares;
        if (!seeded) {
            seeded = true;
            seedShares = _convertToShares(SEED_ASSETS, Math.Rounding.Floor);
        }
        IERC20 token = IERC20(asset());
        uint256 before = token.balanceOf(address(this));
        _freeze(activeAssets(), totalAssets());
        token.safeTransferFrom(caller, address(this), assets);
        _thaw();
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != assets) revert AssetTransferShortfall(assets, received);
        if (seedShares > 0) _mint(SEED_SHARES_HOLDER, seedShares);
        _mint(receiver, shares);
        emit Deposit(caller, receiver, assets, shares);
        _freeze(activeAssets(), totalAssets());
        _underlying.deposit(assets, address(this));
        _thaw();
    }

    function _withdraw(address caller, address receiver, address owner_, uint256 assets, uint256 shares)
        internal
        override
    {
        // Within maxWithdraw: an asynchronous underlying is never asked (its claimable assets
        // belong to open requests), a synchronous one only within its own maxWithdraw.
        uint256 active = activeAssets();
        uint256 total = totalAssets();
        uint256 idle = idleAssets();
        if (idle < assets) {
            _freeze(active, total);
            _underlying.withdraw(assets - idle, address(this), address(this));
        }
        // The shares burn before the asset leaves: the views answer as after the transfer.
        _freeze(active.saturatingSub(assets), total.saturatingSub(assets));
        super._withdraw(caller, receiver, owner_, assets, shares);
        _thaw();
    }

    // ---------------------------------------------------------------- asynchronous redeem

    /// @notice Opens an exit on an engine over an asynchronous (ERC-7540) vault. The shares are
    /// escrowed in the engine (still in the supply, out of the active pool). The request takes its
    /// share of the pool's idle asset (set apart in `reservedAssets`) and requests the underlying
    /// shares worth the rest of its value with the standard
    /// `requestRedeem(shares, controller = engine, owner = engine)`. Both are rounded down, so the
    /// share price of the other holders does not fall, and the last holder can always request its
    /// whole balance (the underlying part is capped by the shares held).
    function requestRedeem(uint256 shares, address controller, address owner_)
        external
        nonReentrant
        returns (uint256 requestId)
    {
        if (!isAsync) revert NotAsync();
        if (shares == 0) revert ZeroShares();
        if (controller == address(0)) revert ZeroAddress();
        _accrueFees();
        _settleUpstream();
        if (msg.sender != owner_) _spendAllowance(owner_, msg.sender, shares);
        // Moving the shares into escrow first checks the balance; the active supply is unchanged
        // until `escrowedShares` counts them.
        _transfer(owner_, address(this), shares);
        uint256 supply = activeSupply();
        uint256 value = _convertToAssets(shares, Math.Rounding.Floor);
        uint256 idlePart = Math.min(idleAssets().mulDiv(shares, supply), value);
        uint256 uShares = Math.min(_underlying.convertToShares(value - idlePart), heldUnderlyingShares());
        // The fee-free base: what the shares are worth now, or at the high-water mark when the
        // price is below it (a pool holder pays no fee on a recovery up to the mark either).
        uint256 base = Math.max(value, shares.mulDiv(highWaterMark, PRICE_SCALE));
        escrowedShares += shares;
        reservedAssets += idlePart;
        pendingUnderlyingShares += uShares;
        requestId = nextRequestId++;
        _requests[requestId] = RedeemRequest(controller, owner_, shares, 0, uShares, false);
        _terms[requestId] =
            RequestTerms(idlePart, base, uint256(serviceFeeBps) + partnerFeeBps, queuedUnderlyingShares);
        // Shares worth less than one underlying share (dust, e.g. a fee remainder) need no underlying
        // request: the request is claimable at once and pays its idle part.
        if (uShares > 0) {
            uint8 scheme = requestIdScheme;
            if (scheme != SCHEME_OWN_IDS) queuedUnderlyingShares += uShares;
            // Held shares still count the requested ones until the underlying takes them.
            uint256 active = idleAssets() + _underlying.convertToAssets(heldUnderlyingShares() - uShares);
            _freeze(active, active + _underlying.convertToAssets(pendingUnderlyingShares) + reservedAssets);
            uint256 uRequestId =
                IERC7540Redeem(address(_underlying)).requestRedeem(uShares, address(this), address(this));
            _thaw();
            if (scheme == 0) {
                // Learnt once: the reference pattern files every request under id 0.
                scheme = uRequestId == 0 ? SCHEME_POOLED : SCHEME_OWN_IDS;
                requestIdScheme = scheme;
                if (scheme == SCHEME_OWN_IDS) queuedUnderlyingShares = 0;
            }
            _requests[requestId].underlyingRequestId = uRequestId;
        }
        emit RedeemRequested(controller, owner_, requestId, msg.sender, shares);
    }

    /// @notice Pooled scheme: redeems whatever the underlying has made claimable and records the
    /// checkpoint, so that the requests it covers become claimable. Every request, claim and
    /// `accrueFees()` does this after its accrual; anyone may call it (a keeper calling it after each upstream fulfilment keeps the
    /// settlement prices of successive fulfilments apart).
    function settleRequests() external nonReentrant {
        _accrueFees();
        _settleUpstream();
    }

    function _settleUpstream() private {
        if (requestIdScheme != SCHEME_POOLED) return;
        uint256 uShares = Math.min(_underlying.maxRedeem(address(this)), pendingUnderlyingShares);
        if (uShares == 0) return;
        uint256 cumShares = settledUnderlyingShares + uShares;
        _freeze(activeAssets(), totalAssets());
        settledUnderlyingShares = cumShares;
        pendingUnderlyingShares -= uShares;
        uint256 before = IERC20(asset()).balanceOf(address(this));
        uint256 owed = _underlying.redeem(uShares, address(this), address(this));
        _thaw();
        uint256 received = IERC20(asset()).balanceOf(address(this)) - before;
        if (received < owed) revert ClaimShortfall(0, owed, received);
        reservedAssets += received;
        uint256 n = _checkpoints.length;
        uint256 cumAssets = (n == 0 ? 0 : _checkpoints[n - 1].cumAssets) + received;
        _checkpoints.push(Checkpoint(cumShares, cumAssets, _poolPrice()));
        emit RequestsSettled(uShares, received, cumShares);
    }

    /// @dev The active pool's real price (no virtual offsets; PRICE_SCALE), 0 when it has no shares.
    function _poolPrice() private view returns (uint256) {
        uint256 supply = activeSupply() + pendingFeeShares();
        if (supply == 0) return 0;
        return activeAssets().mulDiv(PRICE_SCALE, supply);
    }

    /// @notice Claims a settled request (caller must be its controller) and pays the receiver its
    /// due: the request's gross (its idle part + what its underlying shares were settled for) less
    /// the fee on the yield it earned since the request (docs/engine.md, "The fee on requests").
    /// Reverts while the request is not settled (`NotClaimable`) and when the underlying pays less
    /// than it reported (`ClaimShortfall`). Emits the standard `Withdraw`.
    function claimRedeem(uint256 requestId, address receiver) external nonReentrant returns (uint256 assets) {
        RedeemRequest storage r = _requests[requestId];
        if (r.controller != msg.sender) revert NotController(requestId, msg.sender);
        if (r.claimed) revert AlreadyClaimed(requestId);
        _accrueFees();
        _settleUpstream();
        if (!_claimable(requestId, r)) revert NotClaimable(requestId);
        RequestTerms memory t = _terms[requestId];
        uint256 shares = r.shares;
        uint256 uShares = r.underlyingShares;
        uint256 gross = t.idleAssets;
        uint256 poolPrice;
        // Effects first: the request is closed and its engine shares burnt before any external call.
        r.claimed = true;
        escrowedShares -= shares;
        _burn(address(this), shares);
        if (uShares > 0 && requestIdScheme == SCHEME_POOLED) {
            uint256 k = _checkpointCovering(t.queueStart + uShares);
            gross += _cumAssetsAt(t.queueStart + uShares, k) - _cumAssetsAt(t.queueStart, _checkpointCovering(t.queueStart));
            poolPrice = _checkpoints[k].poolPrice;
        } else {
            poolPrice = _poolPrice();
            if (uShares > 0) {
                // Own ids: the request's own underlying shares, redeemed now.
                _freeze(activeAssets(), totalAssets());
                pendingUnderlyingShares -= uShares;
                uint256 before = IERC20(asset()).balanceOf(address(this));
                uint256 owed = _underlying.redeem(uShares, address(this), address(this));
                _thaw();
                uint256 received = IERC20(asset()).balanceOf(address(this)) - before;
                if (received < owed) revert ClaimShortfall(requestId, owed, received);
                reservedAssets += received;
                gross += received;
            }
        }
        assets = _requestDue(gross, t, shares, poolPrice);
        uint256 fee = gross - assets;
        // The fee joins the pool and shares worth exactly that go to the recipients, priced before
        // it joins (the pool's price does not move). With no fee in force it stays in the pool.
        uint256 feeShares;
        if (fee > 0 && uint256(serviceFeeBps) + partnerFeeBps > 0) feeShares = _convertToShares(fee, Math.Rounding.Floor);
        reservedAssets -= gross;
        if (fee > 0) emit RequestFeeCharged(requestId, gross, fee);
        if (feeShares > 0) _mintFee(feeShares, fee);
        // The paid assets are no longer reserved but still held: the views answer as after the transfer.
        _freeze(activeAssets().saturatingSub(assets), totalAssets().saturatingSub(assets));
        IERC20(asset()).safeTransfer(receiver, assets);
        _thaw();
        emit Withdraw(msg.sender, receiver, msg.sender, assets, shares);
        emit RedeemClaimed(msg.sender, receiver, requestId, assets, shares);
    }

    /// @dev The fee rule on requests. The yield a request earned is its gross above its fee-free
    /// base; it is charged the lower of the total fee in force at the request and at the claim,
    /// rounded down as the pool's fee is. The due is also never more than the same shares were
    /// worth in the pool (its real price, net of fees) when the request settled, so requesting
    /// early never beats staying in the pool: what the underlying paid beyond that (the yield the
    /// pool's fee shares earn, which a pool holder also forgoes) is fee too.
    function _requestDue(uint256 gross, RequestTerms memory t, uint256 shares, uint256 poolPrice)
        private
        view
        returns (uint256 due)
    {
        due = gross;
        uint256 feeBps = Math.min(t.feeBps, uint256(serviceFeeBps) + partnerFeeBps);
        if (gross > t.baseAssets) due = gross - (gross - t.baseAssets).mulDiv(feeBps, BPS);
        if (poolPrice > 0) due = Math.min(due, shares.mulDiv(poolPrice, PRICE_SCALE));
    }

    /// @dev Index of the first checkpoint whose cumulative shares reach `x` (binary search).
    function _checkpointCovering(uint256 x) private view returns (uint256 lo) {
        uint256 hi = _checkpoints.length;
        while (lo < hi) {
            uint256 mid = (lo + hi) / 2;
            if (_checkpoints[mid].cumShares < x) lo = mid + 1;
            else hi = mid;
        }
    }

    /// @dev Cumulative assets received for the first `x` queued underlying shares: exact at each
    /// checkpoint, linear (the fulfilment's own price) within one, rounded down.
    function _cumAssetsAt(uint256 x, uint256 k) private view returns (uint256) {
        if (x == 0) return 0;
        Checkpoint memory cur = _checkpoints[k];
        (uint256 prevShares, uint256 prevAssets) = k == 0 ? (0, 0) : (_checkpoints[k - 1].cumShares, _checkpoints[k - 1].cumAssets);
        return prevAssets + (x - prevShares).mulDiv(cur.cumAssets - prevAssets, cur.cumShares - prevShares);
    }

    /// @dev Whether the request can be claimed now. Dust is at once. Pooled scheme: its interval of
    /// the queue is covered by what is settled or claimable upstream (claimRedeem settles first).
    /// Own ids: its own underlying request is no longer pending and the engine's claimable shares
    /// cover it (claimable shares of one controller are fungible in ERC-7540: claims are by amount).
    function _claimable(uint256 requestId, RedeemRequest memory r) private view returns (bool) {
        if (r.underlyingShares == 0) return true; // dust: nothing was requested upstream
        if (requestIdScheme == SCHEME_POOLED) {
            uint256 end = _terms[requestId].queueStart + r.underlyingShares;
            if (end <= settledUnderlyingShares) return true;
            uint256 upstream = Math.min(_underlying.maxRedeem(address(this)), pendingUnderlyingShares);
            return end <= settledUnderlyingShares + upstream;
        }
        if (IERC7540Redeem(address(_underlying)).pendingRedeemRequest(r.underlyingRequestId, address(this)) > 0) {
            return false;
        }
        return _underlying.maxRedeem(address(this)) >= r.underlyingShares;
    }

    function _probeAsync(address vault) private view returns (bool) {
        try IERC165Probe(vault).supportsInterface(ASYNC_REDEEM_INTERFACE_ID) returns (bool yes) {
            return yes;
        } catch {
            return false;
        }
    }
}
