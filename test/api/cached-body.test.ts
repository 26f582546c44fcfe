/**
 * sendCachedJsonText: a body the read cache holds is sent at once, with no promise (the hot path of
 * the list endpoints, #33 item 7); a miss builds it once and answers through a promise; a client
 * that takes gzip gets the compressed bytes, built once per entry and then also sent at once.
 */
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadCache, type ReadCache, sendCachedJsonText } from '../../src/http/read-cache.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

describe('sendCachedJsonText', () => {
  let t: TestDatabase;
  let cache: ReadCache;
  const app = Fastify();
  let builds = 0;
  let failBuild = false;
  const returned: string[] = [];
  const body = JSON.stringify({ success: true, data: 'x'.repeat(4000) });

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    cache = createReadCache(t.db, { pollMs: 60_000 });
    await cache.refresh();
    app.get('/body', (request, reply) => {
      const r = sendCachedJsonText(cache, request, reply, 'one', async () => {
        builds++;
        if (failBuild) throw new Error('build failed');
        return body;
      });
      returned.push(r === undefined ? 'sent at once' : 'promise');
      return r;
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    cache.close();
    await t.drop();
  });

  it('builds on a miss, then sends the held bytes without a promise', async () => {
    const first = await app.inject('/body');
    const second = await app.inject('/body');
    expect(first.statusCode).toBe(200);
    expect(first.body).toBe(body);
    expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(second.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(second.headers.vary).toBe('accept-encoding');
    expect(builds).toBe(1);
    expect(returned).toEqual(['promise', 'sent at once']);
  });

  it('compresses once for gzip, then sends the compressed bytes at once too', async () => {
    returned.length = 0;
    const gz = { 'accept-encoding': 'gzip' };
    const first = await app.inject({ url: '/body', headers: gz });
    const second = await app.inject({ url: '/body', headers: gz });
    expect(first.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(first.rawPayload).toString()).toBe(body);
    expect(second.headers['content-encoding']).toBe('gzip');
    expect(second.headers.vary).toBe('accept-encoding');
    expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(returned).toEqual(['promise', 'sent at once']);
    expect(builds).toBe(1);
  });

  it('a build that fails answers an error and is not held', async () => {
    cache.invalidate();
    failBuild = true;
    expect((await app.inject('/body')).statusCode).toBe(500);
    failBuild = false;
    expect((await app.inject('/body')).body).toBe(body);
  });
});
