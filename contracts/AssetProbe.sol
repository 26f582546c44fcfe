// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IProbedAsset {
    function balanceOf(address who) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function approve(address spender, uint256 value) external returns (bool);
}

/// @notice Never deployed: the service places its runtime code at an address with `eth_call` state
/// overrides (src/chain/asset-probe.ts), gives that address a balance of the asset, and calls
/// `probe` to see what a transfer and a transferFrom deliver. Nothing it does is ever mined.
contract AssetProbe {
    /// @return sent What each transfer asked to move (`amount`).
    /// @return byTransfer What `transfer(to, amount)` delivered to `to`.
    /// @return byTransferFrom What `transferFrom(this, to, amount)` delivered to `to`.
    /// @return debited What the two together took from this address.
    function probe(IProbedAsset asset, address to, uint256 amount)
        external
        returns (uint256 sent, uint256 byTransfer, uint256 byTransferFrom, uint256 debited)
    {
        sent = amount;
        uint256 own = asset.balanceOf(address(this));
        uint256 before = asset.balanceOf(to);
        _call(address(asset), abi.encodeCall(IProbedAsset.transfer, (to, amount)));
        uint256 middle = asset.balanceOf(to);
        byTransfer = middle - before;
        _call(address(asset), abi.encodeCall(IProbedAsset.approve, (address(this), amount)));
        _call(address(asset), abi.encodeCall(IProbedAsset.transferFrom, (address(this), to, amount)));
        byTransferFrom = asset.balanceOf(to) - middle;
        debited = own - asset.balanceOf(address(this));
    }

    /// @dev Tolerates tokens that return nothing (USDT); reverts with the token's own reason.
    function _call(address target, bytes memory data) private {
        (bool ok, bytes memory ret) = target.call(data);
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length > 0 && !abi.decode(ret, (bool))) revert("transfer returned false");
    }
}
