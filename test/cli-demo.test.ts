/**
 * `start` on a fresh DATA_DIR provisions the demo on the local chain and deploys the pending
 * launch products, the indexer and the metrics processor fill events and history; then, with the service stopped (the embedded database allows one process), the
 * operator commands pause, resume and deprecate demo products and change their fees on the saved chain.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../src/db/client.ts';
import { outboundPayloadError } from '../src/webhooks/event-catalogue.ts';
import { secretFingerprint } from '../src/webhooks/secret-box.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { spawnCli, waitFor } from './helpers/process.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-demo-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const env = {
  DATA_DIR: dataDir,
  PORT: '0',
  LOCAL_CHAIN_PORT: '0',
  LOCAL_CHAIN_DAYS: '3',
  LOG_LEVEL: 'info',
};

/**
 * An operator command on the stopped service's DATA_DIR, run in this process (helpers/cli.ts):
 * `start` above is the spawned bin.
 */
const cli = (args: string[]) => runCliInProcess(args, { env: { ...env, LOG_LEVEL: 'silent' } });

interface DemoCredentials {
  base_url: string;
  rpc_url: string;
  partners: Array<{
    name: string;
    live: DemoEnvironment;
    test: DemoEnvironment;
    portal: { url: string; email: string; login_url: string };
  }>;
}
interface DemoEnvironment {
  api_key: string;
  revoked_api_key: string;
  inbound_secret: string;
  products: Record<
    'active' | 'active_async' | 'paused' | 'deprecated' | 'pending_deploy' | 'launch',
    string
  >;
  wallets: string[];
  deprecated_wallets: string[];
}

interface ListedProduct {
  slug: string;
  partner: string;
  environment: string;
  status: string;
  vault_kind: string;
  engine_contract_address: string | null;
}

