/**
 * Turns engine logs into the spec's lifecycle events: one event per log, payload fields exactly in
 * the spec's order, amounts as whole-unit decimal strings (asset decimals for assets, the engine's
 * share decimals for shares), addresses EIP-55, times ISO 8601 UTC with `Z`.
 */
import { getAddress, type Hex, hexToBigInt, numberToHex } from 'viem';
import type { Header } from '../../chain/block-headers.ts';
import type { ChainClient } from '../../chain/client.ts';
import { readClaimableAt } from '../../chain/read-claimable-at.ts';
import type { IndexedEvent, LifecycleEventType } from '../../db/chain-events-copy.ts';
import type { Product } from '../../db/products.ts';
import { formatUnits } from '../../money/units.ts';
import { type RawLog, TOPICS } from './logs.ts';

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
  client: ChainClient,
  logs: readonly RawLog[],
): Promise<Map<string, number>> {
  const wanted = logs.filter(isRedeemRequested);
  const answers = await Promise.all(
    wanted.map((log) =>
      // Pinned to the log's own block, by hash.
      readClaimableAt(client, {
        engine: log.address,
        requestId: hexToBigInt(log.topics[3] as Hex),
        blockHash: log.blockHash,
      }),
    ),
  );
  const out = new Map<string, number>();
  wanted.forEach((log, i) => {
    out.set(logKey(log), Number(answers[i]!));
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

/** A product's payload pieces, JSON-encoded once per range instead of once per log. */
interface ProductCodec {
  product: Product;
  /** `"slug":…,"chain_id":…,` — the payload's first two fields, common to every event type. */
  head: string;
  /** The asset symbol as a JSON string (it comes from the chain; any character must survive). */
  symbol: string;
  shareDecimals: number;
}

function productCodec(product: Product, chainId: number): ProductCodec {
  return {
    product,
    head: `{"slug":${JSON.stringify(product.slug)},"chain_id":${chainId},`,
    symbol: JSON.stringify(product.assetSymbol),
    // The engine's decimals are its asset's plus its fixed offset of 6; recorded at deployment.
    shareDecimals: product.shareDecimals ?? product.assetDecimals + 6,
  };
}

const HASH = /^0x[0-9a-f]{64}$/;

/**
 * A 32-byte hash from the node, lowercase. It is written into the payload and the COPY text as it
 * is, so anything but hex (a broken or hostile provider) is refused rather than stored.
 */
function checkedHash(value: string, what: string): Hex {
  if (HASH.test(value)) return value as Hex;
  const lower = value.toLowerCase();
  if (HASH.test(lower)) return lower as Hex;
  throw new Error(`the node returned a malformed ${what}: ${JSON.stringify(value.slice(0, 80))}`);
}

/** A quantity the node returned (`0x…` hex), as a number; refuses anything else. */
function quantity(value: string, what: string): number {
  const n = Number(value);
  if (!value.startsWith('0x') || !Number.isSafeInteger(n) || n < 0) {
    throw new Error(`the node returned a malformed ${what}: ${JSON.stringify(value.slice(0, 80))}`);
  }
  return n;
}

/**
 * The payload text is written field by field (a template per event type) rather than through an
 * object and JSON.stringify: this runs for every log, and the strings that could need escaping
 * (slug, symbol) are encoded once per product. Equal to JSON.stringify of the spec's object, in the
 * spec's key order (checked by test/sync/indexer-events.test.ts).
 */
export function buildEvents(logs: readonly RawLog[], ctx: BuildContext): IndexedEvent[] {
  const address = addressCodec();
  const iso = isoCodec();
  const codecs = new Map<string, ProductCodec>();
  for (const [engine, product] of ctx.engines)
    codecs.set(engine, productCodec(product, ctx.chainId));
  const out: IndexedEvent[] = [];
  for (const log of logs) {
    const codec = codecs.get(log.address.toLowerCase());
    if (!codec || log.removed) continue;
    const { product, head, symbol, shareDecimals } = codec;
    const blockNumber = BigInt(log.blockNumber);
    const header = ctx.headers.get(blockNumber);
    if (!header) throw new Error(`no header for block ${blockNumber}`);
    const logIndex = quantity(log.logIndex, 'log index');
    const txHash = checkedHash(log.transactionHash, 'transaction hash');
    const blockHash = checkedHash(log.blockHash, 'block hash');
    const occurredAt = iso(header.timestamp);
    const topic0 = log.topics[0];
    let eventType: LifecycleEventType;
    let payload: string;
    if (topic0 === TOPICS.deposit || topic0 === TOPICS.withdraw) {
      const isDeposit = topic0 === TOPICS.deposit;
      eventType = isDeposit ? 'deposit.confirmed' : 'redeem.confirmed';
      // Deposit(sender, owner | assets, shares); Withdraw(sender, receiver, owner | assets, shares)
      const owner = address(log.topics[isDeposit ? 2 : 3] as Hex);
      const amount = formatUnits(word(log.data, 0), product.assetDecimals);
      const shares = formatUnits(word(log.data, 1), shareDecimals);
      payload = `${head}"tx_hash":"${txHash}","block_number":${blockNumber},"log_index":${logIndex},"user_address":"${owner}","amount":"${amount}","shares":"${shares}","asset_symbol":${symbol},"occurred_at":"${occurredAt}"}`;
    } else if (topic0 === TOPICS.redeemRequested) {
      eventType = 'redeem.requested';
      // RedeemRequested(controller, owner, requestId | sender, shares)
      const readyAt = ctx.settlement.get(logKey(log));
      if (readyAt === undefined) throw new Error(`no settlement time for ${logKey(log)}`);
      const owner = address(log.topics[2] as Hex);
      const shares = formatUnits(word(log.data, 1), shareDecimals);
      // Compact 0x hex of the engine's uint256 request id (as JSON-RPC writes quantities).
      const requestId = numberToHex(hexToBigInt(log.topics[3] as Hex));
      const settlesAt = iso(readyAt === 0 ? header.timestamp : readyAt);
      payload = `${head}"tx_hash":"${txHash}","log_index":${logIndex},"user_address":"${owner}","shares":"${shares}","request_id":"${requestId}","estimated_settlement_at":"${settlesAt}","occurred_at":"${occurredAt}"}`;
    } else {
      continue;
    }
    out.push({
      partnerId: product.partnerId,
      environment: product.environment,
      productId: product.id,
      eventType,
      payload,
      occurredAt,
      chainId: ctx.chainId,
      blockNumber,
      blockHash,
      txHash,
      logIndex,
    });
  }
  return out;
}
