/**
 * The parts of the engine's ABI (an ERC-4626 vault with an asynchronous redeem) and of ERC-20 that
 * a deposit/withdraw UI needs. Written out `as const` so viem types every call; the SDK's engine
 * test checks each against a real engine on anvil.
 */
const uint = (name: string) => ({ name, type: 'uint256' }) as const;
const address = (name: string) => ({ name, type: 'address' }) as const;
const view = <const I extends readonly unknown[], const O extends readonly unknown[]>(
  name: string,
  inputs: I,
  outputs: O,
) => ({ type: 'function', stateMutability: 'view', name, inputs, outputs }) as const;
const write = <
  const N extends string,
  const I extends readonly unknown[],
  const O extends readonly unknown[],
>(
  name: N,
  inputs: I,
  outputs: O,
) => ({ type: 'function', stateMutability: 'nonpayable', name, inputs, outputs }) as const;

export const engineAbi = [
  write('deposit', [uint('assets'), address('receiver')], [uint('shares')]),
  write('redeem', [uint('shares'), address('receiver'), address('owner')], [uint('assets')]),
  write('withdraw', [uint('assets'), address('receiver'), address('owner')], [uint('shares')]),
  write(
    'requestRedeem',
    [uint('shares'), address('controller'), address('owner')],
    [uint('requestId')],
  ),
  write('claimRedeem', [uint('requestId'), address('receiver')], [uint('assets')]),
  view('previewDeposit', [uint('assets')], [uint('shares')]),
  view('previewRedeem', [uint('shares')], [uint('assets')]),
  view('previewWithdraw', [uint('assets')], [uint('shares')]),
  view('convertToAssets', [uint('shares')], [uint('assets')]),
  view('maxDeposit', [address('receiver')], [uint('assets')]),
  view('maxRedeem', [address('owner')], [uint('shares')]),
  view('maxWithdraw', [address('owner')], [uint('assets')]),
  view('balanceOf', [address('account')], [uint('balance')]),
  view('claimableAt', [uint('requestId')], [uint('timestamp')]),
  view('isAsync', [], [{ name: '', type: 'bool' }]),
  view('decimals', [], [{ name: '', type: 'uint8' }]),
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
  {
    type: 'event',
    name: 'Withdraw',
    inputs: [
      { name: 'sender', type: 'address', indexed: true },
      { name: 'receiver', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'assets', type: 'uint256', indexed: false },
      { name: 'shares', type: 'uint256', indexed: false },
    ],
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
    name: 'RedeemClaimed',
    inputs: [
      { name: 'controller', type: 'address', indexed: true },
      { name: 'receiver', type: 'address', indexed: true },
      { name: 'requestId', type: 'uint256', indexed: true },
      { name: 'assets', type: 'uint256', indexed: false },
      { name: 'shares', type: 'uint256', indexed: false },
    ],
  },
] as const;

export const erc20Abi = [
  view('allowance', [address('owner'), address('spender')], [uint('remaining')]),
  view('balanceOf', [address('account')], [uint('balance')]),
  write('approve', [address('spender'), uint('amount')], [{ name: '', type: 'bool' }]),
] as const;
