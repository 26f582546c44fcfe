/**
 * The permit deposit router (contracts/PermitDepositRouter.sol): one stateless contract per chain,
 * deployed with CREATE2 through the deterministic deployment proxy (present on anvil and on most
 * EVM chains), so its address follows from its bytecode alone and is the same on every chain. The
 * lifecycle deploys it where products are deployed (src/sync/lifecycle/permit-router.ts); the
 * local chain deploys it at build time. The embed and the SDK use it for the EIP-2612 rung of the
 * deposit ladder.
 */
import { type Address, concat, getContractAddress, type Hex, pad } from 'viem';
import { permitDepositRouterBytecode } from './generated/PermitDepositRouter.ts';

/** Arachnid's deterministic deployment proxy: `salt ‖ initcode` in, CREATE2 out. */
export const CREATE2_FACTORY: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c';
export const PERMIT_ROUTER_SALT: Hex = pad('0x00', { size: 32 });

/** Where the router is (or will be) on any chain with the proxy. */
export function permitRouterAddress(): Address {
  return getContractAddress({
    opcode: 'CREATE2',
    from: CREATE2_FACTORY,
    salt: PERMIT_ROUTER_SALT,
    bytecode: permitDepositRouterBytecode,
  });
}

/** The transaction that deploys it: to CREATE2_FACTORY with this data. */
export function permitRouterDeployment(): { to: Address; data: Hex } {
  return { to: CREATE2_FACTORY, data: concat([PERMIT_ROUTER_SALT, permitDepositRouterBytecode]) };
}
