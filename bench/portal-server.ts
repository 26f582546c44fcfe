/**
 * The service's api app with the portal, for `npm run bench:portal`, in its own process: a fresh
 * PGlite database under a temporary directory (or PostgreSQL at BENCH_DATABASE_URL), a partner with
 * MEMBERS owners, API keys in both environments, audit rows, products with a year of daily
 * snapshots, a webhook destination with deliveries, and inbound events (with duplicates, and one
 * linked to its lifecycle event). Prints one JSON line: the portal's address, the product slugs,
 * the destination and lifecycle event ids, and a one-time sign-in URL per member (the bench signs
 * them in over HTTP, as browsers would).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApiKeysRepo, rollApiKey } from '../src/db/api-keys.ts';
import { createDatabase } from '../src/db/client.ts';
import { createEventsRepo } from '../src/db/events.ts';
import { createInboundEventsRepo } from '../src/db/inbound-events.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPartnersRepo } from '../src/db/partners.ts';
import { createWebhookDestinationsRepo } from '../src/db/webhook-destinations.ts';
import { createLogger } from '../src/logger.ts';
import { createOutboxMailer } from '../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../src/portal/sign-in-links.ts';
import { buildApp } from '../src/server/app.ts';
import { createAddressPolicy } from '../src/webhooks/address-policy.ts';
import { createSecretBox } from '../src/webhooks/secret-box.ts';
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

// Webhooks: a destination of every event type, 40 lifecycle events (each fanned out to it as a
// delivery), and 60 inbound events, every third repeated as a duplicate, the last one a deposit
// linked to the lifecycle event of its transaction.
const box = createSecretBox(randomBytes(32));
const live = products[0]!;
const { destination } = await createWebhookDestinationsRepo(db, box).add({
  partnerId: partner.id,
  environment: 'live',
  url: 'https://hooks.acme.example/yield',
});
const events = createEventsRepo(db);
let lifecycleId = '';
for (let i = 0; i < 40; i++) {
  const tx = `0x${i.toString(16).padStart(64, '0')}` as const;
  const e = await events.insert({
    partnerId: partner.id,
    environment: 'live',
    productId: live.id,
    eventType: 'deposit.confirmed',
    dedupeKey: `deposit.confirmed:31337:${tx}:0`,
    payload: { product_slug: live.slug, tx_hash: tx, assets: '1250.5' },
    occurredAt: new Date(Date.now() - (40 - i) * 60_000),
    chain: { chainId: 31337, blockNumber: BigInt(100 + i), blockHash: tx, txHash: tx, logIndex: 0 },
  });
  lifecycleId = e!.id;
}
const inbound = createInboundEventsRepo(db);
for (let i = 0; i < 60; i++) {
  const last = i === 59;
  const body = JSON.stringify({ occurred_at: new Date().toISOString(), data: { n: i } });
  const event = {
    partnerId: partner.id,
    environment: 'live' as const,
    idempotencyKey: `bench-${i}`,
    eventType: last ? 'deposit.submitted' : 'ping',
    bodySha256: createHash('sha256').update(body).digest(),
    body,
    occurredAt: new Date(),
    ...(last
      ? {
          tx: {
            productId: live.id,
            chainId: 31337,
            txHash: `0x${(39).toString(16).padStart(64, '0')}`,
          },
        }
      : {}),
  };
  await inbound.store(event);
  if (i % 3 === 0) await inbound.store(event);
}

let port = 0;
const app = await buildApp({
  db,
  secretBox: box,
  logger: createLogger('warn'),
  portal: {
    mailer: createOutboxMailer(path.join(dir, 'outbox'), 'Portal <portal@bench>'),
    publicUrl: () => `http://127.0.0.1:${port}/portal`,
    idleMs: 60 * 60_000,
    addresses: createAddressPolicy(),
    signInLimit: { max: 10_000, windowMs: 60_000 },
  },
});
await app.listen({ host: '127.0.0.1', port: 0 });
port = (app.server.address() as { port: number }).port;
const portal = `http://127.0.0.1:${port}/portal`;
const links = [];
for (const m of members) links.push(await issueSignInUrl(db, portal, m.id));
process.stdout.write(
  `${JSON.stringify({
    portal,
    links,
    products: products.map((p) => p.slug),
    destination: destination.id,
    event: lifecycleId,
  })}\n`,
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
