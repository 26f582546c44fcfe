/**
 * buildEvents writes payload text field by field; these tests hold it to JSON.stringify of the
 * spec's objects (same keys, same order, same escaping) for every event type, including product
 * strings that need escaping, and check what it refuses from a broken node.
 */
import { encodeAbiParameters, getAddress, type Hex, numberToHex, pad } from 'viem';
import { describe, expect, it } from 'vitest';
import type { Header } from '../../src/chain/block-headers.ts';
import type { Product } from '../../src/db/products.ts';
import { type BuildContext, buildEvents, logKey } from '../../src/sync/indexer/events.ts';
import { type RawLog, TOPICS } from '../../src/sync/indexer/logs.ts';

const ENGINE = '0x00000000000000000000000000000000000000e1' as Hex;
const SENDER = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' as Hex;
const OWNER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc' as Hex;
const BLOCK = 1234n;
const TIME = 1_700_000_123;
const BLOCK_HASH = `0x${'ab'.repeat(32)}` as Hex;
const TX = `0x${'cd'.repeat(32)}` as Hex;

function product(over: Partial<Product> = {}): Product {
  return {
    id: 'prd_1',
    partnerId: 'ptn_1',
    partnerName: 'Acme',
    environment: 'live',
    slug: 'acme-usdc',
    displayName: 'Acme USDC',
    riskLabel: 'low',
    chainId: 31337,
    status: 'active',
    vaultKind: 'async',
    engineAddress: ENGINE,
    engineName: 'E',
    engineSymbol: 'E',
    shareDecimals: 12,
    underlyingVaultAddress: ENGINE,
    assetAddress: ENGINE,
    assetSymbol: 'USDC',
    assetDecimals: 6,
    serviceFeeBps: 500,
    partnerFeeBps: 1000,
    serviceFeeRecipient: ENGINE,
    partnerFeeRecipient: ENGINE,
    usdPrice: null,
    deployedBlock: 1n,
    deployedAt: new Date(0),
    operatorPaused: false,
    chainPaused: false,
    upstreamHalted: false,
    deployTxHash: null,
    statusChangedAt: new Date(0),
    ...over,
  };
}

const topic = (address: Hex) => pad(address, { size: 32 });
const words = (...values: bigint[]) =>
  encodeAbiParameters(
    values.map(() => ({ type: 'uint256' })),
    values,
  );

function rawLog(over: Partial<RawLog>): RawLog {
  return {
    address: ENGINE,
    topics: [TOPICS.deposit, topic(SENDER), topic(OWNER)],
    data: words(1_500_000n, 1_500_000_000_000n),
    blockNumber: numberToHex(BLOCK),
    blockHash: BLOCK_HASH,
    transactionHash: TX,
    logIndex: '0x7',
    ...over,
  };
}

function context(p: Product, settlement = new Map<string, number>()): BuildContext {
  const header: Header = {
    number: BLOCK,
    hash: BLOCK_HASH,
    parentHash: BLOCK_HASH,
    timestamp: TIME,
  };
  return {
    chainId: 31337,
    engines: new Map([[ENGINE, p]]),
    headers: new Map([[BLOCK, header]]),
    settlement,
  };
}

const ISO = new Date(TIME * 1000).toISOString().replace('.000Z', 'Z');

/** A deposit.confirmed / redeem.confirmed payload in the spec's key order (overrides keep it). */
const confirmedPayload = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    slug: 'acme-usdc',
    chain_id: 31337,
    tx_hash: TX,
    block_number: Number(BLOCK),
    log_index: 7,
    user_address: getAddress(OWNER),
    amount: '1.5',
    shares: '1.5',
    asset_symbol: 'USDC',
    occurred_at: ISO,
    ...over,
  });

describe('buildEvents', () => {
  // Product strings come from operators and the chain: quotes, backslashes, control characters and
  // non-ASCII must come out exactly as JSON.stringify writes them.
  const symbols = ['USDC', 'U"S\\D\tC\n', 'ÉUR✓', '</script>', '\u0000\u001f'];

  it.each(symbols)(
    'deposit payload equals JSON.stringify of the spec object (symbol %j)',
    (sym) => {
      const p = product({ assetSymbol: sym });
      const [e] = buildEvents([rawLog({})], context(p));
      expect(e?.eventType).toBe('deposit.confirmed');
      expect(e?.payload).toBe(confirmedPayload({ asset_symbol: sym }));
      expect(JSON.parse(e?.payload ?? '')).toMatchObject({ asset_symbol: sym });
    },
  );

  it('withdraw gives redeem.confirmed with the owner (third topic) as user', () => {
    const log = rawLog({
      topics: [TOPICS.withdraw, topic(SENDER), topic(SENDER), topic(OWNER)],
      data: words(2n, 3_000_000n),
    });
    const [e] = buildEvents([log], context(product()));
    expect(e?.eventType).toBe('redeem.confirmed');
    expect(e?.payload).toBe(confirmedPayload({ amount: '0.000002', shares: '0.000003' }));
  });

  it('redeem.requested carries the request id and the settlement time', () => {
    const log = rawLog({
      topics: [TOPICS.redeemRequested, topic(SENDER), topic(OWNER), pad('0x2a', { size: 32 })],
      data: words(BigInt(`0x${SENDER.slice(2)}`), 5_000_000_000_000n),
    });
    const settles = TIME + 3600;
    const [e] = buildEvents([log], context(product(), new Map([[logKey(log), settles]])));
    expect(e?.payload).toBe(
      JSON.stringify({
        slug: 'acme-usdc',
        chain_id: 31337,
        tx_hash: TX,
        log_index: 7,
        user_address: getAddress(OWNER),
        shares: '5',
        request_id: '0x2a',
        estimated_settlement_at: new Date(settles * 1000).toISOString().replace('.000Z', 'Z'),
        occurred_at: ISO,
      }),
    );
    // Zero from claimableAt: claimable at once, i.e. at the block's time.
    const [now] = buildEvents([log], context(product(), new Map([[logKey(log), 0]])));
    expect(JSON.parse(now?.payload ?? '').estimated_settlement_at).toBe(ISO);
  });

  it('skips removed logs, other contracts and other topics', () => {
    const logs = [
      rawLog({ removed: true }),
      rawLog({ address: `0x${'99'.repeat(20)}` }),
      rawLog({ topics: [`0x${'00'.repeat(32)}`] }),
    ];
    expect(buildEvents(logs, context(product()))).toEqual([]);
  });

  it('lowercases a hash given in upper case and refuses what is not a 32-byte hash', () => {
    const upper = `0x${'CD'.repeat(32)}` as Hex;
    expect(buildEvents([rawLog({ transactionHash: upper })], context(product()))[0]?.txHash).toBe(
      TX,
    );
    for (const bad of [`0x${'cd'.repeat(31)}`, `0x${'cd'.repeat(31)}\tx`, `${TX}"`]) {
      expect(() =>
        buildEvents([rawLog({ transactionHash: bad as Hex })], context(product())),
      ).toThrow(/malformed transaction hash/);
    }
    expect(() => buildEvents([rawLog({ logIndex: '7' as Hex })], context(product()))).toThrow(
      /malformed log index/,
    );
  });
});
