/**
 * The package as a partner installs it: built (ESM + CommonJS with declarations), packed with
 * `npm pack`, unpacked into a consumer project, then imported and required by Node, and type-checked
 * by TypeScript from both module systems. The built code verifies a webhook, signs an inbound body and
 * calls a real local HTTP server through fetch. Deno and Bun run it too when they are installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const pkgDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const repoModules = path.join(pkgDir, '..', '..', 'node_modules');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const has = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

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
  it('contains the builds, their declarations, the README and nothing else', () => {
    expect(packed).toContain('package.json');
    expect(packed).toContain('README.md');
    for (const f of [
      'esm/index.js',
      'esm/index.d.ts',
      'cjs/index.js',
      'cjs/index.d.ts',
      'cjs/package.json',
      'esm/engine/index.js',
      'cjs/engine/index.d.ts',
      'esm/generated/openapi.js',
    ]) {
      expect(packed, f).toContain(`dist/${f}`);
    }
    expect(
      packed.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md'),
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

  it.skipIf(!has('deno'))('runs in Deno', () => {
    const out = execFileSync('deno', ['run', '--allow-net', '--allow-read', 'esm.mjs'], {
      cwd: consumer,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual(expected);
  });

  it.skipIf(!has('bun'))('runs in Bun', () => {
    const out = execFileSync('bun', ['esm.mjs'], { cwd: consumer, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(expected);
  });
});
