/**
 * The API's bounded caches (src/http/bounded-lru.ts): least recently used out past the bound, TTLs
 * kept, and memory that grows with the entries rather than with the bound (lru-cache's `max`
 * allocates every slot up front: about 2 MB for a 50,000-entry cache with a TTL).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { boundedLru } from '../../src/http/bounded-lru.ts';
import { createMemoryCounter } from '../../src/http/fixed-window.ts';
import { createTtlCache } from '../../src/http/ttl-cache.ts';

describe('boundedLru', () => {
  it('keeps at most maxEntries, dropping the least recently used', () => {
    const lru = boundedLru<string, number>(3);
    for (const k of ['a', 'b', 'c']) lru.set(k, 1);
    expect(lru.get('a')).toBe(1); // a is now the most recently used
    lru.set('d', 1);
    expect([...lru.keys()].sort()).toEqual(['a', 'c', 'd']);
    for (let i = 0; i < 100; i++) lru.set(`k${i}`, i);
    expect(lru.size).toBe(3);
    expect([...lru.keys()].sort()).toEqual(['k97', 'k98', 'k99']);
  });

  it('expires entries after their TTL', async () => {
    const lru = boundedLru<string, number>(10, { ttl: 30 });
    lru.set('a', 1);
    expect(lru.get('a')).toBe(1);
    await sleep(60);
    expect(lru.get('a')).toBeUndefined();
  });

  it('an empty cache with a large bound costs next to nothing', () => {
    const keep: unknown[] = [];
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 20; i++) {
      keep.push(boundedLru(50_000, { ttl: 5_000 }), createTtlCache(5_000), createMemoryCounter());
    }
    const grown = process.memoryUsage().heapUsed - before;
    // Preallocated, the 60 caches would hold ~100 MB of slot arrays; growing, a few hundred KB.
    expect(keep).toHaveLength(60);
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });

  it('a TTL cache shares one load between close requests and forgets failures', async () => {
    const cache = createTtlCache<number>(1_000, 2);
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('a', load), cache.get('a', load)])).toEqual([1, 1]);
    await expect(
      cache.get('b', async () => Promise.reject(new Error('rpc down'))),
    ).rejects.toThrow();
    expect(await cache.get('b', load)).toBe(2);
    await cache.get('c', load); // bound 2: a (least recently used) goes
    expect(await cache.get('a', load)).toBe(4);
  });
});
