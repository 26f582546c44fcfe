/**
 * `npx tsx bench/portal-profile.ts`: where a portal page's time goes, request by request, in one
 * process (no HTTP, no load): the number of SQL queries each page runs, the time spent waiting on
 * them, and the rest (session hook, templates, gzip), over PROFILE_RUNS sequential requests per page
 * (median). PGlite by default, PostgreSQL at BENCH_DATABASE_URL. It measures; it never fails on a
 * slow machine.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDatabase, type Database } from '../src/db/client.ts';
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

const RUNS = Number(process.env.PROFILE_RUNS ?? 50);
const dir = mkdtempSync(path.join(tmpdir(), 'pys-portal-profile-'));
const inner = process.env.BENCH_DATABASE_URL
  ? await createDatabase({ engine: 'postgres', url: process.env.BENCH_DATABASE_URL })
  : await createDatabase({ engine: 'pglite', dataDir: path.join(dir, 'pglite') });
await migrate(inner);

/** The database, counting the queries and the time spent waiting on them. */
const meter = { queries: 0, ms: 0, sql: [] as string[] };
const timed =
  <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
  async (...a: A): Promise<R> => {
    const t0 = performance.now();
    try {
      return await fn(...a);
    } finally {
      meter.queries++;
      meter.ms += performance.now() - t0;
      meter.sql.push(
        `${(performance.now() - t0).toFixed(2)} ms  ${String(a[0]).replace(/\s+/g, ' ').slice(0, 90)}`,
      );
    }
  };
const db: Database = {
  ...inner,
  engine: inner.engine,
  query: timed(inner.query.bind(inner)) as Database['query'],
  transaction: (fn) =>
    inner.transaction((tx) => fn({ ...tx, query: timed(tx.query.bind(tx)) as Database['query'] })),
  close: () => inner.close(),
};

const partner = await createPartnersRepo(inner).create('Acme Wallet');
const member = await inviteMember(inner, {
  partnerId: partner.id,
  email: 'owner@acme.example',
  role: 'owner',
});
const products = await seedProducts(inner, partner.id, [
  { slug: 'usdc-core', displayName: 'USDC Core', environment: 'live', status: 'active', days: 366 },
  { slug: 'usdc-plus', displayName: 'USDC Plus', environment: 'live', status: 'active', days: 200 },
]);
const box = createSecretBox(randomBytes(32));
const { destination } = await createWebhookDestinationsRepo(inner, box).add({
  partnerId: partner.id,
  environment: 'live',
  url: 'https://hooks.acme.example/yield',
});
// Lifecycle events (fanned out to the destination as deliveries) and inbound events, as the bench has.
const { createEventsRepo } = await import('../src/db/events.ts');
const { createInboundEventsRepo } = await import('../src/db/inbound-events.ts');
const { createHash } = await import('node:crypto');
let lifecycleId = '';
for (let i = 0; i < 40; i++) {
  const tx = `0x${i.toString(16).padStart(64, '0')}` as const;
  const e = await createEventsRepo(inner).insert({
    partnerId: partner.id,
    environment: 'live',
    productId: products[0]!.id,
    eventType: 'deposit.confirmed',
    dedupeKey: `deposit.confirmed:31337:${tx}:0`,
    payload: { tx_hash: tx },
    occurredAt: new Date(),
    chain: { chainId: 31337, blockNumber: BigInt(i), blockHash: tx, txHash: tx, logIndex: 0 },
  });
  lifecycleId = e!.id;
}
for (let i = 0; i < 60; i++) {
  const body = JSON.stringify({ n: i });
  await createInboundEventsRepo(inner).store({
    partnerId: partner.id,
    environment: 'live',
    idempotencyKey: `k-${i}`,
    eventType: 'ping',
    bodySha256: createHash('sha256').update(body).digest(),
    body,
    occurredAt: new Date(),
  });
}
const app = await buildApp({
  db,
  secretBox: box,
  logger: createLogger('warn'),
  portal: {
    mailer: createOutboxMailer(path.join(dir, 'outbox'), 'Portal <portal@bench>'),
    publicUrl: () => 'http://127.0.0.1/portal',
    idleMs: 60 * 60_000,
    addresses: createAddressPolicy(),
    signInLimit: { max: 10_000, windowMs: 60_000 },
  },
});
await app.ready();

// Sign in by link, as the browser does.
const link = new URL(await issueSignInUrl(inner, 'http://127.0.0.1/portal', member.id));
const confirm = await app.inject({ url: `${link.pathname}${link.search}` });
const csrf = /name="_csrf" value="([^"]+)"/.exec(confirm.body)![1]!;
const jar = Object.fromEntries(confirm.cookies.map((c) => [c.name, c.value]));
const signedIn = await app.inject({
  method: 'POST',
  url: '/portal/sign-in/link',
  cookies: jar,
  payload: { _csrf: csrf, token: link.searchParams.get('token')! },
});
const cookies = {
  ...jar,
  ...Object.fromEntries(signedIn.cookies.map((c) => [c.name, c.value])),
};

const pages = [
  '/live/products',
  `/live/products/${products[0]!.slug}`,
  `/live/products/${products[0]!.slug}?days=365`,
  '/live/keys',
  '/live/team',
  '/live/audit',
  '/live/account',
  '/live/webhooks',
  `/live/webhooks/${destination.id}`,
  '/live/webhooks/inbound',
  `/live/webhooks/events/${lifecycleId}`,
];
const median = (v: number[]) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
console.log(`portal profile (${inner.engine}), ${RUNS} sequential requests per page, medians`);
console.log('page                                   status  queries  db ms  total ms  other ms');
// PROFILE_PAGES: comma-separated parts of the URLs to measure (all when unset), e.g. `webhooks/whk`.
const only = (process.env.PROFILE_PAGES ?? '').split(',').filter(Boolean);
for (const url of pages.filter((u) => only.length === 0 || only.some((o) => u.includes(o)))) {
  const totals: number[] = [];
  const dbs: number[] = [];
  let queries = 0;
  let status = 0;
  let sql: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    meter.queries = 0;
    meter.ms = 0;
    meter.sql = [];
    const t0 = performance.now();
    const res = await app.inject({
      url: `/portal${url}`,
      cookies,
      headers: { 'accept-encoding': 'gzip' },
    });
    totals.push(performance.now() - t0);
    dbs.push(meter.ms);
    queries = meter.queries;
    status = res.statusCode;
    sql = meter.sql;
  }
  const t = median([...totals]);
  const d = median([...dbs]);
  console.log(
    `${url.padEnd(38)} ${String(status).padStart(6)}  ${String(queries).padStart(7)}  ${d.toFixed(2).padStart(5)}  ${t.toFixed(2).padStart(8)}  ${(t - d).toFixed(2).padStart(8)}`,
  );
  if (process.env.PROFILE_SQL) for (const s of sql) console.log(`    ${s}`);
}
await app.close();
await inner.close();
rmSync(dir, { recursive: true, force: true });
