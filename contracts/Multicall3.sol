// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice The `aggregate3` call (and the `getEthBalance` view) of Multicall3 (the contract that lives at
/// 0xcA11bde05977b3631167028862bE2a173976CA11 on nearly every EVM chain), written here for the local
/// chain, which is put at that same address. It runs view calls one after the other in one call and
/// returns each one's success and data; a failing call fails the whole only when it does not allow
/// failure. The service reads many products at one block this way (src/chain/multicall3.ts).
contract Multicall3 {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    error CallFailed(uint256 index);

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory returnData) {
        uint256 length = calls.length;
        returnData = new Result[](length);
        for (uint256 i = 0; i < length; i++) {
            Call3 calldata c = calls[i];
            (bool success, bytes memory data) = c.target.call(c.callData);
            if (!success && !c.allowFailure) revert CallFailed(i);
            returnData[i] = Result(success, data);
        }
    }

    /// @notice What viem's getBalance asks for when its reads are gathered into Multicall3.
    function getEthBalance(address addr) external view returns (uint256) {
        return addr.balance;
    }

    function getBlockNumber() external view returns (uint256) {
        return block.number;
    }

    function getCurrentBlockTimestamp() external view returns (uint256) {
        return block.timestamp;
    }
}
