/**
 * Provider refusals read as what they are. Each row is a message a real provider sends (the source
 * is in the comment), with its JSON-RPC code or HTTP status; the classifier must say whether to
 * shrink the range (and to what, when the provider names a cap), or to back off.
 */
import { HttpRequestError, LimitExceededRpcError, RpcRequestError } from 'viem';
import { describe, expect, it } from 'vitest';
import { isRangeRejection, nextSpan, readLogRanges } from '../../src/chain/log-ranges.ts';
import { classifyProviderError } from '../../src/chain/provider-errors.ts';
import { isRetryable } from '../../src/worker/errors.ts';

/** A JSON-RPC error as viem raises it from a provider's answer. */
const rpcError = (code: number, message: string) =>
  new RpcRequestError({ body: {}, error: { code, message }, url: 'http://provider.test' });
/** An HTTP error status as viem raises it. */
const httpError = (status: number, details: string) =>
  new HttpRequestError({ status, details, url: 'http://provider.test' });

type Row = [source: string, err: unknown, expected: ReturnType<typeof classifyProviderError>];

const TABLE: Row[] = [
  // Span caps that name the cap: the next span is the cap itself.
  [
    'QuickNode',
    rpcError(-32614, 'eth_getLogs is limited to a 10,000 range'),
    { kind: 'range', maxBlocks: 10_000n },
  ],
  [
    'thirdweb',
    rpcError(-32602, 'Maximum allowed number of requested blocks is 500'),
    { kind: 'range', maxBlocks: 500n },
  ],
  [
    '(issue #27)',
    rpcError(-32602, 'ranges over 10000 blocks are not supported'),
    { kind: 'range', maxBlocks: 10_000n },
  ],
  [
    'Avalanche',
    rpcError(-32000, 'requested too many blocks from 0 to 5000, maximum is set to 2048'),
    { kind: 'range', maxBlocks: 2048n },
  ],
  ['Cloudflare', rpcError(-32047, 'Max range: 800'), { kind: 'range', maxBlocks: 800n }],
  [
    'Coinbase (Base)',
    rpcError(-32000, 'please limit the query to at most 1000 blocks'),
    { kind: 'range', maxBlocks: 1000n },
  ],
  [
    'PublicNode',
    rpcError(-32000, 'maximum block range: 50000'),
    { kind: 'range', maxBlocks: 50_000n },
  ],
  [
    'BlockPI',
    rpcError(-32000, 'eth_getLogs is limited to 1,024 block range'),
    { kind: 'range', maxBlocks: 1024n },
  ],
  [
    'Blast (paid)',
    rpcError(-32000, 'Requested range exceeds the range allowed for your plan (20000 > 5000).'),
    { kind: 'range', maxBlocks: 5000n },
  ],
  // Span caps without a number: halve.
  ['Base / OP Mainnet', rpcError(-32000, 'block range too large'), { kind: 'range' }],
  ['Ankr', rpcError(-32600, 'block range is too wide'), { kind: 'range' }],
  ['Chainstack', rpcError(-32000, 'Block range limit exceeded.'), { kind: 'range' }],
  // Too many results: halve, or the range the provider suggests.
  [
    'Alchemy',
    rpcError(
      -32602,
      'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x10, 0x29]',
    ),
    { kind: 'results', maxBlocks: 26n },
  ],
  [
    'Infura',
    rpcError(
      -32005,
      'query returned more than 10000 results. Try with this block range [0x10, 0x1f].',
    ),
    { kind: 'results', maxBlocks: 16n },
  ],
  [
    'Arbitrum',
    rpcError(-32000, 'logs matched by query exceeds limit of 10000'),
    { kind: 'results' },
  ],
  [
    'LlamaRPC',
    rpcError(-32000, 'query exceeds max results 20000, retry with the range 100-200'),
    { kind: 'results' },
  ],
  ['OP Mainnet', rpcError(-32000, 'backend response too large'), { kind: 'results' }],
  // Rate limits: back off, never shrink (the same code as a result cap at Infura).
  [
    'Infura',
    rpcError(-32005, 'daily request count exceeded, request rate limited'),
    { kind: 'rate_limit' },
  ],
  ['Infura', rpcError(-32005, 'project ID request rate exceeded'), { kind: 'rate_limit' }],
  [
    'Alchemy',
    httpError(
      429,
      'Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message.',
    ),
    { kind: 'rate_limit' },
  ],
  [
    'Alchemy (batch, HTTP 200)',
    rpcError(429, 'Your app has exceeded its compute units per second capacity.'),
    { kind: 'rate_limit' },
  ],
  [
    'QuickNode',
    rpcError(
      -32007,
      '100/second request limit reached - reduce calls per second or upgrade your account at quicknode.com',
    ),
    { kind: 'rate_limit' },
  ],
  [
    'EIP-1474, bare',
    new LimitExceededRpcError(rpcError(-32005, 'limit exceeded')),
    { kind: 'rate_limit' },
  ],
  ['any', httpError(429, 'Too Many Requests'), { kind: 'rate_limit' }],
  // Unavailable: back off.
  [
    'Base',
    rpcError(-32011, 'no backend is currently healthy to serve traffic'),
    { kind: 'unavailable' },
  ],
  ['any', httpError(503, 'Service Unavailable'), { kind: 'unavailable' }],
  ['any', httpError(502, 'Bad Gateway'), { kind: 'unavailable' }],
  // Not a refusal at all.
  ['anvil', rpcError(3, 'execution reverted'), undefined],
];

describe('provider refusals', () => {
  it.each(TABLE)('%s: %s', (_source, err, expected) => {
    expect(classifyProviderError(err)).toEqual(expected);
    const shrink = expected?.kind === 'range' || expected?.kind === 'results';
    expect(isRangeRejection(err)).toBe(shrink);
    // Rate limits and outages are retried later by the job runner's backoff.
    if (expected?.kind === 'rate_limit' || expected?.kind === 'unavailable') {
      expect(isRetryable(err)).toBe(true);
    }
  });

  it('asks for the named cap at once instead of halving down to it', async () => {
    const asked: string[] = [];
    const cap = 500n;
    const read = async (from: bigint, to: bigint) => {
      asked.push(`${from}-${to}`);
      if (to - from + 1n > cap)
        throw rpcError(-32602, 'Maximum allowed number of requested blocks is 500');
      return [from];
    };
    const got = await readLogRanges(1n, 2000n, 2000n, read);
    expect(got).toEqual([1n, 501n, 1001n, 1501n]);
    expect(asked).toEqual([
      '1-2000',
      '1-500',
      '501-2000',
      '501-1000',
      '1001-2000',
      '1001-1500',
      '1501-2000',
    ]);
    expect(nextSpan(rpcError(-32000, 'block range too large'), 1n, 100n)).toBe(50n);
    expect(nextSpan(rpcError(-32602, 'Max range: 800'), 1n, 100n)).toBe(50n); // cap above the span: halve
  });
});
