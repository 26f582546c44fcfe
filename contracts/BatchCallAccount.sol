// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice Test contract: the code a test wallet's account delegates to with EIP-7702, so that the
/// wallet can execute a batch of calls atomically from the account itself (as smart-account
/// wallets do for EIP-5792 `wallet_sendCalls`). Only the account can call it (a transaction it
/// sends to itself). Not deployed by the service.
contract BatchCallAccount {
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    error NotSelf(address caller);
    error CallFailed(uint256 index, bytes reason);

    function executeBatch(Call[] calldata calls) external payable {
        if (msg.sender != address(this)) revert NotSelf(msg.sender);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].to.call{value: calls[i].value}(calls[i].data);
            if (!ok) revert CallFailed(i, ret);
        }
    }

    receive() external payable {}
}
