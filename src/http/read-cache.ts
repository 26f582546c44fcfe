/**
 * The API's read cache. Entries are tagged with the read-model version (data_versions, bumped by
 * database triggers on every visible change to products, snapshots and keys); a background poll
 * reads that one row every `pollMs`, and an entry from an older version is never served. So a
 * status change, a new snapshot or a revoked key reaches every API process within `pollMs`, and
 * the request path itself does no database round trip for cached reads.
 */
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/client.ts';
import { readModelVersion } from '../db/snapshot-reads.ts';
import { readCacheLookups } from '../telemetry/metrics.ts';
import { boundedLru } from './bounded-lru.ts';
import { acceptsGzip, MIN_GZIP_BYTES } from './content-encoding.ts';

// Counted as plain numbers, read when /metrics is scraped (src/telemetry/metrics.ts).
const counts = readCacheLookups;

const gzip = promisify(gzipCallback);

export interface ReadCache {
  /** The cached value for key at the current version, or load() stored under it. */
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
  /**
   * The value cached for key at the current version once its load has answered, without a promise
   * (`{ value }`, since undefined is a value a load may answer); undefined when there is none yet.
   * The hot path of every partner request (its key) answers from it synchronously (#33 item 7).
   */
  peek<T>(key: string): { value: T } | undefined;
  /** Reads the version now (tests; the poll does it in the background). */
  refresh(): Promise<void>;
  /** Drops every entry: for a change the database does not see (the chains coming up). */
  invalidate(): void;
  /**
   * A number that changes whenever what the cache answers may change: a new read-model version,
   * the database unreachable, invalidate(). An answer built from the cache's values at one
   * generation is the route's answer for as long as the generation stays (held answers,
   * src/http/held-answers.ts).
   */
  generation(): number;
  close(): void;
}

export function createReadCache(
  db: Queryable,
  options: { pollMs?: number; maxEntries?: number } = {},
): ReadCache {
  const pollMs = options.pollMs ?? 1000;
  const maxEntries = options.maxEntries ?? 20_000;
  // Unknown until the first poll answers: nothing is cached before then.
  let version: string | undefined;
  let generation = 0;
  // Least recently used entries make room for new ones past maxEntries (bounded-lru.ts).
  const entries = boundedLru<
    string,
    { version: string; value: Promise<unknown>; settled?: { value: unknown } }
  >(maxEntries);

  async function refresh() {
    const next = await readModelVersion(db);
    if (next !== version) {
      version = next;
      generation++;
      entries.clear();
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const poll = () => {
    refresh()
      .catch(() => {
        // The database is unreachable: serve nothing from the cache until it answers again.
        version = undefined;
        generation++;
        entries.clear();
      })
      .finally(() => {
        if (!closed) timer = setTimeout(poll, pollMs).unref();
      });
  };
  poll();

  return {
    get<T>(key: string, load: () => Promise<T>): Promise<T> {
      const at = version;
      if (at === undefined) {
        counts.miss++;
        return load();
      }
      const hit = entries.get(key);
      if (hit && hit.version === at) {
        counts.hit++;
        return hit.value as Promise<T>;
      }
      counts.miss++;
      const value = load();
      const entry: { version: string; value: Promise<unknown>; settled?: { value: unknown } } = {
        version: at,
        value,
      };
      entries.set(key, entry);
      value.then(
        (answered) => {
          entry.settled = { value: answered };
        },
        () => {
          if (entries.get(key)?.value === value) entries.delete(key);
        },
      );
      return value;
    },
    peek<T>(key: string): { value: T } | undefined {
      const at = version;
      if (at === undefined) return undefined;
      const hit = entries.get(key);
      if (hit?.settled === undefined || hit.version !== at) return undefined;
      counts.hit++;
      return hit.settled as { value: T };
    },
    refresh,
    invalidate() {
      generation++;
      entries.clear();
    },
    generation: () => generation,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

/** A cached answer: its UTF-8 JSON bytes, and their gzip once a client asked for it. */
interface CachedBody {
  readonly identity: Buffer;
  /** The gzip, compressing or done; `gzipped` once it is done, so a hit can send it at once. */
  gzip?: Promise<Buffer>;
  gzipped?: Buffer;
}

/**
 * Sends the JSON body cached under `key`, building and serialising it only on a miss: list
 * endpoints then cost one lookup per request instead of formatting hundreds of amounts. The body is
 * cached as UTF-8 bytes, so a hit does not even re-encode it (a 365-day fee-stats body is ~90 KB),
 * and it is the same bytes the route's schema serialiser would produce (the tests check every
 * response against the OpenAPI document). A client that accepts gzip gets those bytes gzipped, also
 * once per entry (see content-encoding.ts).
 *
 * A body the cache already holds is sent at once and nothing is returned: no promise and no
 * microtask on the most common path of the read endpoints (#33 item 7). Otherwise the returned
 * promise settles once the body is sent (or rejects with the build's error). A route handler
 * returns what this returns: Fastify waits for a promise, and a handler that has sent returns none.
 */
export function sendCachedJson(
  cache: ReadCache,
  request: FastifyRequest,
  reply: FastifyReply,
  key: string,
  build: () => Promise<unknown>,
): Promise<void> | undefined {
  return sendCachedJsonText(cache, request, reply, key, async () => JSON.stringify(await build()));
}

/**
 * sendCachedJson for a body the route renders as JSON text itself (the events feed splices in each
 * event's stored payload text as it is, so the feed carries the very bytes a webhook sends).
 */
export function sendCachedJsonText(
  cache: ReadCache,
  request: FastifyRequest,
  reply: FastifyReply,
  key: string,
  build: () => Promise<string>,
): Promise<void> | undefined {
  const cacheKey = `body:${key}`;
  const held = cache.peek<CachedBody>(cacheKey);
  if (held && sendHeld(held.value, request, reply)) return undefined;
  return cache
    .get<CachedBody>(cacheKey, async () => ({ identity: Buffer.from(await build(), 'utf8') }))
    .then((body) => sendCompressing(body, request, reply));
}

const wantsGzip = (body: CachedBody, request: FastifyRequest) =>
  body.identity.length >= MIN_GZIP_BYTES && acceptsGzip(request.headers['accept-encoding']);

function sendHeaders(reply: FastifyReply) {
  // The answer depends on Accept-Encoding: shared caches must key on it.
  reply.header('vary', 'accept-encoding');
  reply.type('application/json; charset=utf-8');
}

/** Sends a held body if it can be sent now (false: its gzip is wanted and not ready yet). */
function sendHeld(body: CachedBody, request: FastifyRequest, reply: FastifyReply): boolean {
  if (!wantsGzip(body, request)) {
    sendHeaders(reply);
    reply.send(body.identity);
    return true;
  }
  if (!body.gzipped) return false;
  sendHeaders(reply);
  reply.header('content-encoding', 'gzip').send(body.gzipped);
  return true;
}

/** Sends a body, compressing it first (once per entry) when the client takes gzip. */
async function sendCompressing(
  body: CachedBody,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  sendHeaders(reply);
  if (wantsGzip(body, request)) {
    body.gzip ??= gzip(body.identity).then((compressed) => {
      body.gzipped = compressed;
      return compressed;
    });
    const compressed = await body.gzip.catch(() => undefined);
    if (compressed) {
      reply.header('content-encoding', 'gzip').send(compressed);
      return;
    }
  }
  reply.send(body.identity);
}