describe('the demo', { timeout: 240_000 }, () => {
  it('provisions both partners, both environments and every status; the worker deploys the launch products', async () => {
    const p = spawnCli(['start'], env);
    await waitFor(
      () => /Local chain RPC URL (http:\S+)/.exec(p.stdout())?.[1],
      90_000,
      'the chain',
    );
    await waitFor(
      () => (p.stdout().match(/engine deployed; product active/g)?.length === 4 ? true : undefined),
      60_000,
      'four launch deployments',
    );
    // The processor computes the demo's history from the chain (the seed writes no snapshot); the
    // service says once when that is done, on stdout for people and in /ready for scripts.
    await waitFor(
      () =>
        /^Demo ready: history computed through \d{4}-\d{2}-\d{2}; every quickstart call returns data/m.test(
          p.stdout(),
        )
          ? true
          : undefined,
      90_000,
      'the demo ready line',
    );
    expect(p.stdout()).toContain('"msg":"daily snapshots written"');

    // The quickstart: demo-credentials.json holds everything a first call needs, and works.
    const file = path.join(dataDir, 'demo-credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const creds = JSON.parse(readFileSync(file, 'utf8')) as DemoCredentials;
    expect(creds.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(creds.rpc_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(creds.partners.map((x) => x.name)).toEqual(['Acme Wallet', 'Bravo Pay']);
    const call = (url: string, key: string) =>
      fetch(`${creds.base_url}${url}`, { headers: { 'x-api-key': key } });
    const ready = (await (await fetch(`${creds.base_url}/ready`)).json()) as {
      data: { demo: string };
    };
    expect(ready.data.demo).toBe('ready');
    for (const partner of creds.partners) {
      // One click into the portal: a fresh one-time sign-in link for the demo partner's owner.
      const port = new URL(creds.base_url).port;
      expect(partner.portal).toEqual({
        url: `http://localhost:${port}/portal`,
        email: expect.stringMatching(/^owner@[a-z-]+\.example$/),
        login_url: expect.stringMatching(
          new RegExp(`^http://localhost:${port}/portal/sign-in/link\\?token=[\\w-]{43}$`),
        ),
      });
      const signIn = await fetch(partner.portal.login_url.replace('//localhost:', '//127.0.0.1:'));
      expect(signIn.status).toBe(200);
      expect(await signIn.text()).toContain('Continue');
    }
    for (const partner of creds.partners) {
      for (const environment of ['live', 'test'] as const) {
        const c = partner[environment];
        expect(c.api_key.startsWith(`svc_${environment}_`)).toBe(true);
        expect(c.inbound_secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
        const list = await call('/api/partner/products', c.api_key);
        expect(list.status).toBe(200);
        const slugs = ((await list.json()) as { data: Array<{ slug: string }> }).data.map(
          (x) => x.slug,
        );
        for (const slug of Object.values(c.products)) expect(slugs).toContain(slug);
        const revoked = await call('/api/partner/products', c.revoked_api_key);
        expect(((await revoked.json()) as { code: string }).code).toBe('revoked_api_key');
        const pending = await call(
          `/api/partner/products/${c.products.pending_deploy}/health`,
          c.api_key,
        );
        expect(pending.status).toBe(409);
        expect(c.wallets.length).toBeGreaterThan(0);
        const position = await call(
          `/api/partner/products/${c.products.active}/position?address=${c.wallets[0]}`,
          c.api_key,
        );
        expect(position.status).toBe(200);
        const data = ((await position.json()) as { data: { shares: string } }).data;
        expect(Number(data.shares)).toBeGreaterThan(0); // display check only; values are strings

        // Every product the demo creates is named, the launch one too (active by now).
        expect(c.products.launch).toMatch(new RegExp(`-${environment}-usdc-launch$`));
        const launch = await call(`/api/partner/products/${c.products.launch}`, c.api_key);
        const launched = (
          (await launch.json()) as {
            data: { status: string; latest_metrics: Record<string, string> | null };
          }
        ).data;
        expect(launched.status).toBe('active');
        // Launched today: priced on the underlying's measured day, never a null APY (#14).
        expect(launched.latest_metrics).toMatchObject({
          underlying_apy: expect.stringMatching(/^-?\d+\.\d{6}$/),
          net_apy_for_user: expect.stringMatching(/^-?\d+\.\d{6}$/),
          apy_basis: 'underlying_estimate',
        });
        // An exit-only position: a wallet still holds shares of the deprecated product.
        expect(c.deprecated_wallets.length).toBeGreaterThan(0);
        const exitOnly = await call(
          `/api/partner/products/${c.products.deprecated}/position?address=${c.deprecated_wallets[0]}`,
          c.api_key,
        );
        expect(exitOnly.status).toBe(200);
        const held = ((await exitOnly.json()) as { data: { shares: string } }).data;
        expect(held.shares).toMatch(/^[0-9.]+$/);
        expect(held.shares).not.toMatch(/^0(\.0*)?$/);
        const product = await call(`/api/partner/products/${c.products.deprecated}`, c.api_key);
        expect(((await product.json()) as { data: { status: string } }).data.status).toBe(
          'deprecated',
        );
      }
    }

    // The README's quickstart, run as written (less its `npm start`) with this service's PORT and
    // DATA_DIR: every call answers success.
    const readme = readFileSync(path.join(import.meta.dirname, '../README.md'), 'utf8');
    const quickstart = /### Quickstart: a first call[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(quickstart).toContain('DATA_DIR');
    const script = quickstart!
      .split('\n')
      .filter((line) => !line.startsWith('npm start'))
      .join('\n');
    const run = spawnSync('bash', ['--noprofile', '--norc', '-euo', 'pipefail', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        PORT: new URL(creds.base_url).port,
        DATA_DIR: dataDir,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    // curl prints each JSON answer without a newline: split between them.
    const answers = run.stdout
      .trim()
      .replace(/\}\s*\{"success"/g, '}\n{"success"')
      .split('\n');
    expect(answers).toHaveLength(7);
    // Right after the ready line every call returns data: none is an empty list or a 503.
    for (const answer of answers) {
      const parsed = JSON.parse(answer) as { success: boolean; data: unknown };
      expect(parsed).toMatchObject({ success: true });
      if (Array.isArray(parsed.data)) expect(parsed.data.length).toBeGreaterThan(0);
      const history = (parsed.data as { history?: unknown[] } | null)?.history;
      if (Array.isArray(history)) expect(history.length).toBeGreaterThan(0);
    }

    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(p.stdout()).toContain('"msg":"demo provisioned"');
    expect(
      p
        .stdout()
        .split('\n')
        .filter((l) => /"level":(50|60)/.test(l)),
    ).toEqual([]);

    const listed = JSON.parse((await cli(['product', 'list', '--json'])).out) as ListedProduct[];
    expect(new Set(listed.map((x) => x.partner))).toEqual(new Set(['Acme Wallet', 'Bravo Pay']));
    for (const partner of ['Acme Wallet', 'Bravo Pay']) {
      for (const environment of ['live', 'test']) {
        const mine = listed.filter((x) => x.partner === partner && x.environment === environment);
        const of = (s: string) => mine.filter((x) => x.status === s);
        expect(
          of('active')
            .map((x) => x.vault_kind)
            .sort(),
        ).toEqual(['async', 'sync', 'sync']);
        expect(of('paused')).toHaveLength(1);
        expect(of('deprecated')).toHaveLength(1);
        expect(of('pending_deploy').map((x) => x.slug)).toEqual([
          expect.stringMatching(/-usdc-next$/),
        ]);
        expect(mine.find((x) => x.slug.endsWith('-usdc-launch'))?.status).toBe('active');
      }
    }

    // Events stored by the worker: one product.deployed per launch product, a vault_pause for
    // each paused product (today's), no snapshot written by the seed itself.
    const db = await createDatabase({ engine: 'pglite', dataDir: path.join(dataDir, 'pglite') });
    try {
      const { rows } = await db.query<{ event_type: string; n: string }>(
        `SELECT event_type, count(*) AS n FROM events GROUP BY event_type ORDER BY event_type`,
      );
      const counts = Object.fromEntries(rows.map((r) => [r.event_type, Number(r.n)]));
      expect(counts['product.deployed']).toBe(4);
      expect(counts.vault_pause).toBe(4);
      expect(counts['deposit.confirmed']).toBeGreaterThan(0);
      // Every stored event fits its type's schema in the outbound event catalogue.
      const stored = await db.query<{ id: string; event_type: string; payload: string }>(
        'SELECT id, event_type, payload FROM events ORDER BY seq',
      );
      const misfits = stored.rows
        .map((r) => [r.id, outboundPayloadError(r.event_type, JSON.parse(r.payload))])
        .filter(([, error]) => error !== undefined);
      expect(misfits).toEqual([]);
      // The inbound secrets of the credentials file are the stored ones (by fingerprint).
      const inbound = await db.query<{ fingerprint: string }>(
        'SELECT secret_fingerprint AS fingerprint FROM inbound_secrets ORDER BY 1',
      );
      expect(inbound.rows.map((r) => r.fingerprint)).toEqual(
        creds.partners
          .flatMap((x) => [x.live.inbound_secret, x.test.inbound_secret])
          .map(secretFingerprint)
          .sort(),
      );
      const days = await db.query<{ slug: string; n: string }>(
        `SELECT p.slug, count(s.date) AS n FROM products p
           LEFT JOIN daily_snapshots s ON s.product_id = p.id
         WHERE p.slug IN ('acme-live-usdc-core', 'bravo-test-usdc-flex', 'acme-live-usdc-next')
         GROUP BY p.slug ORDER BY p.slug`,
      );
      expect(days.rows.map((r) => [r.slug, Number(r.n) > 0])).toEqual([
        ['acme-live-usdc-core', true],
        ['acme-live-usdc-next', false],
        ['bravo-test-usdc-flex', true],
      ]);
    } finally {
      await db.close();
    }
  });

  it('pauses, resumes and deprecates demo products on the saved chain; refuses invalid moves', async () => {
    const paused = await cli(['product', 'pause', 'acme-live-usdc-core', '--json']);
    expect(paused.err).toBe('');
    expect(JSON.parse(paused.out)).toMatchObject({
      slug: 'acme-live-usdc-core',
      status: 'paused',
      tx_hash: expect.stringMatching(/^0x/),
    });
    const resumed = await cli(['product', 'resume', 'acme-live-usdc-core', '--json']);
    expect(JSON.parse(resumed.out)).toMatchObject({ status: 'active', still_paused_by: [] });

    const deprecated = await cli(['product', 'deprecate', 'acme-test-usdc-core']);
    expect(deprecated.code).toBe(0);
    expect(deprecated.out).toMatch(
      /^acme-test-usdc-core: deprecated \(transaction 0x[0-9a-f]{64}\)\n$/,
    );
    const again = await cli(['product', 'resume', 'acme-test-usdc-core']);
    expect(again.code).toBe(1);
    expect(again.err).toBe(
      'yield-service: cannot resume acme-test-usdc-core: it is deprecated, which is final\n',
    );
  });

  it('shows, lowers, schedules, refuses to apply early and cancels fees on the saved chain', async () => {
    const slug = 'acme-live-usdc-core';
    type Fees = {
      slug: string;
      result?: string;
      tx_hash?: string;
      in_force: { service_fee_bps: number; partner_fee_bps: number };
      recorded: { service_fee_bps: number; partner_fee_bps: number };
      scheduled: { service_fee_bps: number; partner_fee_bps: number; effective_at: string } | null;
    };
    const json = async (args: string[]) => {
      const r = await cli([...args, '--json']);
      expect(r.err, args.join(' ')).toBe('');
      expect(r.code).toBe(0);
      return JSON.parse(r.out) as Fees;
    };
    const before = await json(['product', 'fees', slug]);
    expect(before).toMatchObject({ slug, scheduled: null });
    expect(before.recorded).toEqual(before.in_force);
    const service = before.in_force.service_fee_bps;
    const partner = before.in_force.partner_fee_bps;
    expect(partner).toBeGreaterThan(0);

    // A decrease applies at once on chain; the API's figures follow once the worker confirms it.
    const down = await json([
      'product',
      'set-fees',
      slug,
      '--service-fee-bps',
      String(service),
      '--partner-fee-bps',
      String(partner - 1),
    ]);
    expect(down).toMatchObject({
      result: 'applied',
      tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      in_force: { service_fee_bps: service, partner_fee_bps: partner - 1 },
      recorded: before.recorded,
      scheduled: null,
    });

    // An increase is scheduled for after the engine's notice; applying it early is refused.
    const up = await json([
      'product',
      'set-fees',
      slug,
      '--service-fee-bps',
      String(service),
      '--partner-fee-bps',
      String(partner + 100),
    ]);
    expect(up).toMatchObject({
      result: 'scheduled',
      in_force: { service_fee_bps: service, partner_fee_bps: partner - 1 },
      scheduled: { service_fee_bps: service, partner_fee_bps: partner + 100 },
    });
    const early = await cli(['product', 'apply-fees', slug]);
    expect(early.code).toBe(1);
    expect(early.err).toBe(
      `yield-service: the fee change of ${slug} may apply from ${up.scheduled!.effective_at}, not before\n`,
    );
    const text = await cli(['product', 'fees', slug]);
    expect(text.out).toContain(
      `scheduled: service ${service} bps, partner ${partner + 100} bps, may apply from ${up.scheduled!.effective_at} (product apply-fees)`,
    );

    const cancelled = await json(['product', 'cancel-fees', slug]);
    expect(cancelled).toMatchObject({ result: 'cancelled', scheduled: null });
    const nothing = await cli(['product', 'cancel-fees', slug]);
    expect(nothing.code).toBe(1);
    expect(nothing.err).toBe(`yield-service: ${slug} has no scheduled fee change\n`);
    // Out of range: refused before anything is sent, in words, with the command's usage after it.
    const tooHigh = await cli([
      'product',
      'set-fees',
      slug,
      '--service-fee-bps',
      '6000',
      '--partner-fee-bps',
      '0',
    ]);
    expect(tooHigh.code).toBe(1);
    expect(tooHigh.err.split('\n')[0]).toBe(
      "error: option '--service-fee-bps <n>' argument '6000' is invalid. an integer from 0 to 5000",
    );
    expect((await json(['product', 'fees', slug])).in_force).toEqual(down.in_force);
  });
});
