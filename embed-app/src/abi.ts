/** The few contract functions the embed calls: ERC-20, ERC-4626, and the engine's async exit. */
export const erc20Abi = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
] as const;

const u = (name: string) => ({ name, type: 'uint256' }) as const;
const a = (name: string) => ({ name, type: 'address' }) as const;

export const engineAbi = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [a('owner')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'convertToAssets',
    stateMutability: 'view',
    inputs: [u('shares')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'previewDeposit',
    stateMutability: 'view',
    inputs: [u('assets')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'convertToShares',
    stateMutability: 'view',
    inputs: [u('assets')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'previewWithdraw',
    stateMutability: 'view',
    inputs: [u('assets')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'withdraw',
    stateMutability: 'nonpayable',
    inputs: [u('assets'), a('receiver'), a('owner')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'previewRedeem',
    stateMutability: 'view',
    inputs: [u('shares')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'maxDeposit',
    stateMutability: 'view',
    inputs: [a('receiver')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'maxRedeem',
    stateMutability: 'view',
    inputs: [a('owner')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [u('assets'), a('receiver')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'redeem',
    stateMutability: 'nonpayable',
    inputs: [u('shares'), a('receiver'), a('owner')],
    outputs: [u('')],
  },
  {
    type: 'function',
    name: 'requestRedeem',
    stateMutability: 'nonpayable',
    inputs: [u('shares'), a('controller'), a('owner')],
    outputs: [u('requestId')],
  },
  {
    type: 'function',
    name: 'claimRedeem',
    stateMutability: 'nonpayable',
    inputs: [u('requestId'), a('receiver')],
    outputs: [u('assets')],
  },
  {
    type: 'function',
    name: 'redeemRequest',
    stateMutability: 'view',
    inputs: [u('requestId')],
    outputs: [
      {
        type: 'tuple',
        components: [
          a('controller'),
          a('owner'),
          u('shares'),
          u('underlyingRequestId'),
          u('underlyingShares'),
          { name: 'claimed', type: 'bool' },
        ],
      },
    ],
  },
  {
    type: 'function',
    name: 'claimableAt',
    stateMutability: 'view',
    inputs: [u('requestId')],
    outputs: [u('')],
  },
  {
    type: 'event',
    name: 'RedeemRequested',
    inputs: [
      { name: 'controller', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'requestId', type: 'uint256', indexed: true },
      { name: 'sender', type: 'address', indexed: false },
      { name: 'shares', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'Deposit',
    inputs: [
      { name: 'sender', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'assets', type: 'uint256', indexed: false },
      { name: 'shares', type: 'uint256', indexed: false },
    ],
  },
] as const;
