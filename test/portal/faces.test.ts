/**
 * One operation behind every face (#31 item 5): the same changes made by a member in the portal (to
 * one partner) and by the operator's CLI (to another) leave the same audit rows — the same actions,
 * environments and targets, only the actor, the member and the client address differ — because both
 * faces call the one function of src/operations/ that writes the change and its row.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedSettingsRepo } from '../../src/db/embed-settings.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { type Client, type Harness, portalHarness } from './harness.ts';

let h: Harness;
let owner: Client;
let viaCli: Partner;
const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-faces-'));
const masterKey = randomBytes(32);

beforeAll(async () => {
  // One master key for both faces, as one deployment has: the CLI refuses to store a secret
  // under a key the stored secrets are not under.
  h = await portalHarness({ masterKey });
  owner = await h.signedIn('owner-faces@example.com', 'owner');
  viaCli = await createPartnersRepo(h.t.db).create(`cli-partner-${Date.now()}`);
  // Both partners start alike: embed settings exist for each environment.
  for (const p of [h.partner, viaCli]) {
    for (const env of ['live', 'test'] as const) {
      expect(await createEmbedSettingsRepo(h.t.db).get(p.id, env)).toBeDefined();
    }
  }
});
afterAll(async () => {
  await h?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const cliEnv = {
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  LOCAL_CHAIN_PORT: '1',
  MASTER_KEY: masterKey.toString('hex'),
  PORTAL_PUBLIC_URL: 'http://localhost/portal',
};
async function cli(...args: string[]): Promise<string> {
  const r = await runCliInProcess(args, { env: cliEnv, database: h.t.db });
  expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
  return r.out;
}
const json = async (...args: string[]) => JSON.parse(await cli(...args, '--json'));

async function post(c: Client, page: string, url: string, fields: Record<string, string> = {}) {
  await c.get(page);
  const res = await c.post(url, fields);
  expect(res.status, `${url}: ${res.body.slice(0, 300)}`).toBeLessThan(400);
  return res;
}

/**
 * The audit rows of a partner, oldest first, with what differs by design replaced. The rows of one
 * change share its transaction's timestamp: among them the order is by what they say (their ids
 * are random), after the replacement, so both faces sort alike.
 */
async function rows(partner: Partner, tag: string) {
  const { rows } = await h.t.db.query<{
    at: string;
    action: string;
    environment: string | null;
    target: string | null;
  }>(
    `SELECT created_at::text AS at, action, environment, target FROM portal_audit_log
     WHERE partner_id = $1 AND action <> 'member.signed_in'
       AND coalesce(target, '') NOT LIKE 'owner-faces%' ORDER BY created_at`,
    [partner.id],
  );
  const key = (r: { at: string; action: string; environment: string | null; target: string }) =>
    `${r.at}\u0000${r.action}\u0000${r.environment ?? ''}\u0000${r.target}`;
  const masked = rows.map(({ at, ...r }) => ({
    at,
    ...r,
    target: (r.target ?? '')
      .replace(/\b(key|whk|dlv|evt)_[\w-]+/g, '$1_…')
      .replace(/svc_test_…[\w-]{4}/g, 'svc_test_…XXXX')
      .replace(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/g, 'TIME')
      .replaceAll(tag, 'TAG'),
  }));
  masked.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return masked.map(({ at: _at, ...r }) => r);
}

