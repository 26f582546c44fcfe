/**
 * The service's api app with the portal, for `npm run bench:portal`, in its own process: a fresh
 * PGlite database under a temporary directory (or PostgreSQL at BENCH_DATABASE_URL), a partner with
 * MEMBERS owners, API keys in both environments, audit rows, and products with a year of daily
 * snapshots. Prints one JSON line: the portal's address, the product slugs and a one-time sign-in
 * URL per member (the bench signs them in over HTTP, as browsers would).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/api/app.ts';
import { createApiKeysRepo, rollApiKey } from '../src/db/api-keys.ts';
import { createDatabase } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPartnersRepo } from '../src/db/partners.ts';
import { createLogger } from '../src/logger.ts';
import { createOutboxMailer } from '../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../src/portal/sign-in-links.ts';
import { seedProducts } from '../test/portal/products-fixture.ts';

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 20);
const dir = mkdtempSync(path.join(tmpdir(), 'pys-bench-portal-'));
const db = process.env.BENCH_DATABASE_URL
  ? await createDatabase({ engine: 'postgres', url: process.env.BENCH_DATABASE_URL })
  : await createDatabase({ engine: 'pglite', dataDir: path.join(dir, 'pglite') });
await migrate(db);

const partner = await createPartnersRepo(db).create('Acme Wallet');
const members = [];
for (let i = 0; i < MEMBERS; i++) {
  members.push(
    await inviteMember(db, {
      partnerId: partner.id,
      email: `member${i}@acme.example`,
      role: 'owner',
    }),
  );
}
const keys = createApiKeysRepo(db);
for (const env of ['live', 'test'] as const) {
  for (let i = 0; i < 6; i++) {
    const k = await keys.create(
      partner.id,
      env,
      `Backend ${env} ${i + 1}`,
      members[i % MEMBERS]!.id,
    );
    if (i === 1) await rollApiKey(db, k.record.id, '7d', members[0]!.id);
    if (i === 2) await keys.revoke(k.record.id);
  }
}
const products = await seedProducts(db, partner.id, [
  { slug: 'usdc-core', displayName: 'USDC Core', environment: 'live', status: 'active', days: 366 },
  { slug: 'usdc-plus', displayName: 'USDC Plus', environment: 'live', status: 'active', days: 200 },
  {
    slug: 'usdc-old',
    displayName: 'USDC Legacy',
    environment: 'live',
    status: 'deprecated',
    days: 90,
  },
  {
    slug: 'usdc-sandbox',
    displayName: 'USDC Sandbox',
    environment: 'test',
    status: 'active',
    days: 30,
  },
]);

let port = 0;
const app = await buildApp({
  db,
  logger: createLogger('warn'),
  portal: {
    mailer: createOutboxMailer(path.join(dir, 'outbox'), 'Portal <portal@bench>'),
    publicUrl: () => `http://127.0.0.1:${port}/portal`,
    idleMs: 60 * 60_000,
    signInLimit: { max: 10_000, windowMs: 60_000 },
  },
});
await app.listen({ host: '127.0.0.1', port: 0 });
port = (app.server.address() as { port: number }).port;
const portal = `http://127.0.0.1:${port}/portal`;
const links = [];
for (const m of members) links.push(await issueSignInUrl(db, portal, m.id));
process.stdout.write(
  `${JSON.stringify({ portal, links, products: products.map((p) => p.slug) })}\n`,
);

process.on('SIGTERM', () => {
  app
    .close()
    .then(() => db.close())
    .finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
});
