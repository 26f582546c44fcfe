/**
 * The pieces the indexer's completeness and finality rest on, against a real anvil:
 * - the logs bloom of real blocks: a block holding an engine's Deposit matches the engine's filter,
 *   an empty block and a block of another contract's logs do not;
 * - the confirmed block by depth, and by the node's `finalized` / `safe` tags (anvil keeps
 *   `finalized` two epochs of 32 slots under its head);
 * - CHAINS_FILE: depth 0 refused for a public chain id with an error that says what to set, allowed
 *   on a local one; `finality` accepted.
 */
import { type Hex, numberToHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHeader } from '../../src/chain/block-headers.ts';
import { bloomFilter } from '../../src/chain/bloom.ts';
import { ChainsFileError, parseChainsFile } from '../../src/chain/chains.ts';
import { confirmedBlock } from '../../src/chain/confirmed-head.ts';
import { engineLogFilter } from '../../src/sync/indexer/logs.ts';
import { engineWrite, type Fixture, newEngine, setupFixture, USD, USERS } from './helpers.ts';

let fx: Fixture;
beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

describe('logs bloom of real blocks', () => {
  it('matches the blocks with an engine log and no other', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const other = await newEngine(fx, fx.syncVault);
    const user = USERS[0]!;
    const { receipt } = await engineWrite(fx, engine, user, {
      fn: 'deposit',
      args: [5n * USD, user],
    });
    const { receipt: elsewhere } = await engineWrite(fx, other, user, {
      fn: 'deposit',
      args: [5n * USD, user],
    });
    await fx.rpc('evm_mine', []);
    const empty = BigInt((await fx.rpc('eth_blockNumber', [])) as Hex);
    const mayMatch = bloomFilter(engineLogFilter([engine]));
    const bloomOf = async (n: bigint) => (await getHeader(fx.client, n)).logsBloom!;
    expect(mayMatch(await bloomOf(receipt.blockNumber))).toBe(true);
    expect(mayMatch(await bloomOf(empty))).toBe(false);
    expect(mayMatch(await bloomOf(elsewhere.blockNumber))).toBe(false);
    // The other engine's own filter matches its block: the filter is the address and the topics.
    expect(bloomFilter(engineLogFilter([other]))(await bloomOf(elsewhere.blockNumber))).toBe(true);
  });
});

describe('confirmed block', () => {
  it('by depth, and by the finalized and safe tags', async () => {
    await fx.rpc('anvil_mine', [numberToHex(130)]);
    const head = BigInt((await fx.rpc('eth_blockNumber', [])) as Hex);
    expect(await confirmedBlock(fx.client, { confirmationDepth: 3 }, head)).toBe(head - 3n);
    const finalized = (await fx.rpc('eth_getBlockByNumber', ['finalized', false])) as {
      number: Hex;
    };
    const viaTag = await confirmedBlock(
      fx.client,
      { confirmationDepth: 0, finalityTag: 'finalized' },
      head,
    );
    expect(viaTag).toBe(BigInt(finalized.number));
    expect(viaTag).toBeLessThan(head);
    const safe = await confirmedBlock(
      fx.client,
      { confirmationDepth: 0, finalityTag: 'safe' },
      head,
    );
    expect(safe).toBeLessThanOrEqual(head);
    // A head seen lower than the tag (another node answered it) bounds the answer.
    expect(
      await confirmedBlock(fx.client, { confirmationDepth: 0, finalityTag: 'finalized' }, 5n),
    ).toBe(5n);
  });
});

describe('CHAINS_FILE finality', () => {
  const chain = (over: Record<string, unknown>) =>
    JSON.stringify([
      {
        chain_id: 8453,
        name: 'Base',
        rpc_urls: ['https://rpc.example'],
        block_range_limit: 2000,
        ...over,
      },
    ]);
  it('refuses depth 0 on a public chain and says what to set', () => {
    expect(() => parseChainsFile(chain({ confirmation_depth: 0 }))).toThrow(ChainsFileError);
    expect(() => parseChainsFile(chain({ confirmation_depth: 0 }))).toThrow(
      /at least 1 or "finality": "finalized"/,
    );
  });
  it('allows depth 0 on a local chain id', () => {
    const [c] = parseChainsFile(
      JSON.stringify([
        {
          chain_id: 31337,
          rpc_urls: ['http://127.0.0.1:8545'],
          confirmation_depth: 0,
          block_range_limit: 10,
        },
      ]),
    );
    expect(c?.confirmationDepth).toBe(0);
  });
  it('takes a finality tag instead of a depth, and refuses an unknown one', () => {
    const [c] = parseChainsFile(chain({ finality: 'finalized' }));
    expect(c?.finalityTag).toBe('finalized');
    expect(() => parseChainsFile(chain({ finality: 'latest' }))).toThrow(/"finalized" or "safe"/);
  });
});
