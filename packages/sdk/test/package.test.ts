/**
 * The package as a partner installs it: built (ESM + CommonJS with declarations), packed with
 * `npm pack`, unpacked into a consumer project, then imported and required by Node, and type-checked
 * by TypeScript from both module systems. The built code verifies a webhook, signs an inbound body and
 * calls a real local HTTP server through fetch. Then the same built ES module, in Node, Deno, Bun
 * and Chromium, against the real service: see the last two suites.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolRequire } from '../../../scripts/tools.mjs';
import { createApiKeysRepo } from '../../../src/db/api-keys.ts';
import { createInboundEventsRepo } from '../../../src/db/inbound-events.ts';
import { createInboundSecretsRepo } from '../../../src/db/inbound-secrets.ts';
import { createPartnersRepo } from '../../../src/db/partners.ts';
import { createProductsRepo } from '../../../src/db/products.ts';
import { buildApp } from '../../../src/server/app.ts';
import { createSecretBox } from '../../../src/webhooks/secret-box.ts';
import { signDelivery, signingSecret, signPayload } from '../../../src/webhooks/signature.ts';
import { freshDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { captureLogger } from '../../../test/helpers/logs.ts';
import { chromiumMissing, launchChromium } from '../../../test/portal/browser.ts';
import { findRuntime } from './runtimes/binaries.ts';

const pkgDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const repoModules = path.join(pkgDir, '..', '..', 'node_modules');
const execFileAsync = promisify(execFile);
const tsc = toolRequire().resolve('typescript/bin/tsc');

let consumer: string;
let buildOutput: string;
let packed: string[];

beforeAll(() => {
  buildOutput = execFileSync(process.execPath, ['scripts/build.mjs'], {
    cwd: pkgDir,
    encoding: 'utf8',
  });
  consumer = mkdtempSync(path.join(tmpdir(), 'pys-sdk-consumer-'));
  const [info] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', consumer], {
      cwd: pkgDir,
      encoding: 'utf8',
    }),
  ) as [{ filename: string; files: Array<{ path: string }> }];
  packed = info.files.map((f) => f.path).sort();
  const installed = path.join(consumer, 'node_modules', '@partner-yield', 'sdk');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', [
    '-xzf',
    path.join(consumer, info.filename),
    '-C',
    installed,
    '--strip-components=1',
  ]);
  // viem, the optional peer of the engine entry, as the partner's own dependency.
  symlinkSync(path.join(repoModules, 'viem'), path.join(consumer, 'node_modules', 'viem'));
  writeFileSync(path.join(consumer, 'package.json'), '{ "name": "consumer", "private": true }\n');
}, 120_000);
afterAll(() => {
  if (consumer) rmSync(consumer, { recursive: true, force: true });
});

/** A script that uses the built package for real: verify, sign, call a local server. */
const script = (load: string) => `
${load}
const { createHmac, randomBytes } = require('node:crypto');
const http = require('node:http');
(async () => {
  const key = randomBytes(32);
  const secret = 'whsec_' + key.toString('base64');
  const body = JSON.stringify({ slug: 'core', status: 'paused' });
  const id = 'evt_1', ts = String(Math.floor(Date.now() / 1000));
  const sig = createHmac('sha256', key).update(id + '.' + ts + '.' + body).digest('base64');
  const event = await sdk.verifyWebhook(Buffer.from(body), { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': 'v1,' + sig, 'x-service-event': 'vault_pause' }, secret);
  const inbound = await sdk.signInbound(body, 'whsec_x');
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ success: true, data: { status: 'ok', path: req.url } }));
  }).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const client = new sdk.PartnerYieldClient({ baseUrl: 'http://127.0.0.1:' + server.address().port });
  const health = await client.health();
  server.close();
  console.log(JSON.stringify({
    type: event.type, known: event.known, data: event.data,
    inboundOk: inbound === createHmac('sha256', 'whsec_x').update(body).digest('hex'),
    health, engine: typeof engine.createEngineHelpers,
    errorCode: new sdk.ApiError('not_found', 'x', 404, undefined, undefined).code,
  }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

const expected = {
  type: 'vault_pause',
  known: true,
  data: { slug: 'core', status: 'paused' },
  inboundOk: true,
  health: { status: 'ok', path: '/health' },
  engine: 'function',
  errorCode: 'not_found',
};

const runNode = (file: string, source: string) => {
  writeFileSync(path.join(consumer, file), source);
  return JSON.parse(execFileSync(process.execPath, [file], { cwd: consumer, encoding: 'utf8' }));
};

describe('the packed package', () => {
  it('contains the builds, their declarations, the README, the changelog and nothing else', () => {
    expect(packed).toContain('package.json');
    expect(packed).toContain('README.md');
    expect(packed).toContain('CHANGELOG.md');
    for (const f of [
      'esm/index.js',
      'esm/index.d.ts',
      'cjs/index.js',
      'cjs/index.d.ts',
      'cjs/package.json',
      'esm/engine/index.js',
      'cjs/engine/index.d.ts',
      'esm/testing/index.js',
      'cjs/testing/index.d.ts',
      'esm/generated/openapi.js',
    ]) {
      expect(packed, f).toContain(`dist/${f}`);
    }
    expect(
      packed.filter(
        (f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'CHANGELOG.md'].includes(f),
      ),
    ).toEqual([]);
    expect(packed.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('prints the minified+gzipped size of client + webhooks, under 10 KB', () => {
    const line = /size client \+ webhooks \(\.\): .*, ([\d.]+) KB minified\+gzipped/.exec(
      buildOutput,
    );
    expect(line, buildOutput).not.toBeNull();
    expect(Number(line![1])).toBeLessThan(10);
  });

  it('runs from its ES module entry in Node', () => {
    const esm = script('').replace(
      "const { createHmac, randomBytes } = require('node:crypto');\nconst http = require('node:http');",
      '',
    );
    const source = `import * as sdk from '@partner-yield/sdk';\nimport * as engine from '@partner-yield/sdk/engine';\nimport { createHmac, randomBytes } from 'node:crypto';\nimport http from 'node:http';\n${esm}`;
    expect(runNode('esm.mjs', source)).toEqual(expected);
  });

  it('runs from its CommonJS entry in Node', () => {
    const source = script(
      "const sdk = require('@partner-yield/sdk');\nconst engine = require('@partner-yield/sdk/engine');",
    );
    expect(runNode('cjs.cjs', source)).toEqual(expected);
  });

  it('its testing entry works from a partner test suite, imported and required', () => {
    const body = (load: string) => `${load}
