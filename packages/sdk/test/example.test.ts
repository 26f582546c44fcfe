/**
 * Runs the headless example (packages/sdk/examples/headless.ts) as a partner would, in its own
 * process, against the real service on the local chain: the service started as the README says for
 * the example (loopback webhooks allowed, the test CA trusted), a deposit.confirmed destination
 * registered at the example's receiver, then the script: it deposits with a dev wallet, reads the
 * position through the API and waits for the verified deposit.confirmed. The test checks its output
 * against the chain and the service's own records, and that a wrong secret makes it fail.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { createWebhookDestinationsRepo } from '../../../src/db/webhook-destinations.ts';
import { createLogger } from '../../../src/logger.ts';
import { type RunningService, startService } from '../../../src/main.ts';
import { createSecretBox, masterKeyFor } from '../../../src/webhooks/secret-box.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = path.join(ROOT, 'packages/sdk/examples/headless.ts');

/** A port nobody listens on now, for the example's receiver (its URL is registered first). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

function runExample(env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', EXAMPLE], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('the headless example', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-sdk-example-'));
  let service: RunningService;
  let secret: string;
  let port: number;

  beforeAll(async () => {
    const config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      LOCAL_CHAIN_PORT: '0',
      LOCAL_CHAIN_DAYS: '2',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      WEBHOOK_CA_FILE: path.join(ROOT, 'test/fixtures/tls/ca.pem'),
    });
    service = await startService(config, createLogger('warn'));
    await service.ready;
    port = await freePort();
    const creds = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    const { rows } = await service.db.query<{ partner_id: string }>(
      'SELECT partner_id FROM products WHERE slug = $1',
      [creds.partners[0].live.products.active],
    );
    // What `yield-service webhook add --partner … --env live --url … --events deposit.confirmed` does.
    secret = (
      await createWebhookDestinationsRepo(service.db, createSecretBox(masterKeyFor(config))).add({
        partnerId: rows[0]!.partner_id,
        environment: 'live',
        url: `https://localhost:${port}/hooks`,
        eventTypes: ['deposit.confirmed'],
      })
    ).secret;
  }, 600_000);

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('deposits with a dev wallet, reads the position, verifies deposit.confirmed', {
    timeout: 240_000,
  }, async () => {
    const { code, out } = await runExample({
      DATA_DIR: dataDir,
      WEBHOOK_SECRET: secret,
      RECEIVER_PORT: String(port),
    });
    expect(code, out).toBe(0);
    expect(out).toMatch(/^deposit plan: approve then deposit; preview \d+ shares$/m);
    const txHash = out.match(/^deposit (0x[0-9a-f]{64}): (\d+) shares minted$/m)?.[1];
    expect(txHash, out).toBeDefined();
    expect(out).toMatch(/^inbound deposit\.submitted stored as event \d+$/m);
    // The wallet is fresh: its position through the API is exactly what the confirmed deposit minted.
    const shares = out.match(/^position: ([0-9.]+) shares worth [0-9.]+ [A-Z]+$/m)?.[1];
    expect(shares, out).toBeDefined();
    expect(out).toMatch(
      new RegExp(
        `^deposit\\.confirmed ${txHash}: 100 [A-Z]+, ${shares!.replace('.', '\\.')} shares$`,
        'm',
      ),
    );
    expect(out).toMatch(/^headless integration: done$/m);
    // The service's own record of the event the example verified.
    const { rows } = await service.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE event_type = 'deposit.confirmed' AND payload::jsonb->>'tx_hash' = $1`,
      [txHash],
    );
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('fails, saying so, when the deliveries do not verify with its secret', {
    timeout: 120_000,
  }, async () => {
    const wrong = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const { code, out } = await runExample({
      DATA_DIR: dataDir,
      WEBHOOK_SECRET: wrong,
      RECEIVER_PORT: String(port),
    });
    expect(code).toBe(1);
    expect(out).toMatch(/^refused a delivery: No signature verifies/m);
    expect(out).toMatch(/^failed: a delivery did not verify with WEBHOOK_SECRET/m);
  });
});
