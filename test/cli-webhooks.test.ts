/**
 * `yield-service webhook …`: secrets printed once and never listed, HTTPS only, rotation, removal,
 * the delivery log, both replay modes and inbound secrets. Run in this process (the bin's own
 * commander program, helpers/cli.ts) on a test database; events are stored directly in it (as the
 * indexer would) between commands. One smoke test spawns the bin.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.ts';
import { createEventsRepo } from '../src/db/events.ts';
import { createPartnersRepo } from '../src/db/partners.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, storageEngines, type TestDatabase } from './helpers/db.ts';
import { spawnCli } from './helpers/process.ts';

interface Json {
  [key: string]: unknown;
}

// The commands are engine-agnostic (the repositories are tested on both engines): PostgreSQL when a
// server is named, else PGlite.
const engine = storageEngines().includes('postgres') ? 'postgres' : 'pglite';

describe(`webhook CLI on ${engine}`, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-cli-webhooks-'));
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase(engine);
  });
  afterAll(async () => {
    await t.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // A port where no local chain answers: these commands never need one. The master key:
  // DATA_DIR/master.key, created by the first command that needs it.
  const cli = (args: string[]) =>
    runCliInProcess(args, {
      env: { DATA_DIR: dataDir, LOG_LEVEL: 'silent', LOCAL_CHAIN_PORT: '1' },
      database: t.db,
    });

  async function json<T = Json>(args: string[]): Promise<T> {
    const r = await cli([...args, '--json']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.out) as T;
  }

  /** Direct database access between commands: the commands' own database. */
  const withDb = <T>(fn: (db: Database) => Promise<T>): Promise<T> => fn(t.db);

  const storeEvent = (partner: string, environment: 'live' | 'test', eventType: string) =>
    withDb(async (db) => {
      const p = await createPartnersRepo(db).findByName(partner);
      const e = await createEventsRepo(db).insert({
        partnerId: p!.id,
        environment,
        productId: null,
        eventType,
        dedupeKey: `cli-test:${randomBytes(6).toString('hex')}`,
        payload: { slug: 'x' },
        occurredAt: new Date(),
      });
      return e!.id;
    });

  const failAll = (destinationId: string) =>
    withDb((db) =>
      db.query(
        `UPDATE webhook_deliveries SET status = 'failed', attempts = 3, failed_at = now(),
           last_response_code = 500
         WHERE destination_id = $1 AND status = 'pending'`,
        [destinationId],
      ),
    );

  let deposits = '';
  let everything = '';

  it('adds destinations with the secret shown once, never listed; refuses plain HTTP', async () => {
    expect((await cli(['partner', 'create', '--name', 'Acme Wallet'])).code).toBe(0);
    expect((await cli(['partner', 'create', '--name', 'Bravo Pay'])).code).toBe(0);
    // Listing needs no master key, so it creates none.
    expect(await json(['webhook', 'list'])).toEqual([]);
    const keyFile = path.join(dataDir, 'master.key');
    expect(existsSync(keyFile)).toBe(false);

    const added = await json([
      'webhook',
      'add',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--url',
      'https://hooks.example.com/deposits',
      '--events',
      'deposit.confirmed,redeem.confirmed',
    ]);
    expect(added).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      partner: 'Acme Wallet',
      environment: 'live',
      url: 'https://hooks.example.com/deposits',
      event_types: ['deposit.confirmed', 'redeem.confirmed'],
      fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{16}$/),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    deposits = added.id as string;
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);

    const text = await cli([
      'webhook',
      'add',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--url',
      'https://hooks.example.com/all',
    ]);
    expect(text.code).toBe(0);
    const secret = /Signing secret \(shown once; store it now\): (whsec_\S+)/.exec(text.out)?.[1];
    expect(secret).toBeDefined();
    everything = /^Added (whk_\S+) for Acme Wallet \(live\)/.exec(text.out)![1]!;
    expect(text.out).toContain('Event types: all');

    const listed = await cli(['webhook', 'list', '--json']);
    expect(listed.out).not.toContain(secret);
    expect(listed.out).not.toContain(added.secret as string);
    expect(listed.out).not.toContain('v1:');
    const rows = JSON.parse(listed.out) as Json[];
    expect(rows.map((r) => r.id)).toEqual([deposits, everything]);
    expect(rows[0]).toMatchObject({ fingerprint: added.fingerprint, removed_at: null });
    expect(rows[0]).not.toHaveProperty('secret');
    const table = await cli(['webhook', 'list', '--partner', 'Acme Wallet']);
    expect(table.out).toContain(added.fingerprint as string);
    expect(table.out).not.toContain(secret);
    expect(await json(['webhook', 'list', '--partner', 'Bravo Pay'])).toEqual([]);

    const http = await cli([
      'webhook',
      'add',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--url',
      'http://hooks.example.com',
    ]);
    expect(http.code).toBe(1);
    expect(http.out).toBe('');
    expect(http.err).toMatch(/^yield-service: webhook destinations must be https:\/\/ URLs.*\n$/);
    expect(http.err.split('\n')).toHaveLength(2); // one line

    const unknownType = await cli([
      'webhook',
      'add',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--url',
      'https://hooks.example.com',
      '--events',
      'deposit.confirm',
    ]);
    expect(unknownType.code).not.toBe(0);
    expect(unknownType.err).toMatch(/unknown event type deposit\.confirm/);
    const nobody = await cli([
      'webhook',
      'add',
      '--partner',
      'Nobody',
      '--env',
      'live',
      '--url',
      'https://hooks.example.com',
    ]);
    expect(nobody.code).toBe(1);
    expect(nobody.err).toMatch(/no partner named "Nobody"/);
    expect(await json<Json[]>(['webhook', 'list'])).toHaveLength(2);
  });

  it('rotates a secret: a new one shown once, a new fingerprint', async () => {
    const before = (await json<Json[]>(['webhook', 'list'])).find((r) => r.id === deposits)!;
    const rotated = await json(['webhook', 'rotate', deposits]);
    expect(rotated).toMatchObject({
      id: deposits,
      secret: expect.stringMatching(/^whsec_/),
      fingerprint: expect.stringMatching(/^sha256:/),
      secret_rotated_at: expect.any(String),
    });
    expect(rotated.fingerprint).not.toBe(before.fingerprint);
    const after = await cli(['webhook', 'list', '--json']);
    expect(after.out).not.toContain(rotated.secret as string);
    expect((JSON.parse(after.out) as Json[]).find((r) => r.id === deposits)!.fingerprint).toBe(
      rotated.fingerprint,
    );
    const text = await cli(['webhook', 'rotate', deposits]);
    expect(text.out).toMatch(/Signing secret \(shown once; store it now\): whsec_/);
    const unknown = await cli(['webhook', 'rotate', 'whk_unknown']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe('yield-service: no active webhook destination with id whk_unknown\n');
  });

  it('lists deliveries and replays an event, or what failed since a moment', async () => {
    const first = await storeEvent('Acme Wallet', 'live', 'deposit.confirmed');
    await storeEvent('Acme Wallet', 'live', 'tvl_alert'); // only to `everything`
    await storeEvent('Acme Wallet', 'test', 'deposit.confirmed'); // no test destination

    const log = await json<Json[]>(['webhook', 'deliveries']);
    expect(log).toHaveLength(3);
    expect(log[0]).toMatchObject({ event_type: 'tvl_alert', destination_id: everything });
    const ofFirst = await json<Json[]>(['webhook', 'deliveries', '--event', first]);
    expect(ofFirst.map((d) => d.destination_id).sort()).toEqual([deposits, everything].sort());
    expect(ofFirst[0]).toMatchObject({ status: 'pending', attempts: 0, replay_of: null });
    expect(await json<Json[]>(['webhook', 'deliveries', '--destination', deposits])).toHaveLength(
      1,
    );
    expect(await json<Json[]>(['webhook', 'deliveries', '--limit', '1'])).toHaveLength(1);

    await failAll(deposits);
    const failed = await json<Json[]>(['webhook', 'deliveries', '--status', 'failed']);
    expect(failed).toEqual([
      expect.objectContaining({
        event_id: first,
        destination_id: deposits,
        last_response_code: 500,
      }),
    ]);
    const table = await cli(['webhook', 'deliveries', '--status', 'failed']);
    expect(table.out).toMatch(/^ID\s+EVENT\s+TYPE\s+DESTINATION\s+STATUS/);
    expect(table.out).toContain('500');

    // Replay one event to one destination: a new pending row linked to the failed one.
    const one = await json<Json[]>([
      'webhook',
      'replay',
      '--event',
      first,
      '--destination',
      deposits,
    ]);
    expect(one).toEqual([
      expect.objectContaining({
        event_id: first,
        destination_id: deposits,
        status: 'pending',
        attempts: 0,
        replay_of: failed[0]!.id,
      }),
    ]);
    // To every subscribed destination.
    const all = await json<Json[]>(['webhook', 'replay', '--event', first]);
    expect(all.map((d) => d.destination_id).sort()).toEqual([deposits, everything].sort());
    const text = await cli(['webhook', 'replay', '--event', first, '--destination', everything]);
    expect(text.out).toMatch(/^Replaying evt_\S+ to whk_\S+ as dlv_\S+ \(replay of dlv_\S+\)\.\n$/);

    // Failed since: every pending row of `deposits` fails; each event is replayed once.
    await failAll(deposits);
    const second = await storeEvent('Acme Wallet', 'live', 'deposit.confirmed');
    await failAll(deposits);
    const since = await json([
      'webhook',
      'replay',
      '--destination',
      deposits,
      '--failed-since',
      '2000-01-01T00:00:00Z',
    ]);
    expect(since.count).toBe(2);
    expect((since.deliveries as Json[]).map((d) => d.event_id).sort()).toEqual(
      [first, second].sort(),
    );
    const again = await cli([
      'webhook',
      'replay',
      '--destination',
      deposits,
      '--failed-since',
      '2000-01-01',
    ]);
    expect(again.out).toMatch(
      /^Replayed 0 failed event\(s\) of whk_\S+ since 2000-01-01T00:00:00\.000Z\.\n$/,
    );
    const future = await json([
      'webhook',
      'replay',
      '--destination',
      deposits,
      '--failed-since',
      '2999-01-01T00:00:00+02:00',
    ]);
    expect(future.count).toBe(0);
  });

  it('accepts exactly one replay mode and a valid date', async () => {
    const refused = async (args: string[], message: RegExp) => {
      const r = await cli(['webhook', 'replay', ...args]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.err, args.join(' ')).toMatch(message);
      expect(r.out).toBe('');
    };
    await refused([], /name --event EVT_ID/);
    await refused(['--destination', deposits], /name --event EVT_ID/);
    await refused(['--failed-since', '2025-01-01T00:00:00Z'], /--failed-since needs --destination/);
    await refused(
      ['--event', 'evt_x', '--destination', deposits, '--failed-since', '2025-01-01T00:00:00Z'],
      /cannot be used with option '--event/,
    );
    for (const bad of ['2025-02-30', '2025-01-01T10:00:00', 'yesterday', '2025-13-01T00:00Z']) {
      await refused(['--destination', deposits, '--failed-since', bad], /failed-since/);
    }
    await refused(['--event', 'evt_nope'], /^yield-service: no event with id evt_nope\n$/);
    await refused(
      ['--destination', 'whk_nope', '--failed-since', '2025-01-01'],
      /no webhook destination/,
    );
    const lonely = await storeEvent('Bravo Pay', 'live', 'vault_pause');
    await refused(['--event', lonely], /no active destination subscribes/);
    await refused(['--event', lonely, '--destination', deposits], /does not belong/);
    const status = await cli(['webhook', 'deliveries', '--status', 'lost']);
    expect(status.code).not.toBe(0);
    expect(status.err).toMatch(/pending, delivered, failed/);
  });

  it('removes a destination: gone from the list, its pending deliveries failed', async () => {
    const removed = await cli(['webhook', 'remove', deposits]);
    expect(removed).toMatchObject({ code: 0, out: `Removed ${deposits}.\n` });
    const again = await cli(['webhook', 'remove', deposits]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/no active webhook destination/);
    expect((await json<Json[]>(['webhook', 'list'])).map((r) => r.id)).toEqual([everything]);
    const all = await json<Json[]>(['webhook', 'list', '--all']);
    expect(all.find((r) => r.id === deposits)?.removed_at).toEqual(expect.any(String));
    expect(
      await json<Json[]>([
        'webhook',
        'deliveries',
        '--destination',
        deposits,
        '--status',
        'pending',
      ]),
    ).toEqual([]);
    const replay = await cli([
      'webhook',
      'replay',
      '--destination',
      deposits,
      '--failed-since',
      '2000-01-01',
    ]);
    expect(replay.code).toBe(1);
    expect(replay.err).toMatch(/was removed/);
    expect((await cli(['webhook', 'rotate', deposits])).code).toBe(1);
  });

  it('creates and rotates inbound secrets, printed once, listed by fingerprint', async () => {
    const created = await json([
      'webhook',
      'inbound-secret',
      'set',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
    ]);
    expect(created).toMatchObject({
      partner: 'Acme Wallet',
      environment: 'live',
      rotated: false,
      fingerprint: expect.stringMatching(/^sha256:/),
      secret: expect.stringMatching(/^whsec_/),
    });
    const rotated = await cli([
      'webhook',
      'inbound-secret',
      'set',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
    ]);
    expect(rotated.code).toBe(0);
    expect(rotated.out).toMatch(/^Rotated the inbound secret of Acme Wallet \(live\)/);
    const secret = /Inbound secret \(shown once; store it now\): (whsec_\S+)/.exec(
      rotated.out,
    )![1]!;
    expect(secret).not.toBe(created.secret);
    await json(['webhook', 'inbound-secret', 'set', '--partner', 'Bravo Pay', '--env', 'test']);

    const listed = await cli(['webhook', 'inbound-secret', 'list', '--json']);
    expect(listed.out).not.toContain(secret);
    expect(listed.out).not.toContain(created.secret as string);
    const rows = JSON.parse(listed.out) as Json[];
    expect(rows.map((r) => [r.partner, r.environment]).sort()).toEqual([
      ['Acme Wallet', 'live'],
      ['Bravo Pay', 'test'],
    ]);
    const acme = await json<Json[]>([
      'webhook',
      'inbound-secret',
      'list',
      '--partner',
      'Acme Wallet',
    ]);
    expect(acme).toEqual([
      expect.objectContaining({
        environment: 'live',
        rotated_at: expect.any(String),
        fingerprint: expect.stringMatching(/^sha256:/),
      }),
    ]);
    expect(acme[0]!.fingerprint).not.toBe(created.fingerprint);
    const table = await cli(['webhook', 'inbound-secret', 'list']);
    expect(table.out).toMatch(/^PARTNER\s+ENV\s+FINGERPRINT/);
    expect(table.out).toContain(acme[0]!.fingerprint as string);

    const env = await cli([
      'webhook',
      'inbound-secret',
      'set',
      '--partner',
      'Acme Wallet',
      '--env',
      'prod',
    ]);
    expect(env.code).not.toBe(0);
    expect(env.err).toMatch(/live or test/);
  });
});

describe('the bin, spawned (smoke test of the webhook commands)', () => {
  it('lists destinations from DATA_DIR without creating a master key', {
    timeout: 60_000,
  }, async () => {
    // A migrated copy in DATA_DIR: no initdb (seconds).
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-cli-webhooks-smoke-'));
    const copy = await freshDatabase('pglite');
    await copy.db.close();
    renameSync(copy.location, path.join(dataDir, 'pglite'));
    try {
      const p = spawnCli(['webhook', 'list', '--json'], {
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        LOCAL_CHAIN_PORT: '1',
      });
      expect((await p.exited).code).toBe(0);
      expect(p.stderr()).toBe('');
      expect(JSON.parse(p.stdout())).toEqual([]);
      expect(existsSync(path.join(dataDir, 'master.key'))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
