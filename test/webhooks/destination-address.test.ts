/**
 * Adding a destination, or moving it to a new URL (operations/webhook-destinations.ts), refuses a
 * host written as an IP address the sender's address policy refuses: the partner hears it at once,
 * not as a failure at every send. Host names are not resolved then (the sender judges what they
 * resolve to at connect time), and an edit that keeps the URL is not checked again.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/client.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { OPERATOR } from '../../src/operations/actor.ts';
import { addDestination, updateDestination } from '../../src/operations/webhook-destinations.ts';
import {
  configuredAddressPolicy,
  createAddressPolicy,
  parseCidrList,
} from '../../src/webhooks/address-policy.ts';
import {
  DestinationAddressError,
  DestinationUrlError,
} from '../../src/webhooks/destination-url.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

const box = createSecretBox(randomBytes(32));
/** The sender's policy with no WEBHOOK_ALLOWED_CIDRS: public addresses only. */
const strict = configuredAddressPolicy({ WEBHOOK_ALLOWED_CIDRS: [] });

describe('a destination at a non-public IP address', () => {
  let t: TestDatabase;
  let db: Database;
  let partner: Partner;
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    db = t.db;
    partner = await createPartnersRepo(db).create('Acme');
  });
  afterAll(() => t.drop());

  const add = (url: string, addresses = strict) =>
    addDestination(db, box, addresses, OPERATOR, {
      partnerId: partner.id,
      environment: 'live',
      url,
    });
  const stored = async () =>
    (await createWebhookDestinationsRepo(db, box).list({ partnerId: partner.id })).map(
      (d) => d.url,
    );
  const auditRows = async () =>
    (
      await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM portal_audit_log WHERE partner_id = $1',
        [partner.id],
      )
    ).rows[0]!.n;

  /** The refusal of `url`, which must be a DestinationAddressError (so every face shows it). */
  async function refusal(url: string, addresses = strict): Promise<DestinationAddressError> {
    const err = await add(url, addresses).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, url).toBeInstanceOf(DestinationAddressError);
    expect(err, url).toBeInstanceOf(DestinationUrlError);
    return err as DestinationAddressError;
  }

  it('is refused when added: private, loopback, link-local, unique-local, IPv4 and IPv6', async () => {
    const before = { urls: await stored(), audit: await auditRows() };
    for (const [url, said] of [
      ['https://10.0.0.5/hook', '10.0.0.5 is a private address'],
      ['https://172.16.4.2/', '172.16.4.2 is a private address'],
      ['https://192.168.1.10:8443/x', '192.168.1.10 is a private address'],
      ['https://127.0.0.1/x', '127.0.0.1 is a loopback address'],
      ['https://[::1]/x', '[::1] is a loopback address'],
      ['https://169.254.169.254/latest/meta-data', '169.254.169.254 is a link-local address'],
      ['https://[fe80::1]/x', '[fe80::1] is a link-local address'],
      ['https://[fd00::1]/', '[fd00::1] is a unique-local (private) address'],
      ['https://0.0.0.0/', '0.0.0.0 is the unspecified address'],
      ['https://100.64.0.1/', '100.64.0.1 is a shared (carrier-grade NAT) address'],
      // The URL parser writes these IPv4 forms as the dotted quad they are.
      ['https://2130706433/x', '127.0.0.1 is a loopback address'],
      ['https://0x7f.1/x', '127.0.0.1 is a loopback address'],
    ] as const) {
      const err = await refusal(url);
      expect(err.message, url).toBe(
        `${said}; webhooks are sent only to public addresses: use a public host name or address`,
      );
      expect(err.code).toBe('destination_url_invalid');
    }
    expect({ urls: await stored(), audit: await auditRows() }).toEqual(before);
  });

  it('is refused when IPv4-mapped IPv6, judged as the IPv4 address it maps', async () => {
    expect((await refusal('https://[::ffff:10.0.0.5]/x')).message).toMatch(
      /^\[::ffff:a00:5\] \(10\.0\.0\.5\) is a private address; /,
    );
    expect((await refusal('https://[::ffff:169.254.169.254]/')).message).toMatch(
      /^\[::ffff:a9fe:a9fe\] \(169\.254\.169\.254\) is a link-local address; /,
    );
    expect((await refusal('https://[::ffff:7f00:1]/')).verdict).toMatchObject({
      address: '127.0.0.1',
      range: 'loopback',
    });
  });

  it('is accepted where WEBHOOK_ALLOWED_CIDRS lets its range through, and only there', async () => {
    const allowing = configuredAddressPolicy({
      WEBHOOK_ALLOWED_CIDRS: parseCidrList('10.0.0.0/8, ::1/128'),
    });
    expect((await add('https://10.0.0.5/hook', allowing)).destination.url).toBe(
      'https://10.0.0.5/hook',
    );
    expect((await add('https://[::1]:8443/x', allowing)).destination.url).toBe(
      'https://[::1]:8443/x',
    );
    expect((await refusal('https://192.168.1.10/', allowing)).verdict.range).toBe('private');
    expect((await refusal('https://[::2]/', allowing)).verdict.range).not.toBe('unicast');
  });

  it('accepts a public IP address and any host name, which is not resolved now', async () => {
    // Beside each, the same kind of URL at a non-public address: refused.
    for (const [url, refused] of [
      ['https://8.8.8.8/hook', 'https://10.8.8.8/hook'],
      ['https://[2606:4700:4700::1111]/hook', 'https://[fd47::1111]/hook'],
      // Names are judged on what they resolve to at each send: even one that resolves to loopback
      // today, or to nothing at all, is accepted here.
      ['https://localhost/hook', 'https://127.0.0.1/hook'],
      ['https://hooks.no-such-name.invalid/hook', 'https://[::1]/hook'],
    ] as const) {
      expect((await add(url)).destination.url).toBe(url);
      await refusal(refused);
    }
  });

  it('is refused when an edit moves the URL there; an edit that keeps the URL is not checked', async () => {
    const { destination: d } = await add('https://hooks.example.com/a');
    const audit = await auditRows();
    const move = (url: string) =>
      updateDestination(db, box, strict, OPERATOR, d.id, { url }).then(
        () => undefined,
        (e: unknown) => e,
      );
    const moved = await move('https://[fd12:3456::1]/a');
    expect(moved).toBeInstanceOf(DestinationAddressError);
    expect((moved as Error).message).toMatch(/^\[fd12:3456::1\] is a unique-local \(private\)/);
    expect(await move('https://127.0.0.1/a')).toBeInstanceOf(DestinationAddressError);
    expect(await move('https://[::ffff:192.168.0.1]/a')).toBeInstanceOf(DestinationAddressError);
    const kept = await createWebhookDestinationsRepo(db, box).find(d.id);
    expect(kept!.url).toBe('https://hooks.example.com/a');
    expect(await auditRows()).toBe(audit);

    // One added while the operator allowed 10/8, the allowance since withdrawn: edits of its event
    // types (the portal's form sends the URL back as it is) still work, and so does a move away.
    const { destination: old } = await add(
      'https://10.1.2.3/hook',
      createAddressPolicy(parseCidrList('10.0.0.0/8')),
    );
    const types = await updateDestination(db, box, strict, OPERATOR, old.id, {
      url: ' https://10.1.2.3/hook ',
      eventTypes: ['vault_pause'],
    });
    expect(types).toMatchObject({ url: 'https://10.1.2.3/hook', eventTypes: ['vault_pause'] });
    expect(
      await updateDestination(db, box, strict, OPERATOR, old.id, { eventTypes: null }),
    ).toMatchObject({ url: 'https://10.1.2.3/hook', eventTypes: null });
    expect(
      await updateDestination(db, box, strict, OPERATOR, old.id, {
        url: 'https://hooks.example.com/b',
      }),
    ).toMatchObject({ url: 'https://hooks.example.com/b' });
    // And moving it back is a change like any other: refused.
    const back = await updateDestination(db, box, strict, OPERATOR, old.id, {
      url: 'https://10.1.2.3/hook',
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(back).toBeInstanceOf(DestinationAddressError);
  });
});
