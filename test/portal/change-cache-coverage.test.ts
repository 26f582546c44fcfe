/**
 * Cache invalidation that cannot be forgotten (#31 item 6). The portal keeps some pages' reads until
 * a trigger announces a change on the page group's channel (change-cache.ts). A cached read of a
 * table that has no such trigger would show a stale page on the embedded database, and nothing else
 * would notice. Here every cached page is visited with data in it, every statement run while a
 * cache entry fills is recorded with its channel, and each table those statements read must carry
 * the channel's insert, update and delete triggers. The check itself is shown failing on a table
 * without them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/client.ts';
import type { ChangeChannel } from '../../src/db/portal-changes.ts';
import { trackCacheFills } from '../../src/portal/change-cache.ts';
import { type Client, type Harness, portalHarness } from './harness.ts';

let h: Harness;
let owner: Client;
const reads: Array<{ channel: ChangeChannel; sql: string }> = [];

const NOTIFY: Record<ChangeChannel, string> = {
  webhook_changes: 'notify_webhook_change',
  team_changes: 'notify_team_change',
};

const cacheFill = trackCacheFills();

beforeAll(async () => {
  h = await portalHarness();
  // Every statement, as the repositories send it; those run while an entry fills are kept.
  const query = h.t.db.query.bind(h.t.db);
  h.t.db.query = ((sql: string, params?: readonly unknown[]) => {
    const channel = cacheFill.getStore();
    if (channel) reads.push({ channel, sql });
    return query(sql, params);
  }) as typeof h.t.db.query;
  owner = await h.signedIn('cache-owner@example.com', 'owner');
});
afterAll(async () => h?.close());

/** The tables a statement reads (FROM and JOIN), as named in the database. */
function tablesOf(sql: string, known: Set<string>): string[] {
  return [...sql.matchAll(/\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_]*)\b(?!\s*\()/gi)]
    .map((m) => m[1]!.toLowerCase())
    .filter((t) => known.has(t));
}

/** Tables read on a channel that lack one of its three triggers, as `table (channel)`. */
async function unannounced(
  db: Queryable,
  read: ReadonlyArray<{ channel: ChangeChannel; sql: string }>,
): Promise<string[]> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`,
  );
  const known = new Set(tables.map((t) => t.name));
  // tgtype bits: 4 insert, 8 delete, 16 update.
  const { rows: triggers } = await db.query<{ table: string; fn: string; events: number }>(
    `SELECT c.relname AS table, p.proname AS fn, bit_or(t.tgtype::int & 28)::int AS events
     FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE NOT t.tgisinternal GROUP BY c.relname, p.proname`,
  );
  const covered = new Set(triggers.filter((t) => t.events === 28).map((t) => `${t.table}/${t.fn}`));
  const missing = new Set<string>();
  for (const { channel, sql } of read) {
    for (const table of tablesOf(sql, known)) {
      if (!covered.has(`${table}/${NOTIFY[channel]}`)) missing.add(`${table} (${channel})`);
    }
  }
  return [...missing].sort();
}

describe('cached portal reads', () => {
  it('read only tables whose every change is announced on their channel', async () => {
    // Data on every cached page: a key, an invitee, a destination with a delivery, an inbound
    // secret and event.
    await owner.get('/portal/test/keys');
    await owner.post('/portal/test/keys', { name: 'cache' });
    await owner.get('/portal/test/team');
    await owner.post('/portal/test/team', { email: 'cache-dev@example.com', role: 'developer' });
    await owner.get('/portal/test/webhooks');
    const added = await owner.post('/portal/test/webhooks', { url: 'https://hooks.example.com/c' });
    const whk = /\/portal\/test\/webhooks\/(whk_\w+)"/.exec(added.body)![1]!;
    await owner.get(`/portal/test/webhooks/${whk}`);
    await owner.post(`/portal/test/webhooks/${whk}/ping`);
    await owner.get('/portal/test/webhooks/inbound');
    await owner.post('/portal/test/webhooks/inbound/secret');
    const { rows } = await h.t.db.query<{ id: string }>(
      `SELECT event_id AS id FROM webhook_deliveries WHERE destination_id = $1`,
      [whk],
    );
    reads.length = 0;
    for (const page of [
      '/portal/test/keys',
      '/portal/live/keys',
      '/portal/test/team',
      '/portal/test/audit',
      '/portal/test/audit?who=cache-owner%40example.com&what=key.created&from=2026-01-01',
      '/portal/test/webhooks',
      `/portal/test/webhooks/${whk}`,
      `/portal/test/webhooks/${whk}?status=pending`,
      '/portal/test/webhooks/inbound',
      `/portal/test/webhooks/events/${rows[0]!.id}`,
    ]) {
      expect((await owner.get(page)).status, page).toBe(200);
    }
    // Both groups were read through their caches.
    expect(new Set(reads.map((r) => r.channel))).toEqual(
      new Set(['webhook_changes', 'team_changes']),
    );
    expect(await unannounced(h.t.db, reads)).toEqual([]);
  });

  it('names a cached read of a table without the triggers', async () => {
    const found = await unannounced(h.t.db, [
      { channel: 'team_changes', sql: 'SELECT * FROM products p JOIN api_keys k ON true' },
      { channel: 'webhook_changes', sql: 'SELECT * FROM api_keys' },
    ]);
    expect(found).toEqual(['api_keys (webhook_changes)', 'products (team_changes)']);
  });
});
