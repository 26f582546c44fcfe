/**
 * An engine's scheduled fee change (a fee increase takes effect only after a notice period):
 * the new fees and the time from which they may apply, or null when none is scheduled. Engines
 * deployed before the schedule existed have no such views: they read as null too.
 */
import { type Address, parseAbi } from 'viem';
import { isRevertOrNoData } from './call-errors.ts';
import type { ChainClient } from './client.ts';

const scheduleAbi = parseAbi([
  'function feeChangeEffectiveAt() view returns (uint256)',
  'function scheduledServiceFeeBps() view returns (uint16)',
  'function scheduledPartnerFeeBps() view returns (uint16)',
]);

export interface ScheduledFeeChange {
  serviceFeeBps: number;
  partnerFeeBps: number;
  /** Unix seconds from which the change may apply. */
  effectiveAt: bigint;
}

export async function readScheduledFeeChange(
  client: ChainClient,
  params: { engine: Address; blockNumber?: bigint },
): Promise<ScheduledFeeChange | null> {
  const { engine: address, blockNumber } = params;
  try {
    const effectiveAt = await client.readContract({
      address,
      abi: scheduleAbi,
      functionName: 'feeChangeEffectiveAt',
      blockNumber,
    });
    if (effectiveAt === 0n) return null;
    const [serviceFeeBps, partnerFeeBps] = await Promise.all([
      client.readContract({
        address,
        abi: scheduleAbi,
        functionName: 'scheduledServiceFeeBps',
        blockNumber,
      }),
      client.readContract({
        address,
        abi: scheduleAbi,
        functionName: 'scheduledPartnerFeeBps',
        blockNumber,
      }),
    ]);
    return { serviceFeeBps, partnerFeeBps, effectiveAt };
  } catch (err) {
    if (isRevertOrNoData(err)) return null;
    throw err;
  }
}
