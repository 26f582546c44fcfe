/**
 * Permissions declared with each route and enforced by one hook (#31 item 4): over the portal's
 * whole route table, every state-changing route names the role it requires (or is public: sign-in),
 * and a route that names none is refused when it is registered.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { undeclared } from '../../src/portal/access.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { portalPlugin } from '../../src/portal/plugin.ts';
import { freshDatabase, scratchDir, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

let t: TestDatabase;
const routes: RouteOptions[] = [];
let app: ReturnType<typeof Fastify>;

beforeAll(async () => {
  t = await freshDatabase('pglite');
  app = Fastify();
  // Registered first, at the root: sees every route of the portal's plugins.
  app.addHook('onRoute', (route: RouteOptions) => {
    routes.push(route);
  });
  await app.register(portalPlugin, {
    prefix: '/portal',
    db: t.db,
    logger: captureLogger().logger,
    mailer: createOutboxMailer(scratchDir('pys-access-'), 'Portal <portal@test>'),
    publicUrl: () => 'http://localhost/portal',
    idleMs: 60_000,
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await t?.drop();
});

const requirement = (r: RouteOptions) =>
  (r.config as { requires?: string; portalPublic?: boolean } | undefined)?.requires ??
  ((r.config as { portalPublic?: boolean } | undefined)?.portalPublic ? 'public' : undefined);

describe('portal modules', () => {
  it('are one page (or one group of a page’s changes) per file, none over 300 lines', () => {
    const root = path.join(import.meta.dirname, '../../src/portal');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    );
    expect(files.length).toBeGreaterThan(40);
    const long = files
      .map((f) => [f, readFileSync(path.join(root, f), 'utf8').split('\n').length] as const)
      .filter(([, lines]) => lines > 300);
    expect(long).toEqual([]);
  });
});

describe('portal route table', () => {
  it('declares the role of every state-changing route', () => {
    const changes = routes.filter((r) => r.method === 'POST');
    expect(changes.length).toBe(28);
    const table = Object.fromEntries(changes.map((r) => [r.url, requirement(r)]));
    expect(table).toEqual({
      '/portal/sign-in': 'public',
      '/portal/sign-in/link': 'public',
      '/portal/sign-out': 'member',
      '/portal/passkeys/register/options': 'member',
      '/portal/passkeys/register': 'member',
      '/portal/passkeys/sign-in/options': 'public',
      '/portal/passkeys/sign-in': 'public',
      '/portal/sign-out-everywhere': 'member',
      '/portal/:env/account/passkeys/:id/remove': 'member',
      '/portal/:env/keys': 'keys.manage',
      '/portal/:env/keys/:id/roll': 'keys.manage',
      '/portal/:env/keys/:id/revoke': 'keys.manage',
      '/portal/:env/team': 'team.manage',
      '/portal/:env/team/:id/remove': 'team.manage',
      '/portal/:env/team/:id/resend': 'team.manage',
      '/portal/:env/team/:id/cancel': 'team.manage',
      '/portal/:env/webhooks': 'webhooks.manage',
      '/portal/:env/webhooks/inbound/secret': 'webhooks.manage',
      '/portal/:env/webhooks/:id/deliveries/:delivery/replay': 'webhooks.manage',
      '/portal/:env/webhooks/:id/replay-failed': 'webhooks.manage',
      '/portal/:env/webhooks/:id/ping': 'webhooks.manage',
      '/portal/:env/webhooks/:id/enable': 'webhooks.manage',
      '/portal/:env/webhooks/:id/rotate': 'webhooks.manage',
      '/portal/:env/webhooks/:id/remove': 'webhooks.manage',
      '/portal/:env/webhooks/:id/edit': 'webhooks.manage',
      '/portal/:env/webhooks/:id/disable': 'webhooks.manage',
      '/portal/:env/embed/origins': 'embed.manage',
      '/portal/:env/embed/origins/remove': 'embed.manage',
    });
  });

  it('declares one for every page too', () => {
    const undeclared = routes.filter((r) => !requirement(r)).map((r) => `${r.method} ${r.url}`);
    expect(undeclared).toEqual([]);
  });

  it('names a route that declares none (the check the plugin runs as each route registers)', () => {
    const handler = async () => 'ok';
    expect(undeclared({ method: 'POST', url: '/x', handler })).toBe('POST /x');
    expect(undeclared({ method: 'POST', url: '/x', handler, config: {} })).toBe('POST /x');
    expect(
      undeclared({ method: 'POST', url: '/x', handler, config: { requires: 'keys.manage' } }),
    ).toBeUndefined();
    expect(
      undeclared({ method: 'GET', url: '/x', handler, config: { portalPublic: true } }),
    ).toBeUndefined();
  });
});
