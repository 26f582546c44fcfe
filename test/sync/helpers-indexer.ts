/**
 * Fixtures for the log indexer tests: products over engines deployed on the test anvil, an indexer
 * wired to a database, and a loopback JSON-RPC proxy that is a real failure injector (it can go down
 * like a dead provider, and reject wide eth_getLogs spans the way hosted providers do).
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Address, Hex } from 'viem';
import type { ChainSettings } from '../../src/chain/chains.ts';
import { createChainClient } from '../../src/chain/client.ts';
import type { Database } from '../../src/db/client.ts';
import { createEventsRepo, type StoredEvent } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product, type VaultKind } from '../../src/db/products.ts';
import type { Logger } from '../../src/logger.ts';
import { createIndexer, type IndexerDeps } from '../../src/sync/indexer.ts';
import { type Fixture, mineBlock, newEngine, PARTNER, SERVICE } from '../chain/helpers.ts';

let slugSeq = 0;

/** Deploys an engine over the sync or async vault; returns it with its deployment block. */
export async function deployTestEngine(
  fx: Fixture,
  kind: VaultKind,
): Promise<{ engine: Address; block: bigint }> {
  const before = await fx.client.getBlockNumber({ cacheTime: 0 });
  const engine = await newEngine(fx, kind === 'sync' ? fx.syncVault : fx.asyncVault);
  // newEngine deploys with automine on: the deployment is the block after `before`.
  return { engine, block: before + 1n };
}

/** Records a deployed engine as an active product of partner Acme. */
export async function registerProduct(
  fx: Fixture,
  db: Database,
  kind: VaultKind,
  deployed: { engine: Address; block: bigint },
  slug = `p-${kind}-${++slugSeq}`,
): Promise<Product> {
  const partners = createPartnersRepo(db);
  const partner = (await partners.findByName('Acme')) ?? (await partners.create('Acme'));
  return createProductsRepo(db).create({
    partnerId: partner.id,
    environment: 'live',
    slug,
    displayName: 'P',
    riskLabel: 'low',
    chainId: fx.anvil.chainId,
    vaultKind: kind,
    engineName: 'Engine',
    engineSymbol: 'yE',
    underlyingVaultAddress: kind === 'sync' ? fx.syncVault : fx.asyncVault,
    assetAddress: fx.asset,
    assetSymbol: 'TUSD',
    assetDecimals: 6,
    serviceFeeBps: 500,
    partnerFeeBps: 1000,
    serviceFeeRecipient: SERVICE,
    partnerFeeRecipient: PARTNER,
    deployed: {
      engineAddress: deployed.engine,
      shareDecimals: 12,
      block: deployed.block,
      at: new Date(),
      status: 'active',
    },
  });
}

export async function engineProduct(
  fx: Fixture,
  db: Database,
  kind: VaultKind,
): Promise<{ engine: Address; product: Product }> {
  const deployed = await deployTestEngine(fx, kind);
  return { engine: deployed.engine, product: await registerProduct(fx, db, kind, deployed) };
}

export function chainSettings(fx: Fixture, rpcUrls = [fx.anvil.rpcUrl]): ChainSettings {
  return {
    chainId: fx.anvil.chainId,
    name: 'test',
    rpcUrls,
    confirmationDepth: 2,
    blockRangeLimit: 10_000,
    evm: true,
  };
}

export function makeIndexer(
  fx: Fixture,
  db: Database,
  logger: Logger,
  over: Partial<IndexerDeps> & { rpcUrls?: string[] } = {},
) {
  const { rpcUrls, ...rest } = over;
  const chain = rest.chain ?? chainSettings(fx, rpcUrls);
  return createIndexer({
    db,
    logger,
    chain,
    client: createChainClient(chain, { timeoutMs: 5_000 }),
    holder: 'worker-a',
    ...rest,
  });
}

export async function mine(fx: Fixture, blocks: number): Promise<void> {
  for (let i = 0; i < blocks; i++) await mineBlock(fx);
}

export async function storedEvents(db: Database, eventType?: string): Promise<StoredEvent[]> {
  return createEventsRepo(db).list(eventType ? { eventType } : {});
}

export interface RpcProxy {
  url: string;
  /** Down: the port refuses connections (open sockets are cut), like a dead provider. */
  setDown(down: boolean): Promise<void>;
  /** Reject eth_getLogs spanning more than `blocks` blocks (null: accept all). */
  setMaxLogSpan(blocks: number | null): void;
  /** Spans (toBlock − fromBlock + 1) of every eth_getLogs seen, accepted or not. */
  readonly spans: number[];
  close(): Promise<void>;
}

interface JsonRpcRequest {
  id: number | string;
  method: string;
  params?: unknown[];
}

export async function startRpcProxy(target: string): Promise<RpcProxy> {
  let maxSpan: number | null = null;
  const spans: number[] = [];
  const sockets = new Set<Socket>();
  const reject = (req: JsonRpcRequest) => {
    if (req.method !== 'eth_getLogs') return undefined;
    const f = (req.params?.[0] ?? {}) as { fromBlock?: Hex; toBlock?: Hex };
    if (!f.fromBlock || !f.toBlock) return undefined;
    const span = Number(BigInt(f.toBlock) - BigInt(f.fromBlock)) + 1;
    spans.push(span);
    if (maxSpan === null || span <= maxSpan) return undefined;
    // The wording of a hosted provider's refusal; the indexer recognises it by the message.
    return {
      jsonrpc: '2.0',
      id: req.id,
      error: {
        code: -32602,
        message: `block range too large: at most ${maxSpan} blocks per query`,
      },
    };
  };
  const handler = async (body: string): Promise<string> => {
    const parsed = JSON.parse(body) as JsonRpcRequest | JsonRpcRequest[];
    const list = Array.isArray(parsed) ? parsed : [parsed];
    const answers = list.map(reject);
    const forward = list.filter((_, i) => !answers[i]);
    if (forward.length > 0) {
      const res = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(forward),
      });
      const got = (await res.json()) as { id: number | string }[];
      const byId = new Map(got.map((g) => [g.id, g]));
      list.forEach((r, i) => {
        answers[i] ??= byId.get(r.id) as never;
      });
    }
    return JSON.stringify(Array.isArray(parsed) ? answers : answers[0]);
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      handler(body).then(
        (out) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(out);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let listening = true;
  const stopListening = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    setMaxLogSpan(blocks) {
      maxSpan = blocks;
    },
    async setDown(down) {
      if (down && listening) {
        listening = false;
        await stopListening();
      } else if (!down && !listening) {
        listening = true;
        await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
      }
    },
    async close() {
      if (listening) {
        listening = false;
        await stopListening();
      }
    },
  };
}