(async () => {
  const secret = 'whsec_' + Buffer.from('a partner test secret of 32 byte').toString('base64');
  const signed = await testing.signTestWebhook({ secret, type: 'deposit.confirmed', payload: { amount: '1' } });
  const event = await sdk.verifyWebhook(signed.body, signed.headers, secret);
  const mock = await testing.startMockApi();
  const client = new sdk.PartnerYieldClient({ baseUrl: mock.url, apiKey: 'svc_test_any' });
  const products = await client.listProducts();
  const history = await client.getApyHistory(products[0].slug, { days: 7 });
  await mock.close();
  console.log(JSON.stringify({ type: event.type, data: event.data, slug: products[0].slug, days: history.length }));
})().catch((e) => { console.error(e); process.exit(1); });
`;
    const want = {
      type: 'deposit.confirmed',
      data: { amount: '1' },
      slug: 'acme-usdc-core',
      days: 7,
    };
    expect(
      runNode(
        'testing.mjs',
        body(
          "import * as sdk from '@partner-yield/sdk';\nimport * as testing from '@partner-yield/sdk/testing';",
        ),
      ),
    ).toEqual(want);
    expect(
      runNode(
        'testing.cjs',
        body(
          "const sdk = require('@partner-yield/sdk');\nconst testing = require('@partner-yield/sdk/testing');",
        ),
      ),
    ).toEqual(want);
  });

  // The engine entry's declarations lean on viem's (slow to check); the SDK's own build checks them.
  it('type-checks in a consumer project, imported and required', () => {
    writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          types: [],
          lib: ['ES2022', 'DOM'],
        },
        include: ['*.mts', '*.cts'],
      }),
    );
    const use = `
