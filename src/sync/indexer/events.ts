/**
 * Turns engine logs into the spec's lifecycle events: one event per log, payload fields exactly in
 * the spec's order, amounts as whole-unit decimal strings (asset decimals for assets, the engine's
 * share decimals for shares), addresses EIP-55, times ISO 8601 UTC with `Z`.
 */
import { encodeFunctionData, getAddress, type Hex, hexToBigInt, numberToHex } from 'viem';
import type { SyncPublicClient } from '../../chain/chains.ts';
import { yieldEngineAbi } from '../../chain/generated/YieldEngine.ts';
import type { Product } from '../../db/products.ts';
import { formatUnits } from '../../money/units.ts';
import type { Header } from './blocks.ts';
import { type RawLog, TOPICS } from './logs.ts';

export type LifecycleEventType = 'deposit.confirmed' | 'redeem.confirmed' | 'redeem.requested';

/** One row for the events table. */
export interface IndexedEvent {
  partnerId: string;
  environment: Product['environment'];
  productId: string;
  /** With chainId, txHash and logIndex: the event's dedupe key (events_chain_log). */
  eventType: LifecycleEventType;
  /** The exact JSON text that is stored, signed and sent. */
  payload: string;
  /** Block time, ISO 8601 UTC (`YYYY-MM-DDTHH:MM:SSZ`, as in the payload). */
  occurredAt: string;
  chainId: number;
  blockNumber: bigint;
  blockHash: Hex;
  txHash: Hex;
  logIndex: number;
}

/** Block time as `YYYY-MM-DDTHH:MM:SSZ` (block times are whole seconds; no `.000`). */
export function isoSeconds(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace('.000Z', 'Z');
}

// BigInt parses the 0x-hex word itself (no viem validation: the node returned well-formed data).
const word = (data: Hex, i: number): bigint => BigInt(`0x${data.slice(2 + 64 * i, 66 + 64 * i)}`);

/** isoSeconds memoised per range: a range's logs share a few hundred block times. */
function isoCodec() {
  const memo = new Map<number, string>();
  return (unixSeconds: number): string => {
    let s = memo.get(unixSeconds);
    if (s === undefined) {
      s = isoSeconds(unixSeconds);
      memo.set(unixSeconds, s);
    }
    return s;
  };
}

/** EIP-55 of an indexed address topic; memoised because a range repeats the same few users. */
function addressCodec() {
  const memo = new Map<string, Hex>();
  return (topic: Hex): Hex => {
    let a = memo.get(topic);
    if (!a) {
      a = getAddress(`0x${topic.slice(26)}`);
      memo.set(topic, a);
    }
    return a;
  };
}

export function isRedeemRequested(log: RawLog): boolean {
  return log.topics[0] === TOPICS.redeemRequested;
}

/**
 * estimated_settlement_at: the engine's own `claimableAt(requestId)` read at the request's block.
 * It asks the underlying asynchronous vault when the request becomes claimable, so it is the real
 * schedule (not a copy of the vault's delay kept here that could drift from a changed setting). The
 * read is pinned to the log's block: the answer is the one the chain gave when the request was made.
 * Zero (no underlying request was needed, nothing to wait for) means claimable at once: block time.
 */
export async function readSettlementTimes(
  client: SyncPublicClient,
  logs: readonly RawLog[],
): Promise<Map<string, number>> {
  const wanted = logs.filter(isRedeemRequested);
  const answers = await Promise.all(
    wanted.map((log) =>
      client.request({
        method: 'eth_call',
        params: [
          {
            to: log.address,
            data: encodeFunctionData({
              abi: yieldEngineAbi,
              functionName: 'claimableAt',
              args: [hexToBigInt(log.topics[3] as Hex)],
            }),
          },
          // By hash (EIP-1898): the read is of exactly the block the log is in, never a sibling.
          { blockHash: log.blockHash },
        ],
      }),
    ),
  );
  const out = new Map<string, number>();
  wanted.forEach((log, i) => {
    out.set(logKey(log), Number(hexToBigInt(answers[i] as Hex)));
  });
  return out;
}

export const logKey = (log: RawLog): string => `${log.transactionHash}:${log.logIndex}`;

export interface BuildContext {
  chainId: number;
  /** Products by lowercase engine address. */
  engines: ReadonlyMap<string, Product>;
  headers: ReadonlyMap<bigint, Header>;
  settlement: ReadonlyMap<string, number>;
}

export function buildEvents(logs: readonly RawLog[], ctx: BuildContext): IndexedEvent[] {
  const address = addressCodec();
  const iso = isoCodec();
  const out: IndexedEvent[] = [];
  for (const log of logs) {
    const product = ctx.engines.get(log.address.toLowerCase());
    if (!product || log.removed) continue;
    const blockNumber = BigInt(log.blockNumber);
    const header = ctx.headers.get(blockNumber);
    if (!header) throw new Error(`no header for block ${blockNumber}`);
    const logIndex = Number(log.logIndex);
    const txHash = log.transactionHash;
    const occurredAt = iso(header.timestamp);
    // The engine's decimals are its asset's plus its fixed offset of 6; recorded at deployment.
    const shareDecimals = product.shareDecimals ?? product.assetDecimals + 6;
    let eventType: LifecycleEventType;
    let payload: Record<string, unknown>;
    switch (log.topics[0]) {
      case TOPICS.deposit:
      case TOPICS.withdraw: {
        const isDeposit = log.topics[0] === TOPICS.deposit;
        eventType = isDeposit ? 'deposit.confirmed' : 'redeem.confirmed';
        // Deposit(sender, owner | assets, shares); Withdraw(sender, receiver, owner | assets, shares)
        const owner = address(log.topics[isDeposit ? 2 : 3] as Hex);
        payload = {
          slug: product.slug,
          chain_id: ctx.chainId,
          tx_hash: txHash,
          block_number: Number(blockNumber),
          log_index: logIndex,
          user_address: owner,
          amount: formatUnits(word(log.data, 0), product.assetDecimals),
          shares: formatUnits(word(log.data, 1), shareDecimals),
          asset_symbol: product.assetSymbol,
          occurred_at: occurredAt,
        };
        break;
      }
      case TOPICS.redeemRequested: {
        eventType = 'redeem.requested';
        // RedeemRequested(controller, owner, requestId | sender, shares)
        const readyAt = ctx.settlement.get(logKey(log));
        if (readyAt === undefined) throw new Error(`no settlement time for ${logKey(log)}`);
        payload = {
          slug: product.slug,
          chain_id: ctx.chainId,
          tx_hash: txHash,
          log_index: logIndex,
          user_address: address(log.topics[2] as Hex),
          shares: formatUnits(word(log.data, 1), shareDecimals),
          // Compact 0x hex of the engine's uint256 request id (as JSON-RPC writes quantities).
          request_id: numberToHex(hexToBigInt(log.topics[3] as Hex)),
          estimated_settlement_at: iso(readyAt === 0 ? header.timestamp : readyAt),
          occurred_at: occurredAt,
        };
        break;
      }
      default:
        continue;
    }
    out.push({
      partnerId: product.partnerId,
      environment: product.environment,
      productId: product.id,
      eventType,
      payload: JSON.stringify(payload),
      occurredAt,
      chainId: ctx.chainId,
      blockNumber,
      blockHash: log.blockHash,
      txHash,
      logIndex,
    });
  }
  return out;
}
