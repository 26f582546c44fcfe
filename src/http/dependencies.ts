/**
 * Dependency wiring: the repositories the routes read through, built once per app. Reads of
 * products, snapshots, keys and inbound secrets go through one cache that the database's
 * read-model version invalidates (see read-cache.ts), so the hot path does no database round trip.
 * The chain clients may arrive after the server listens; until then chain reads answer 503.
 */
import type { ChainClient } from '../chain/client.ts';
import { apiKeyDigest } from '../db/api-key-material.ts';
import {
  type ApiKeyRecord,
  type ApiKeysRepo,
  type CachedKeyLookup,
  createApiKeysRepo,
  createApiKeyUsage,
  keyWorks,
} from '../db/api-keys.ts';
import type { Database } from '../db/client.ts';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import { createProductsRepo, type Environment, type ProductsRepo } from '../db/products.ts';
import { createSnapshotReads, type SnapshotReads } from '../db/snapshot-reads.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { type ChainReader, createChainReader } from './chain-reader.ts';
import { createReadCache, type ReadCache } from './read-cache.ts';

export type ChainEntries = ReadonlyArray<{
  chainId: number;
  name: string;
  evm: boolean;
  client: ChainClient;
}>;

export interface WiringOptions {
  db: Database;
  chains?: ChainEntries | Promise<ChainEntries> | undefined;
  chainReads?: { timeoutMs?: number; cacheMs?: number; headMs?: number } | undefined;
  readCache?: { pollMs?: number } | undefined;
  secretBox?: SecretBox | undefined;
}

/**
 * - `starting`: the chains have not arrived yet; chain-backed endpoints answer 503.
 * - `failed`: the chain runtime failed to start; chain-backed endpoints answer 503.
 * - `ok`: the clients are in place (an RPC may still fail a given read: that is per request).
 * - `not_configured`: this app was built without chains (tests, tools).
 */
export type ChainRuntimeState = 'starting' | 'failed' | 'ok' | 'not_configured';

export interface ApiDependencies {
  cache: ReadCache;
  products: ProductsRepo;
  snapshots: SnapshotReads;
  keys: ApiKeysRepo & CachedKeyLookup;
  /** Absent without a secret box: every inbound request is then refused. */
  inboundSecrets: ReturnType<typeof cachedInboundSecrets>;
  chain: ChainReader;
  clientFor: (chainId: number) => ChainClient | undefined;
  chainName: (chainId: number) => string;
  /** Whether chain reads can be served: the chain runtime is up (readiness reports it). */
  chainRuntime: () => ChainRuntimeState;
  /** Stops the cache's polling. */
  close: () => Promise<void>;
}

/** What the snapshot-backed routes (apy-history, fee-stats) read through. */
export type SnapshotRouteDeps = Pick<ApiDependencies, 'cache' | 'products' | 'snapshots'> & {
  /** The clock the routes' default windows end at (tests fix it). */
  now?: () => Date;
};

function cachedInboundSecrets(cache: ReadCache, db: Database, secretBox: SecretBox | undefined) {
  if (!secretBox) return undefined;
  // A rotation bumps the read-model version, so the new secret applies within the cache's poll;
  // entries are keyed by partner, never by a secret.
  const repo = createInboundSecretsRepo(db, secretBox);
  return {
    keys: (partnerId: string, environment: Environment) =>
      cache.get(`inbound_secret:${partnerId}:${environment}`, () =>
        repo.keys(partnerId, environment),
      ),
  };
}

export function wireDependencies(options: WiringOptions): ApiDependencies {
  const { db } = options;
  const cache = createReadCache(db, options.readCache);

  const productsRepo = createProductsRepo(db);
  const products: ProductsRepo = {
    ...productsRepo,
    getBySlug: (slug) => cache.get(`slug:${slug}`, () => productsRepo.getBySlug(slug)),
    listForPartner: (partnerId, env) =>
      cache.get(`list:${partnerId}:${env}`, () => productsRepo.listForPartner(partnerId, env)),
  };

  const reads = createSnapshotReads(db);
  const snapshots: SnapshotReads = {
    latestFor: (ids) => cache.get(`latest:${ids.join(',')}`, () => reads.latestFor(ids)),
    latestFinalDate: (id) => cache.get(`final:${id}`, () => reads.latestFinalDate(id)),
    latestNetApy: (id) => cache.get(`apy:${id}`, () => reads.latestNetApy(id)),
    latestRealisedNetApy: (id, days) =>
      cache.get(`apy${days}d:${id}`, () => reads.latestRealisedNetApy(id, days)),
    apyHistory: (id, from, to) =>
      cache.get(`history:${id}:${from}:${to}`, () => reads.apyHistory(id, from, to)),
    feeStats: (id, from, to) =>
      cache.get(`fees:${id}:${from}:${to}`, () => reads.feeStats(id, from, to)),
  };

  const keysRepo = createApiKeysRepo(db);
  // "Last used" for the portal's key list: at most one write a minute per key, off the hot path.
  const keyUsage = createApiKeyUsage(db);
  // Keyed by the key's hash: the cache never holds a secret as a map key.
  const keys: ApiKeysRepo & CachedKeyLookup = {
    ...keysRepo,
    findByKey: async (key) => {
      const record = await cache.get(`key:${apiKeyDigest(key)}`, () => keysRepo.findByKey(key));
      if (record && keyWorks(record)) keyUsage.touch(record.id);
      return record;
    },
    cachedByKey: (key) => {
      const cached = cache.peek<ApiKeyRecord | undefined>(`key:${apiKeyDigest(key)}`);
      const record = cached?.value;
      if (record && keyWorks(record)) keyUsage.touch(record.id);
      return cached;
    },
  };

  // The chains may start after the server listens (a fresh local chain takes seconds): the maps
  // fill when they are up, and until then chain reads answer 503 chain_rpc_unavailable.
  const clients = new Map<number, ChainClient>();
  const nonEvmChains = new Set<number>();
  const names = new Map<number, string>();
  let chainRuntime: ChainRuntimeState = options.chains ? 'starting' : 'not_configured';
  Promise.resolve(options.chains ?? []).then(
    (chains) => {
      if (options.chains) chainRuntime = 'ok';
      for (const c of chains) {
        clients.set(c.chainId, c.client);
        names.set(c.chainId, c.name);
        if (!c.evm) nonEvmChains.add(c.chainId);
      }
      cache.invalidate(); // cached bodies may name a chain by its placeholder
    },
    () => {
      // The service logs why; readiness reports it.
      chainRuntime = 'failed';
    },
  );
  const chain = createChainReader({ ...options.chainReads, clients, nonEvmChains });

  return {
    cache,
    products,
    snapshots,
    keys,
    inboundSecrets: cachedInboundSecrets(cache, db, options.secretBox),
    chain,
    clientFor: (chainId) => clients.get(chainId),
    chainName: (id) => names.get(id) ?? `chain-${id}`,
    chainRuntime: () => chainRuntime,
    close: async () => cache.close(),
  };
}
