/**
 * Provider keys in RPC URLs never reach a log line. The URL forms are those providers hand out; the
 * integration case runs the indexer's job against a provider URL carrying a key (first a port that
 * refuses, then a provider answering 503), so viem's errors, which quote the URL in `url`,
 * `message`, `details` and `metaMessages`, go through the real logger; the test greps every line.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChainsFile } from '../../src/chain/chains.ts';
import { createChainClient } from '../../src/chain/client.ts';
import { createIndexer } from '../../src/sync/indexer.ts';
import { redactUrl, registerUrlSecrets, scrubSecrets } from '../../src/url-secrets.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';
import { engineProduct } from '../sync/helpers-indexer.ts';
import { type Fixture, setupFixture } from './helpers.ts';

describe('URL secrets', () => {
  it.each([
    [
      'https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161',
      ['9aa3d95b3bc440fa88ea12eaa4456161'],
      'https://mainnet.infura.io/v3/[redacted]',
    ],
    [
      'https://eth-mainnet.g.alchemy.com/v2/Zx8Ab_Cd-12Ef34Gh56Ij78Kl90',
      ['Zx8Ab_Cd-12Ef34Gh56Ij78Kl90'],
      'https://eth-mainnet.g.alchemy.com/v2/[redacted]',
    ],
    [
      'https://rpc.ankr.com/eth/4f7a9e0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f',
      ['4f7a9e0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f'],
      'https://rpc.ankr.com/eth/[redacted]',
    ],
    [
      'https://old-wild-sea.base-mainnet.quiknode.pro/0123456789abcdef0123456789abcdef01234567/',
      ['0123456789abcdef0123456789abcdef01234567'],
      'https://old-wild-sea.base-mainnet.quiknode.pro/[redacted]/',
    ],
    [
      'https://base.provider.example/rpc?apikey=sk_live_abcdef123456&network=base',
      ['sk_live_abcdef123456'],
      'https://base.provider.example/rpc?apikey=[redacted]&network=base',
    ],
    [
      'https://user:s3cr3t-passw0rd@node.example/',
      ['s3cr3t-passw0rd'],
      'https://user:[redacted]@node.example/',
    ],
  ])('%s', (url, secrets, shown) => {
    const found = registerUrlSecrets(url);
    for (const s of secrets) expect(found).toContain(s);
    expect(redactUrl(url)).toBe(shown);
    for (const s of secrets) expect(scrubSecrets(`{"msg":"failed: ${url}"}`)).not.toContain(s);
  });
});

describe('no RPC key in any log line', () => {
  let fx: Fixture;
  let t: TestDatabase;
  beforeAll(async () => {
    fx = await setupFixture();
    t = await freshDatabase('pglite');
  });
  afterAll(async () => {
    await t?.drop();
    await fx?.stop();
  });

  it('indexer errors against a keyed URL are logged without the key', async () => {
    const key = 'e3b0c44298fc1c149afbf4c8996fb924';
    // A provider that answers 503 on its keyed path (viem puts the URL in the error it raises).
    const server = createServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('Service Unavailable');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const [chain] = parseChainsFile(
      JSON.stringify([
        {
          chain_id: fx.anvil.chainId,
          name: 'keyed',
          rpc_urls: [
            `http://127.0.0.1:${port}/v3/${key}`,
            `http://127.0.0.1:1/v2/${key}?apikey=${key}x`,
          ],
          confirmation_depth: 2,
          block_range_limit: 1000,
        },
      ]),
    );
    await engineProduct(fx, t.db, 'sync');
    const { logger, lines } = captureLogger('debug');
    const indexer = createIndexer({
      db: t.db,
      logger,
      chain: chain!,
      client: createChainClient(chain!, { timeoutMs: 2_000, retryCount: 0 }),
      holder: 'keyed',
    });
    const job = indexer.job(50);
    job.start();
    try {
      await waitFor(
        async () =>
          lines().filter((l) => /"level":(40|50)/.test(l)).length >= 2 ? true : undefined,
        20_000,
        'failed rounds logged',
      );
    } finally {
      await job.stop();
      await new Promise<void>((r) => server.close(() => r()));
    }
    const all = lines().join('\n');
    expect(all).toContain('[redacted]'); // the URL was there, without its key
    expect(all).not.toContain(key);
    expect(all).toContain('127.0.0.1:1/v2/[redacted]?apikey=[redacted]');
  });
});
