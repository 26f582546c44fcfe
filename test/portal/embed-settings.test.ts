/**
 * The Embed page (routes/embed-settings.ts) over HTTP (inject), on every engine: the environment's
 * public embed id and snippet; adding an origin checked as the CLI checks it (a path, http:// on a
 * public host, a wildcard refused in words), normalised, stored where the embed reads it; removing
 * one; every action checked against role, environment, partner and CSRF, and audited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedSettingsRepo } from '../../src/db/embed-settings.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { storageEngines } from '../helpers/db.ts';
import { type Harness, portalHarness, text } from './harness.ts';
import { seedProducts } from './products-fixture.ts';

describe.each(storageEngines())('the Embed page on %s', (engine) => {
  let h: Harness;
  let n = 0;
  const email = (tag: string) => `${tag}-${++n}@example.com`;
  /** Each test its own partner: its origin lists and audit rows hold only that test's changes. */
  const newPartner = () => createPartnersRepo(h.t.db).create(`Embed partner ${++n}`);

  beforeAll(async () => {
    h = await portalHarness({ engine });
  });
  afterAll(async () => h?.close());

  /** What the embed itself reads (by the public id): the list its CSP frame-ancestors carries. */
  const framedBy = async (partner: Partner, env: 'live' | 'test') => {
    const repo = createEmbedSettingsRepo(h.t.db);
    const s = (await repo.get(partner.id, env))!;
    return (await repo.findByEmbedId(s.embedId))!.allowedOrigins;
  };

  const auditOf = async (partner: Partner) =>
    (
      await h.t.db.query<{
        actor: string;
        action: string;
        environment: string | null;
        target: string | null;
      }>(
        `SELECT actor, action, environment, target FROM portal_audit_log
         WHERE partner_id = $1 AND action LIKE 'embed.%' ORDER BY created_at, id`,
        [partner.id],
      )
    ).rows;

  it('shows the embed id and a snippet with the host helper, and the nav links to it', async () => {
    const partner = await newPartner();
    await seedProducts(h.t.db, partner.id, [
      { slug: `core-${n}`, displayName: 'Core', environment: 'live', status: 'active', days: 0 },
      {
        slug: `new-${n}`,
        displayName: 'New',
        environment: 'live',
        status: 'pending_deploy',
        days: 0,
      },
    ]);
    const slug = `core-${n}`;
    const owner = await h.signedIn(email('show'), 'owner', partner);
    const repo = createEmbedSettingsRepo(h.t.db);
    const live = (await repo.get(partner.id, 'live'))!;
    const test = (await repo.get(partner.id, 'test'))!;

    const res = await owner.get('/portal/live/embed');
    expect(res.status).toBe(200);
    expect(res.body).toContain('<a href="/portal/live/embed" aria-current="page">Embed</a>');
    const words = text(res.body);
    expect(words).toContain(`Embed id ${live.embedId} Copy id`);
    expect(words).toContain('No origins yet No page can frame your live embed.');
    // The snippet: the host helper and the iframe URL of the active product (not the pending one).
    expect(words).toContain('<script src="http://localhost/embed/host.js"></script>');
    expect(words).toContain(`src: 'http://localhost/embed/${live.embedId}/${slug}'`);
    expect(words).not.toContain(`new-${n}`);
    expect(res.body).not.toContain(test.embedId);

    // The test environment: its own id; no product there yet, so a placeholder said in words.
    const t = text((await owner.get('/portal/test/embed')).body);
    expect(t).toContain(`Embed id ${test.embedId}`);
    expect(t).toContain(`src: 'http://localhost/embed/${test.embedId}/your-product-slug'`);
    expect(t).toContain("Replace your-product-slug with a product's slug once one is deployed.");
  });

  it('adds origins checked like the CLI, normalised and stored for the embed; removes them; audited', async () => {
    const partner = await newPartner();
    const actor = email('add');
    const owner = await h.signedIn(actor, 'owner', partner);
    await owner.get('/portal/live/embed');

    for (const [bad, why] of [
      [
        'https://wallet.example/checkout',
        'That is not an origin we can allow: "https://wallet.example/checkout" is not an origin: no path, query, fragment or credentials.',
      ],
      [
        'http://wallet.example',
        'That is not an origin we can allow: "http://wallet.example" must use https://; http:// is accepted only for a local page (localhost, 127.0.0.1, [::1]).',
      ],
      [
        'https://*.wallet.example',
        'That is not an origin we can allow: "https://*.wallet.example": wildcards are not accepted, list each origin.',
      ],
      [
        'wallet.example',
        'That is not an origin we can allow: "wallet.example" is not a URL; write an origin such as https://wallet.example.com.',
      ],
      ['   ', 'Enter an origin, such as https://wallet.example.com.'],
    ] as const) {
      const res = await owner.post('/portal/live/embed/origins', { origin: bad });
      expect(res.status, bad).toBe(400);
      const words = text(res.body);
      expect(words, bad).toContain(`There is a problem ${why}`);
      // The value is kept in the field to correct it, marked invalid.
      if (bad.trim()) expect(res.body).toContain(`value="${bad.replace('&', '&amp;')}"`);
      expect(res.body).toContain('aria-invalid="true"');
    }
    expect(await framedBy(partner, 'live')).toEqual([]);

    const added = await owner.post('/portal/live/embed/origins', {
      origin: ' HTTPS://Wallet.Example:443/ ',
    });
    expect(added.status).toBe(200);
    expect(text(added.body)).toContain(
      'https://wallet.example is allowed: pages there may frame your live embed.',
    );
    expect(added.body).toContain('aria-label="Remove https://wallet.example"');
    expect(
      (await owner.post('/portal/live/embed/origins', { origin: 'http://localhost:5173' })).status,
    ).toBe(200);
    expect(await framedBy(partner, 'live')).toEqual([
      'http://localhost:5173',
      'https://wallet.example',
    ]);
    // The other environment is untouched.
    expect(await framedBy(partner, 'test')).toEqual([]);

    // Twice: nothing changes, nothing audited.
    const twice = await owner.post('/portal/live/embed/origins', {
      origin: 'https://wallet.example',
    });
    expect(twice.status).toBe(200);
    expect(text(twice.body)).toContain(
      'https://wallet.example is already allowed. Nothing changed.',
    );

    const removed = await owner.post('/portal/live/embed/origins/remove', {
      origin: 'http://localhost:5173',
    });
    expect(removed.status).toBe(200);
    // The address bar shows the embed page, not the action's address.
    expect(removed.headers['hx-push-url']).toBe('/portal/live/embed');
    expect(text(removed.body)).toContain(
      'http://localhost:5173 is removed: pages there can no longer frame your live embed.',
    );
    expect(await framedBy(partner, 'live')).toEqual(['https://wallet.example']);
    // Removing what is not there (removed meanwhile, or never added) says so.
    const gone = await owner.post('/portal/live/embed/origins/remove', {
      origin: 'http://localhost:5173',
    });
    expect(gone.status).toBe(404);
    expect(text(gone.body)).toContain('That origin is not in the live list');

    expect(await auditOf(partner)).toEqual([
      {
        actor,
        action: 'embed.origin_added',
        environment: 'live',
        target: 'https://wallet.example',
      },
      { actor, action: 'embed.origin_added', environment: 'live', target: 'http://localhost:5173' },
      {
        actor,
        action: 'embed.origin_removed',
        environment: 'live',
        target: 'http://localhost:5173',
      },
    ]);
    // The audit log names the actions in words.
    expect(text((await owner.get('/portal/live/audit')).body)).toContain(
      'Removed an embed origin live http://localhost:5173',
    );
  });

  it('checks role, environment, partner and CSRF on every change', async () => {
    const partner = await newPartner();
    const repo = createEmbedSettingsRepo(h.t.db);
    await repo.addOrigins(partner.id, 'live', ['https://keep.example']);
    await repo.addOrigins(partner.id, 'test', ['https://keep.example']);
    const changes = (env: string): Array<[string, Record<string, string>]> => [
      [`/portal/${env}/embed/origins`, { origin: 'https://new.example' }],
      [`/portal/${env}/embed/origins/remove`, { origin: 'https://keep.example' }],
    ];

    // A viewer sees both environments' settings, with no form and no remove button; changes: 403.
    const viewer = await h.signedIn(email('viewer'), 'viewer', partner);
    for (const env of ['live', 'test']) {
      const seen = await viewer.get(`/portal/${env}/embed`);
      expect(seen.status).toBe(200);
      expect(text(seen.body)).toContain('https://keep.example');
      expect(seen.body).not.toContain('/embed/origins');
      expect(text(seen.body)).toContain(`Your role (viewer) can see the ${env} embed settings`);
    }
    for (const [url, fields] of [...changes('live'), ...changes('test')]) {
      const res = await viewer.post(url, fields);
      expect(res.status, `viewer ${url}`).toBe(403);
      expect(text(res.body)).toContain('As viewer you cannot change the');
    }

    // A developer changes the test list only.
    const developer = await h.signedIn(email('dev'), 'developer', partner);
    await developer.get('/portal/live/embed');
    expect((await developer.get('/portal/live/embed')).body).not.toContain('/embed/origins');
    for (const [url, fields] of changes('live')) {
      expect((await developer.post(url, fields)).status, `developer ${url}`).toBe(403);
    }
    expect(await repo.get(partner.id, 'live')).toMatchObject({
      allowedOrigins: ['https://keep.example'],
    });
    await developer.get('/portal/test/embed');
    expect(
      (await developer.post('/portal/test/embed/origins', { origin: 'https://dev.example' }))
        .status,
    ).toBe(200);
    expect((await repo.get(partner.id, 'test'))!.allowedOrigins).toEqual([
      'https://dev.example',
      'https://keep.example',
    ]);

    // An admin changes live.
    const admin = await h.signedIn(email('admin'), 'admin', partner);
    await admin.get('/portal/live/embed');
    expect(
      (await admin.post('/portal/live/embed/origins/remove', { origin: 'https://keep.example' }))
        .status,
    ).toBe(200);
    expect((await repo.get(partner.id, 'live'))!.allowedOrigins).toEqual([]);

    // Another partner's owner changes only their own lists, never this partner's.
    const strangerPartner = await newPartner();
    const stranger = await h.signedIn(email('stranger'), 'owner', strangerPartner);
    await stranger.get('/portal/test/embed');
    const strangerRemove = await stranger.post('/portal/test/embed/origins/remove', {
      origin: 'https://keep.example',
    });
    expect(strangerRemove.status).toBe(404);
    expect(
      (await stranger.post('/portal/test/embed/origins', { origin: 'https://theirs.example' }))
        .status,
    ).toBe(200);
    expect((await repo.get(partner.id, 'test'))!.allowedOrigins).toEqual([
      'https://dev.example',
      'https://keep.example',
    ]);
    expect((await repo.get(strangerPartner.id, 'test'))!.allowedOrigins).toEqual([
      'https://theirs.example',
    ]);
    expect((await stranger.get('/portal/test/embed')).body).not.toContain('keep.example');
    // No such environment.
    expect((await stranger.get('/portal/staging/embed')).status).toBe(404);

    // Without the form's token: refused, nothing changed.
    const owner = await h.signedIn(email('owner'), 'owner', partner);
    await owner.get('/portal/test/embed');
    for (const [url, fields] of changes('test')) {
      const forged = await owner.post(url, { ...fields, _csrf: 'forged' });
      expect(forged.status, url).toBe(403);
      expect(text(forged.body)).toContain('This form has expired');
    }
    expect((await repo.get(partner.id, 'test'))!.allowedOrigins).toEqual([
      'https://dev.example',
      'https://keep.example',
    ]);

    // Only the allowed changes were audited, each by whom and where.
    const rows = (await auditOf(partner)).map((r) => [r.action, r.environment, r.target]);
    expect(rows).toEqual([
      ['embed.origin_added', 'test', 'https://dev.example'],
      ['embed.origin_removed', 'live', 'https://keep.example'],
    ]);
  });

  it('keeps an environment to 50 origins; changes at once do not lose each other', async () => {
    const partner = await newPartner();
    const repo = createEmbedSettingsRepo(h.t.db);
    // Two additions and a removal at once (the CLI and the portal, two members): all kept.
    await repo.setOrigins(partner.id, 'live', ['https://old.example']);
    await Promise.all([
      repo.addOrigins(partner.id, 'live', ['https://a.example']),
      repo.addOrigins(partner.id, 'live', ['https://b.example']),
      repo.removeOrigins(partner.id, 'live', ['https://old.example']),
    ]);
    expect((await repo.get(partner.id, 'live'))!.allowedOrigins).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
    await expect(
      repo.setOrigins(
        partner.id,
        'live',
        Array.from({ length: 51 }, (_, i) => `https://site-${i}.example`),
      ),
    ).rejects.toThrow('an environment allows at most 50 origins');
    await repo.setOrigins(
      partner.id,
      'live',
      Array.from({ length: 50 }, (_, i) => `https://site-${i}.example`),
    );
    const owner = await h.signedIn(email('max'), 'owner', partner);
    await owner.get('/portal/live/embed');
    const res = await owner.post('/portal/live/embed/origins', {
      origin: 'https://one-more.example',
    });
    expect(res.status).toBe(400);
    expect(text(res.body)).toContain('An environment allows at most 50 origins.');
    expect((await repo.get(partner.id, 'live'))!.allowedOrigins).toHaveLength(50);
    // The limit is the repository's: the operator's CLI meets it too (addOrigins refuses it).
    await expect(repo.addOrigins(partner.id, 'live', ['https://cli.example'])).rejects.toThrow(
      'an environment allows at most 50 origins',
    );
    // One already there is no addition.
    expect(
      (await repo.addOrigins(partner.id, 'live', ['https://site-0.example']))!.allowedOrigins,
    ).toHaveLength(50);
  });
});
