/**
 * `yield-service webhook …`: secrets printed once and never listed, HTTPS only, rotation, removal,
 * the delivery log, both replay modes and inbound secrets. Run in this process (the bin's own
 * commander program, helpers/cli.ts) on a test database; events are stored directly in it (as the
 * indexer would) between commands. The commands whose effect is a delivery (ping, stats, disable,
 * enable, update, rotate --grace) run against the real dispatcher and a real HTTPS receiver, and the
 * deliveries are verified with the standardwebhooks package. One smoke test spawns the bin.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.ts';
import { createEventsRepo } from '../src/db/events.ts';
import { createPartnersRepo } from '../src/db/partners.ts';
import { createAddressPolicy, parseCidrList } from '../src/webhooks/address-policy.ts';
import { createDispatcher } from '../src/webhooks/dispatcher.ts';
import { createSecretBox, masterKeyFor } from '../src/webhooks/secret-box.ts';
import { createSender } from '../src/webhooks/sender.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, scratchDir, storageEngines, type TestDatabase } from './helpers/db.ts';
import {
  type HttpsReceiver,
  type ReceivedRequest,
  startHttpsReceiver,
  testCaPem,
} from './helpers/https-receiver.ts';
import { captureLogger } from './helpers/logs.ts';
import { spawnCli, waitFor } from './helpers/process.ts';

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

  it('refuses a destination at a non-public IP address at once, added or moved there', async () => {
    const refusal = (address: string, what: string) =>
      `yield-service: ${address} is ${what} address; webhooks are sent only to public addresses: use a public host name or address (or let its range through with WEBHOOK_ALLOWED_CIDRS, for development)\n`;
    const add = (url: string) =>
      cli(['webhook', 'add', '--partner', 'Acme Wallet', '--env', 'live', '--url', url]);
    for (const [url, address, what] of [
      ['https://10.0.0.5/hook', '10.0.0.5', 'a private'],
      ['https://[::1]:8443/x', '[::1]', 'a loopback'],
      ['https://[::ffff:127.0.0.1]/x', '[::ffff:7f00:1] (127.0.0.1)', 'a loopback'],
    ] as const) {
      expect(await add(url), url).toEqual({ code: 1, out: '', err: refusal(address, what) });
    }
    const moved = await cli(['webhook', 'update', deposits, '--url', 'https://169.254.169.254/']);
    expect(moved).toEqual({ code: 1, out: '', err: refusal('169.254.169.254', 'a link-local') });
    const list = await json<Json[]>(['webhook', 'list']);
    expect(list).toHaveLength(2);
    expect(list.find((r) => r.id === deposits)!.url).toBe('https://hooks.example.com/deposits');
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

  it("records every change in the partner's portal audit log, by operator", async () => {
    expect((await cli(['partner', 'create', '--name', 'Audit Co'])).code).toBe(0);
    const partner = ['--partner', 'Audit Co', '--env', 'test'];
    const { id } = await json<{ id: string }>([
      'webhook',
      'add',
      ...partner,
      '--url',
      'https://hooks.audit.example/in',
    ]);
    await json(['webhook', 'update', id, '--events', 'deposit.confirmed']);
    await json(['webhook', 'rotate', id, '--grace', '30m']);
    await json(['webhook', 'disable', id, '--note', 'maintenance']);
    await json(['webhook', 'enable', id, '--no-replay']);
    const ping = await json<{ id: string }>(['webhook', 'ping', id]);
    const event = await storeEvent('Audit Co', 'test', 'deposit.confirmed');
    const [replay] = await json<Array<{ id: string }>>(['webhook', 'replay', '--event', event]);
    await json(['webhook', 'inbound-secret', 'set', ...partner]);
    expect((await cli(['webhook', 'remove', id])).code).toBe(0);

    const rows = await withDb(async (db) => {
      const p = await createPartnersRepo(db).findByName('Audit Co');
      return (
        await db.query<{ actor: string; member_id: string | null; action: string; target: string }>(
          `SELECT actor, member_id, action, environment, target FROM portal_audit_log
           WHERE partner_id = $1 ORDER BY created_at, id`,
          [p!.id],
        )
      ).rows;
    });
    expect(rows.every((r) => r.actor === 'operator' && r.member_id === null)).toBe(true);
    expect(rows.map((r) => [r.action, r.target])).toEqual([
      ['webhook.added', `${id} https://hooks.audit.example/in`],
      ['webhook.updated', `${id} events all → deposit.confirmed`],
      ['webhook.rotated', `${id} grace 30 m`],
      ['webhook.disabled', `${id} 0 pending failed: maintenance`],
      ['webhook.enabled', `${id} 0 replayed`],
      ['webhook.pinged', `${id} delivery ${ping.id}`],
      ['webhook.replayed', `${id} event ${event} as delivery ${replay!.id}`],
      ['inbound.secret_set', 'created'],
      ['webhook.removed', `${id} https://hooks.audit.example/in`],
    ]);
  });
});

describe(`webhook ping, stats, disable, enable, update and rotate --grace on ${engine}, delivered for real`, {
  timeout: 120_000,
}, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-cli-webhooks-live-'));
  const WAIT_MS = 30_000;
  let t: TestDatabase;
  let receiver: HttpsReceiver;
  let other: HttpsReceiver;
  let failing = false;
  const stops: Array<() => Promise<void>> = [];

  // The receivers are on loopback: the operator lets it through, as the dispatcher's policy does.
  const cli = (args: string[]) =>
    runCliInProcess(args, {
      env: {
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        LOCAL_CHAIN_PORT: '1',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      },
      database: t.db,
    });
  async function json<T = Json>(args: string[]): Promise<T> {
    const r = await cli([...args, '--json']);
    expect(r.err, args.join(' ')).toBe('');
    expect(r.code, args.join(' ')).toBe(0);
    return JSON.parse(r.out) as T;
  }
  /** A refusal: exit 1, nothing on stdout, one line on stderr. */
  async function refused(args: string[]): Promise<string> {
    const r = await cli(args);
    expect(r.code, args.join(' ')).not.toBe(0);
    expect(r.out, args.join(' ')).toBe('');
    expect(r.err.trimEnd().split('\n'), r.err).toHaveLength(1);
    return r.err;
  }
  /** A usage error (commander): the reason on the first line, then the command's help. */
  async function misused(args: string[]): Promise<string> {
    const r = await cli(args);
    expect(r.code, args.join(' ')).not.toBe(0);
    expect(r.out, args.join(' ')).toBe('');
    const [first, ...help] = r.err.split('\n');
    expect(help.join('\n')).toContain(`Usage: yield-service webhook ${args[1]} [options]`);
    return first!;
  }

  beforeAll(async () => {
    t = await freshDatabase(engine);
    receiver = await startHttpsReceiver({
      handler: () => (failing ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }),
    });
    other = await startHttpsReceiver({ host: '127.0.0.1' });
    // The worker's dispatcher, with the master key the CLI creates in DATA_DIR.
    const sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
    });
    const job = createDispatcher({
      db: t.db,
      logger: captureLogger().logger,
      sender,
      secretBox: createSecretBox(masterKeyFor({ DATA_DIR: dataDir })),
      retryDelaysMs: [30, 30],
      pollMs: 20,
    }).job();
    job.start();
    stops.push(
      () => job.stop(),
      () => sender.close(),
      () => receiver.close(),
      () => other.close(),
    );
  });
  afterAll(async () => {
    for (const s of stops) await s().catch(() => {});
    await t?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const deliveryOf = (eventId: string) =>
    waitFor(
      async () => {
        const [d] = await json<Json[]>(['webhook', 'deliveries', '--event', eventId]);
        return d && d.status !== 'pending' ? d : undefined;
      },
      WAIT_MS,
      `the delivery of ${eventId} to finish`,
    );
  const requestOf = (r: HttpsReceiver, eventId: string): ReceivedRequest | undefined =>
    r.requests.find((q) => q.headers['x-service-event-id'] === eventId);
  const verifies = (secret: string, q: ReceivedRequest) => {
    try {
      new Webhook(secret).verify(q.body.toString(), q.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };
  let n = 0;
  const storeEvent = async (eventType = 'vault_pause') => {
    const p = await createPartnersRepo(t.db).findByName('Acme Wallet');
    const e = await createEventsRepo(t.db).insert({
      partnerId: p!.id,
      environment: 'live',
      productId: null,
      eventType,
      dedupeKey: `cli-live:${n++}`,
      payload: { slug: `core-${n}`, status: 'paused' },
      occurredAt: new Date(),
    });
    return e!.id;
  };

  let id = '';
  let secret = '';

  it('ping sends a test event that is delivered and verifies; stats count it', async () => {
    expect((await cli(['partner', 'create', '--name', 'Acme Wallet'])).code).toBe(0);
    const added = await json([
      'webhook',
      'add',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--url',
      `${receiver.url}/hook`,
    ]);
    id = added.id as string;
    secret = added.secret as string;

    // As the README says: the event and the delivery, and how to follow it.
    const ping = await cli(['webhook', 'ping', id]);
    expect(ping.code).toBe(0);
    const m =
      /^Queued test event (evt_\w+) to (whk_\w+) as (dlv_\w+)\.\nFollow it with: yield-service webhook deliveries --event (evt_\w+)\n$/.exec(
        ping.out,
      );
    expect(m, ping.out).not.toBeNull();
    expect(m![2]).toBe(id);
    expect(m![4]).toBe(m![1]);
    const delivered = await deliveryOf(m![1]!);
    expect(delivered).toMatchObject({
      id: m![3],
      event_type: 'ping',
      status: 'delivered',
      attempts: 1,
    });
    const request = requestOf(receiver, m![1]!)!;
    expect(request.headers['x-service-event']).toBe('ping');
    expect(verifies(secret, request)).toBe(true);
    expect(JSON.parse(request.body.toString())).toMatchObject({ destination_id: id });

    const asJson = await json(['webhook', 'ping', id]);
    expect(asJson).toMatchObject({
      destination_id: id,
      event_type: 'ping',
      status: 'pending',
      attempts: 0,
    });
    await deliveryOf(asJson.event_id as string);

    expect(await refused(['webhook', 'ping', 'whk_nope'])).toBe(
      'yield-service: no webhook destination with id whk_nope\n',
    );

    const stats = await json(['webhook', 'stats', id]);
    expect(stats).toMatchObject({
      destination_id: id,
      status: 'active',
      disabled_at: null,
      disabled_by: null,
      disabled_reason: null,
      failing_since: null,
      last_24h: {
        attempts: 2,
        succeeded: 2,
        success_rate: 1,
        latency_ms: { p50: expect.any(Number), p95: expect.any(Number), max: expect.any(Number) },
      },
      last_success_at: expect.any(String),
      last_failure: null,
    });
  });

  it('stats show a failure: success rate, last failure with its status, failing since', async () => {
    failing = true;
    const event = await storeEvent();
    expect(await deliveryOf(event)).toMatchObject({ status: 'failed', attempts: 3 });
    const stats = await json(['webhook', 'stats', id]);
    expect(stats).toMatchObject({
      status: 'active',
      failing_since: expect.any(String),
      last_24h: { attempts: 5, succeeded: 2, success_rate: 0.4 },
      last_failure: { at: expect.any(String), status_code: 503, error: null },
    });
    const text = await cli(['webhook', 'stats', id]);
    expect(text.code).toBe(0);
    const [header, row] = text.out.trimEnd().split('\n');
    expect(header).toMatch(
      /^ID\s+STATUS\s+ATTEMPTS 24H\s+OK 24H\s+P50 MS\s+P95 MS\s+LAST SUCCESS\s+LAST FAILURE\s+FAILING SINCE$/,
    );
    expect(row).toMatch(
      new RegExp(
        `^${id}\\s+active\\s+5\\s+40\\.0%\\s+\\d+\\s+\\d+\\s+\\S+Z\\s+\\S+Z 503\\s+\\S+Z$`,
      ),
    );
    // Every destination: an array.
    expect(await json<Json[]>(['webhook', 'stats'])).toEqual([
      expect.objectContaining({ destination_id: id }),
    ]);
    expect(await refused(['webhook', 'stats', 'whk_nope'])).toBe(
      'yield-service: no webhook destination with id whk_nope\n',
    );
  });

  it('disable by hand: nothing sent meanwhile, the reason shown; enable replays what failed', async () => {
    const text = await cli(['webhook', 'disable', id, '--note', 'receiver migration']);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(
      new RegExp(
        `^Disabled ${id}\\. Disabled by the operator on \\S+Z \\(“receiver migration”\\)\\. Nothing is sent to it until it is re-enabled; what failed meanwhile is then replayed\\.\\nPending deliveries failed: 0\\. Re-enable with: yield-service webhook enable ${id}\\n$`,
      ),
    );
    expect(await refused(['webhook', 'disable', id])).toBe(
      `yield-service: destination ${id} is already disabled\n`,
    );
    expect(await refused(['webhook', 'disable', 'whk_nope'])).toBe(
      'yield-service: no webhook destination with id whk_nope\n',
    );
    const [listed] = await json<Json[]>(['webhook', 'list']);
    expect(listed).toMatchObject({ id, status: 'disabled', disabled_by: 'manual' });
    const table = await cli(['webhook', 'list']);
    expect(table.out).toContain(`${id}: Disabled by the operator on `);
    expect((await cli(['webhook', 'stats', id])).out).toContain(`${id}: Disabled by the operator`);

    // An event meanwhile fails at once and reaches nobody.
    failing = false;
    const before = receiver.requests.length;
    const meanwhile = await storeEvent();
    const [row] = await json<Json[]>(['webhook', 'deliveries', '--event', meanwhile]);
    expect(row).toMatchObject({
      status: 'failed',
      attempts: 0,
      last_error: 'destination disabled',
    });

    // Re-enabled: the failure from before (the destination was failing) and the one meanwhile are
    // replayed and delivered.
    const enabled = await cli(['webhook', 'enable', id]);
    expect(enabled.code).toBe(0);
    expect(enabled.out).toMatch(
      new RegExp(`^Enabled ${id}\\.\\nReplayed 2 failed event\\(s\\) since \\S+Z\\.\\n$`),
    );
    await waitFor(
      () => (requestOf(receiver, meanwhile) ? true : undefined),
      WAIT_MS,
      'the replay of the event stored meanwhile',
    );
    await waitFor(
      () => (receiver.requests.length >= before + 2 ? true : undefined),
      WAIT_MS,
      'both replays',
    );
    // Received is not yet recorded (the dispatcher records outcomes in batches): wait for the
    // rows, so that the disable below finds nothing pending.
    await waitFor(
      async () =>
        (await json<Json[]>(['webhook', 'deliveries', '--destination', id, '--status', 'pending']))
          .length === 0 || undefined,
      WAIT_MS,
      'both replays recorded',
    );
    expect(await refused(['webhook', 'enable', id])).toBe(
      `yield-service: destination ${id} is not disabled\n`,
    );
    expect(await refused(['webhook', 'enable', 'whk_nope'])).toBe(
      'yield-service: no webhook destination with id whk_nope\n',
    );
    // The note's bound, and --no-replay.
    expect(await refused(['webhook', 'disable', id, '--note', 'x'.repeat(201)])).toBe(
      'yield-service: the note is 201 characters; at most 200\n',
    );
    expect(await json(['webhook', 'disable', id])).toMatchObject({
      id,
      status: 'disabled',
      disabled_by: 'manual',
      disabled_reason: expect.stringMatching(/^Disabled by the operator on \S+Z\. Nothing is sent/),
      failed_pending: 0,
    });
    const quiet = await cli(['webhook', 'enable', id, '--no-replay']);
    expect(quiet).toMatchObject({ code: 0, out: `Enabled ${id}.\n`, err: '' });
  });

  it('update changes the URL and event types, with clear refusals', async () => {
    expect(await refused(['webhook', 'update', id])).toBe(
      'yield-service: name what to change: --url URL, --events TYPES or --all-events\n',
    );
    expect(await refused(['webhook', 'update', id, '--url', 'http://hooks.example.com'])).toMatch(
      /^yield-service: webhook destinations must be https:\/\/ URLs \(got http\)/,
    );
    expect(await refused(['webhook', 'update', id, '--url', 'not a url'])).toBe(
      'yield-service: "not a url" is not a URL\n',
    );
    // WEBHOOK_ALLOWED_CIDRS lets loopback through (the move below), not other private ranges.
    expect(await refused(['webhook', 'update', id, '--url', 'https://[fd00::1]/x'])).toMatch(
      /^yield-service: \[fd00::1\] is a unique-local \(private\) address; webhooks are sent only to public addresses: use a public host name or address/,
    );
    expect(await misused(['webhook', 'update', id, '--events', 'deposit.confirm'])).toMatch(
      /^error: option '--events <types>' argument 'deposit\.confirm' is invalid\. unknown event type deposit\.confirm \(known: deposit\.confirmed, /,
    );
    expect(
      await misused(['webhook', 'update', id, '--events', 'vault_pause', '--all-events']),
    ).toMatch(/^error: option '--all-events' cannot be used with option '--events <types>'/);
    expect(await refused(['webhook', 'update', 'whk_nope', '--all-events'])).toBe(
      'yield-service: no active webhook destination with id whk_nope\n',
    );

    const moved = await json([
      'webhook',
      'update',
      id,
      '--url',
      `${other.url}/moved`,
      '--events',
      'vault_pause,tvl_alert',
    ]);
    expect(moved).toMatchObject({
      id,
      partner: 'Acme Wallet',
      url: `${other.url}/moved`,
      event_types: ['vault_pause', 'tvl_alert'],
      status: 'active',
    });
    const sent = await storeEvent('vault_pause');
    const skipped = await storeEvent('apy_change');
    expect(await deliveryOf(sent)).toMatchObject({ status: 'delivered' });
    expect(requestOf(other, sent)!.url).toBe('/moved');
    expect(await json<Json[]>(['webhook', 'deliveries', '--event', skipped])).toEqual([]);

    const all = await cli(['webhook', 'update', id, '--all-events']);
    expect(all).toMatchObject({
      code: 0,
      out: `Updated ${id} for Acme Wallet (live): ${other.url}/moved\nEvent types: all\n`,
    });
  });

  it('rotate --grace: the old secret verifies during the grace, not after a rotation with none', async () => {
    const before = Date.now();
    const rotated = await json(['webhook', 'rotate', id, '--grace', '30m']);
    const after = Date.now();
    expect(rotated).toMatchObject({
      id,
      secret: expect.stringMatching(/^whsec_/),
      previous_secret_fingerprint: expect.stringMatching(/^sha256:/),
    });
    const expires = Date.parse(rotated.previous_secret_expires_at as string);
    // The database's clock sets it: within a generous second of this process's view.
    expect(expires).toBeGreaterThanOrEqual(before + 30 * 60_000 - 1_000);
    expect(expires).toBeLessThanOrEqual(after + 30 * 60_000 + 1_000);
    const newSecret = rotated.secret as string;

    const during = await json(['webhook', 'ping', id]);
    await deliveryOf(during.event_id as string);
    const duringRequest = requestOf(other, during.event_id as string)!;
    expect(verifies(secret, duringRequest)).toBe(true);
    expect(verifies(newSecret, duringRequest)).toBe(true);
    expect((await json<Json[]>(['webhook', 'list']))[0]).toMatchObject({
      previous_secret_fingerprint: rotated.previous_secret_fingerprint,
      previous_secret_expires_at: rotated.previous_secret_expires_at,
    });

    const none = await cli(['webhook', 'rotate', id, '--grace', '0']);
    expect(none.code).toBe(0);
    expect(none.out).toMatch(
      new RegExp(
        `^Rotated the secret of ${id}; the previous one no longer signs\\.\\nFingerprint: sha256:[0-9a-f]{16}\\nSigning secret \\(shown once; store it now\\): whsec_\\S+\\n$`,
      ),
    );
    const latest = /Signing secret \(shown once; store it now\): (whsec_\S+)/.exec(none.out)![1]!;
    const afterNone = await json(['webhook', 'ping', id]);
    await deliveryOf(afterNone.event_id as string);
    const afterRequest = requestOf(other, afterNone.event_id as string)!;
    expect(verifies(latest, afterRequest)).toBe(true);
    expect(verifies(newSecret, afterRequest)).toBe(false);
    expect(verifies(secret, afterRequest)).toBe(false);

    const text = await cli(['webhook', 'rotate', id, '--grace', '7d']);
    expect(text.out).toMatch(
      /^Rotated the secret of whk_\w+\. The previous one \(sha256:[0-9a-f]{16}\) keeps signing until \S+Z: webhook-signature carries both until then; X-Service-Signature uses the new one now\.\n/,
    );
    for (const bad of ['31d', '5x', '-1h', '1.5h']) {
      expect(await misused(['webhook', 'rotate', id, '--grace', bad]), bad).toMatch(
        /option '--grace <duration>' argument '.*' is invalid\. must be 0, or a duration like 30m, 24h or 7d, at most 30d/,
      );
    }
    expect(await refused(['webhook', 'rotate', 'whk_nope', '--grace', '1h'])).toBe(
      'yield-service: no active webhook destination with id whk_nope\n',
    );
  });
});

describe('the bin, spawned (smoke test of the webhook commands)', () => {
  it('lists destinations from DATA_DIR without creating a master key', {
    timeout: 60_000,
  }, async () => {
    // A migrated copy in DATA_DIR: no initdb (seconds).
    // Beside the test databases (scratchDir): the copy is renamed in, which needs one file system.
    const dataDir = scratchDir('pys-cli-webhooks-smoke-');
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

describe('webhook --grace help', () => {
  it('shows the default as "24h", as key roll --expires does, not in milliseconds', async () => {
    for (const args of [
      ['webhook', 'rotate', '--help'],
      ['webhook', 'inbound-secret', 'set', '--help'],
    ]) {
      const r = await runCliInProcess(args, { env: {} });
      expect(r.code).toBe(0);
      const help = r.out.replace(/\s+/g, ' ');
      expect(help).toContain('(0, 30m, 24h, 7d…) (default: "24h")');
      expect(help).not.toContain('86400000');
    }
  });
});