const client = new PartnerYieldClient({ baseUrl: 'http://localhost', apiKey: 'svc_test_x' });
export async function main(): Promise<string> {
  const products: Product[] = await client.listProducts();
  const event: WebhookEvent = await verifyWebhook('{}', {}, 'whsec_x');
  if (event.known && event.type === 'deposit.confirmed') return event.data.amount;
  try { await client.getPosition('s', '0x'); } catch (e) {
    if (e instanceof ApiError && e.code === 'invalid_address') return String(e.status) + e.requestId;
  }
  return products[0]?.latest_metrics?.net_apy_for_user ?? '';
}
// @ts-expect-error a code the catalogue does not have is a type error where codes are compared
const bad: ApiErrorCode = 'no_such_code';
`;
    writeFileSync(
      path.join(consumer, 'use.mts'),
      `import { ApiError, type ApiErrorCode, PartnerYieldClient, type Product, verifyWebhook, type WebhookEvent } from '@partner-yield/sdk';\n${use}\nvoid bad;`,
    );
    writeFileSync(
      path.join(consumer, 'use.cts'),
      `import { ApiError, type ApiErrorCode, PartnerYieldClient, type Product, verifyWebhook, type WebhookEvent } from '@partner-yield/sdk';\n${use}\nvoid bad;`,
    );
    const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: consumer,
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});

/**
 * The real service for the runtime suites: the app on a loopback port (PGlite, no chain: these
 * calls need none), one partner with a live key, an inbound secret and one product.
 */
const ADDR = '0x0000000000000000000000000000000000000001' as const;
let service: {
  app: Awaited<ReturnType<typeof buildApp>>;
  t: TestDatabase;
  url: string;
  apiKey: string;
  inboundSecret: string;
  partnerId: string;
};

async function startService(): Promise<typeof service> {
  const t = await freshDatabase('pglite');
  const partnerId = (await createPartnersRepo(t.db).create('Acme')).id;
  const apiKey = (await createApiKeysRepo(t.db).create(partnerId, 'live')).key;
  const box = createSecretBox(randomBytes(32));
  const inboundSecret = (await createInboundSecretsRepo(t.db, box).set(partnerId, 'live')).secret;
  await createProductsRepo(t.db).create({
    displayName: 'Acme USDC',
    riskLabel: 'low',
    chainId: 31337,
    vaultKind: 'sync',
    engineName: 'E',
    engineSymbol: 'E',
    underlyingVaultAddress: ADDR,
    assetAddress: ADDR,
    assetSymbol: 'USDC',
    assetDecimals: 6,
    serviceFeeBps: 100,
    partnerFeeBps: 100,
    serviceFeeRecipient: ADDR,
    partnerFeeRecipient: ADDR,
    partnerId,
    environment: 'live',
    slug: 'acme-live',
    deployed: {
      engineAddress: `0x${'11'.padStart(40, '0')}`,
      shareDecimals: 12,
      block: 1n,
      at: new Date(),
      status: 'active',
    },
  });
  const app = await buildApp({ db: t.db, logger: captureLogger().logger, secretBox: box });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, t, url, apiKey, inboundSecret, partnerId };
}

/** A fresh input of exercise.mjs: a delivery signed now by the service's signer, a new key. */
function exerciseInput(baseUrl: string) {
  const previous = `whsec_${randomBytes(24).toString('base64')}`;
  const current = `whsec_${randomBytes(24).toString('base64')}`;
  const id = `evt_${randomUUID()}`;
  const seconds = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ product_slug: 'acme-live', amount: '1000000', shares: '999' });
  // A rotation's grace period: both secrets sign; the receiver still holds the previous one.
  const signature = signDelivery(
    [signingSecret(current), signingSecret(previous)],
    id,
    seconds,
    body,
  );
  return {
    baseUrl,
    apiKey: service.apiKey,
    inboundSecret: service.inboundSecret,
    idempotencyKey: randomUUID(),
    webhook: {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(seconds),
        'webhook-signature': signature.webhookSignature!,
        'x-service-event': 'deposit.confirmed',
        'x-service-signature': signature.serviceSignature,
      },
      secrets: [previous],
    },
    inboundBody: JSON.stringify({ occurred_at: new Date().toISOString(), data: { n: id } }),
  };
}
type ExerciseInput = ReturnType<typeof exerciseInput>;

/** What exercise.mjs must have seen, checked against the service and its signer. */
async function expectExercised(result: Record<string, unknown>, input: ExerciseInput) {
  const notFound = await service.app.inject({
    url: '/api/partner/products/no-such-product',
    headers: { 'x-api-key': service.apiKey },
  });
  expect(notFound.statusCode).toBe(404);
  expect(result).toMatchObject({
    event: {
      type: 'deposit.confirmed',
      known: true,
      id: input.webhook.headers['webhook-id'],
      data: JSON.parse(input.webhook.body),
    },
    tamperedError: 'webhook_signature_mismatch',
    inboundSignature: signPayload(input.inboundSecret, input.inboundBody),
    health: 'ok',
    products: ['acme-live'],
    notFound: { status: 404, code: notFound.json().code, hasRequestId: true },
    ack: { success: true, event_id: expect.any(Number), duplicate: false },
  });
  // The inbound event the runtime sent is stored, under its key, for this partner.
  const stored = await createInboundEventsRepo(service.t.db).findById(
    (result.ack as { event_id: number }).event_id,
  );
  expect(stored).toMatchObject({
    partnerId: service.partnerId,
    environment: 'live',
    idempotencyKey: input.idempotencyKey,
    eventType: 'ping',
  });
  expect(JSON.parse(stored!.body).data).toEqual({ from: 'runtime-suite' });
}

/** Runs run.mjs in the consumer project; asynchronous, so this process's service can answer. */
async function runEntry(command: string, args: string[], input: ExerciseInput) {
  const { stdout } = await execFileAsync(command, [...args, 'run.mjs', JSON.stringify(input)], {
    cwd: consumer,
    encoding: 'utf8',
    timeout: 150_000,
    env: {
      ...process.env,
      NO_COLOR: '1',
      DENO_DIR: path.join(consumer, '.deno'),
      DENO_NO_UPDATE_CHECK: '1',
      DO_NOT_TRACK: '1',
    },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('the built ES module against the real service', () => {
  beforeAll(async () => {
    for (const file of ['exercise.mjs', 'run.mjs']) {
      copyFileSync(path.join(pkgDir, 'test', 'runtimes', file), path.join(consumer, file));
    }
    service = await startService();
  }, 120_000);
  afterAll(async () => {
    await service?.app.close();
    await service?.t.drop();
  });

  describe('in Node, Deno and Bun', () => {
    it('Node', { timeout: 180_000 }, async () => {
      const input = exerciseInput(service.url);
      const result = await runEntry(process.execPath, [], input);
      expect(result.runtime).toBe(`node ${process.versions.node}`);
      await expectExercised(result, input);
    });

    it('Deno', { timeout: 180_000 }, async () => {
      const deno = findRuntime('deno');
      const input = exerciseInput(service.url);
      // Only the loopback network and the consumer project, nothing fetched (--cached-only): the
      // package resolves from node_modules and needs nothing else.
      const result = await runEntry(
        deno.binary,
        [
          'run',
          '--cached-only',
          '--no-lock',
          '--no-prompt',
          '--allow-net=127.0.0.1',
          `--allow-read=${consumer}`,
        ],
        input,
      );
      expect(result.runtime).toMatch(/^deno \d+\.\d+\.\d+/);
      await expectExercised(result, input);
    });

    it('Bun', { timeout: 180_000 }, async () => {
      const bun = findRuntime('bun');
      const input = exerciseInput(service.url);
      // --no-install: the package resolves from node_modules, never auto-installed from a registry.
      const result = await runEntry(bun.binary, ['--no-install'], input);
      expect(result.runtime).toBe(`bun ${bun.version}`);
      await expectExercised(result, input);
    });
  });

  /**
   * Chromium loads the package's ES modules (dist/esm, as installed) from a page on one loopback
   * origin and calls the service on another. The service sends no CORS headers, on purpose: its
   * API key is a server-side secret (docs: never ship it to a browser), so a direct call is refused
   * by the browser; the SDK's calls go through a test proxy that adds CORS headers in front of the
   * real service, the way a partner's own backend would front it.
   */
  describe('in Chromium', () => {
    const missing = chromiumMissing();
    let browser: Browser;
    let pages: Server;
    let proxy: Server;
    let pageOrigin: string;
    let proxyUrl: string;
    const served: string[] = [];
    const proxied: string[] = [];

    const listen = async (server: Server) => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    };

    beforeAll(async () => {
      if (missing) return;
      const dist = path.join(consumer, 'node_modules', '@partner-yield', 'sdk', 'dist', 'esm');
      pages = createServer((req, res) => {
        const { pathname } = new URL(req.url ?? '/', 'http://page');
        served.push(pathname);
        if (pathname === '/') {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end('<!doctype html><html lang="en"><title>SDK</title></html>');
          return;
        }
        let file: string | undefined;
        if (pathname === '/exercise.mjs') file = path.join(consumer, 'exercise.mjs');
        if (pathname.startsWith('/sdk/')) {
          const f = path.resolve(dist, `.${pathname.slice('/sdk'.length)}`);
          if (f.startsWith(dist + path.sep) && f.endsWith('.js') && existsSync(f)) file = f;
        }
        if (!file) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
        res.end(readFileSync(file));
      });
      proxy = createServer((req, res) => {
        proxied.push(`${req.method} ${req.url}`);
        const cors = { 'access-control-allow-origin': pageOrigin, vary: 'origin' };
        if (req.method === 'OPTIONS') {
          res.writeHead(204, {
            ...cors,
            'access-control-allow-methods': 'GET, POST',
            'access-control-allow-headers': req.headers['access-control-request-headers'] ?? '',
          });
          res.end();
          return;
        }
        const target = new URL(req.url ?? '/', service.url);
        const upstream = httpRequest(
          target,
          { method: req.method, headers: { ...req.headers, host: target.host } },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, {
              ...answer.headers,
              ...cors,
              'access-control-expose-headers': 'x-request-id, retry-after',
            });
            answer.pipe(res);
          },
        );
        upstream.on('error', () => res.writeHead(502).end());
        req.pipe(upstream);
      });
      pageOrigin = await listen(pages);
      proxyUrl = await listen(proxy);
      browser = await launchChromium();
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await new Promise((resolve) => (pages ? pages.close(resolve) : resolve(undefined)));
      await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
    });

    it.skipIf(missing)(
      'verifies and signs with Web Crypto and calls the service through a CORS proxy; a direct call is refused',
      { timeout: 180_000 },
      async () => {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${pageOrigin}/`, { timeout: 60_000 });
        const input = exerciseInput(proxyUrl);
        // A string, evaluated in the page: the test program has no DOM types.
        const result = (await page.evaluate(`(async () => {
          const sdk = await import('/sdk/index.js');
          const { exercise } = await import('/exercise.mjs');
          const input = ${JSON.stringify(input)};
          const direct = await new sdk.PartnerYieldClient({
            baseUrl: ${JSON.stringify(service.url)}, apiKey: input.apiKey, retry: { maxAttempts: 1 },
          }).listProducts().then(
            () => 'answered',
            (e) => (e instanceof sdk.ConnectionError ? e.code : String(e)),
          );
          return { secureContext: isSecureContext, direct, ...(await exercise(sdk, input)) };
        })()`)) as Record<string, unknown>;
        await page.close();
        expect(errors).toEqual([]);
        expect(result.secureContext).toBe(true);
        // The service answers no cross-origin call: the browser refuses it.
        expect(result.direct).toBe('connection_failed');
        await expectExercised(result, input);
        // The built modules were what ran, and the keyed calls were preflighted through the proxy.
        expect(served).toContain('/sdk/index.js');
        expect(served).toContain('/sdk/webhooks.js');
        expect(proxied).toContain('OPTIONS /api/partner/products');
        expect(proxied).toContain('GET /api/partner/products');
        expect(proxied).toContain('POST /api/partner/webhooks/inbound');
        process.stdout.write(`SDK browser run: Chromium ${browser.version()}\n`);
      },
    );
  });
});