describe('the portal and the CLI', () => {
  it('write identical audit rows for the same changes', async () => {
    const since = '2026-01-01T00:00';
    // --- through the portal, by a member of the first partner ---
    const keys = '/portal/test/keys';
    const made = await post(owner, keys, keys, { name: 'backend' });
    const keyId = /\/portal\/test\/keys\/(key_\w+)\/roll/.exec(made.body)![1]!;
    await post(owner, `${keys}/${keyId}/roll`, `${keys}/${keyId}/roll`, { expires: '24h' });
    await post(owner, `${keys}/${keyId}/revoke`, `${keys}/${keyId}/revoke`);
    const hooks = '/portal/test/webhooks';
    const added = await post(owner, hooks, hooks, { url: 'https://hooks.example.com/portal' });
    const whk = /\/portal\/test\/webhooks\/(whk_\w+)"/.exec(added.body)![1]!;
    const here = `${hooks}/${whk}`;
    await post(owner, `${here}/edit`, `${here}/edit`, {
      url: 'https://hooks.example.com/portal-2',
      event_types: 'deposit.confirmed',
    });
    await post(owner, `${here}/rotate`, `${here}/rotate`, { grace: '24h' });
    await post(owner, here, `${here}/ping`);
    await post(owner, `${here}/disable`, `${here}/disable`, { note: 'moving hosts' });
    await post(owner, here, `${here}/enable`);
    await post(owner, here, `${here}/replay-failed`, { since });
    await post(owner, `${here}/remove`, `${here}/remove`);
    await post(owner, `${hooks}/inbound`, `${hooks}/inbound/secret`);
    await post(owner, '/portal/test/embed', '/portal/test/embed/origins', {
      origin: 'https://wallet.example.com',
    });
    await post(owner, '/portal/test/embed', '/portal/test/embed/origins/remove', {
      origin: 'https://wallet.example.com',
    });
    await post(owner, '/portal/test/team', '/portal/test/team', {
      email: 'dev-portal@example.com',
      role: 'developer',
    });

    // --- through the CLI, by the operator, on the second partner ---
    const p = viaCli.name;
    const key = await json('key', 'create', '--partner', p, '--env', 'test', '--name', 'backend');
    await cli('key', 'roll', key.id, '--expires', '24h');
    await cli('key', 'revoke', key.id);
    const d = await json(
      'webhook',
      'add',
      '--partner',
      p,
      '--env',
      'test',
      '--url',
      'https://hooks.example.com/cli',
    );
    await cli(
      'webhook',
      'update',
      d.id,
      '--url',
      'https://hooks.example.com/cli-2',
      '--events',
      'deposit.confirmed',
    );
    await cli('webhook', 'rotate', d.id, '--grace', '24h');
    await cli('webhook', 'ping', d.id);
    await cli('webhook', 'disable', d.id, '--note', 'moving hosts');
    await cli('webhook', 'enable', d.id);
    await cli('webhook', 'replay', '--destination', d.id, '--failed-since', `${since}:00Z`);
    await cli('webhook', 'remove', d.id);
    await cli('webhook', 'inbound-secret', 'set', '--partner', p, '--env', 'test');
    const origin = ['--partner', p, '--env', 'test', '--origin', 'https://wallet.example.com'];
    await cli('embed', 'origins', 'add', ...origin);
    await cli('embed', 'origins', 'remove', ...origin);
    await cli(
      'portal',
      'invite',
      '--partner',
      p,
      '--email',
      'dev-cli@example.com',
      '--role',
      'developer',
    );

    const portalRows = await rows(h.partner, 'portal');
    const cliRows = await rows(viaCli, 'cli');
    expect(portalRows.map((r) => r.action)).toEqual([
      'key.created',
      'key.rolled',
      'key.revoked',
      'webhook.added',
      'webhook.updated',
      'webhook.rotated',
      'webhook.pinged',
      'webhook.disabled',
      'webhook.enabled',
      'webhook.replayed',
      'webhook.removed',
      'inbound.secret_set',
      'embed.origin_added',
      'embed.origin_removed',
      'member.invited',
    ]);
    expect(cliRows).toEqual(portalRows);
    // Only who differs: a member with their address, or the operator with neither.
    const { rows: actors } = await h.t.db.query<{ actor: string; ip: string | null; n: number }>(
      `SELECT actor, ip, count(*)::int AS n FROM portal_audit_log
       WHERE partner_id = ANY($1) AND action <> 'member.signed_in'
         AND coalesce(target, '') NOT LIKE 'owner-faces%' GROUP BY actor, ip ORDER BY actor`,
      [[h.partner.id, viaCli.id]],
    );
    expect(actors).toEqual([
      { actor: 'operator', ip: null, n: 15 },
      { actor: 'owner-faces@example.com', ip: '127.0.0.1', n: 15 },
    ]);
  });
});
