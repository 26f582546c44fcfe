/**
 * The whole path, with the real service process: `yield-service start` on PostgreSQL and the local
 * chain provisions the demo; the operator adds an HTTPS destination with the CLI (the service keeps
 * running: PostgreSQL is shared); the partner reports a user's deposit on the inbound endpoint;
 * the user deposits on chain; the indexer confirms the log and the dispatcher delivers
 * `deposit.confirmed` to the receiver — signed (checked by an independent verifier), once — and the
 * inbound `deposit.submitted` is linked to it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hash,
  http,
} from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import { testUSDAbi } from '../../src/chain/generated/TestUSD.ts';
import { yieldEngineAbi } from '../../src/chain/generated/YieldEngine.ts';
import { LOCAL_ROLES } from '../../src/chain/local/accounts.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { spawnCli, waitFor } from '../helpers/process.ts';

interface DemoEnvironment {
  api_key: string;
  inbound_secret: string;
  products: Record<string, string>;
}
interface DemoCredentials {
  base_url: string;
  rpc_url: string;
  partners: Array<{ name: string; live: DemoEnvironment; test: DemoEnvironment }>;
}

function verifies(secret: string, raw: Buffer, header: unknown): boolean {
  if (typeof header !== 'string' || !/^[0-9a-f]{64}$/.test(header)) return false;
  return timingSafeEqual(
    createHmac('sha256', secret).update(raw).digest(),
    Buffer.from(header, 'hex'),
  );
}

describe.runIf(postgresAdminUrl())(
  'webhooks end to end (service process, local chain, PostgreSQL)',
  () => {
    const cleanups: Array<() => unknown> = [];
    afterAll(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    it('a deposit on the local chain reaches the partner receiver as deposit.confirmed, signed, once', async () => {
      const t: TestDatabase = await freshDatabase('postgres', { migrated: false });
      cleanups.push(() => t.drop());
      const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-e2e-webhooks-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const caFile = path.join(dataDir, 'test-ca.pem');
      writeFileSync(caFile, testCaPem());
      const env = {
        DATABASE_URL: t.location,
        DATA_DIR: dataDir,
        PORT: '0',
        LOCAL_CHAIN_PORT: '0',
        LOCAL_CHAIN_DAYS: '2',
        MASTER_KEY: randomBytes(32).toString('hex'),
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
        WEBHOOK_CA_FILE: caFile,
        LOG_LEVEL: 'warn',
      };
      const receiver = await startHttpsReceiver();
      cleanups.push(() => receiver.close());

      const service = spawnCli(['start'], env);
      cleanups.push(async () => {
        service.child.kill('SIGTERM');
        await service.exited;
      });
      const credentialsFile = path.join(dataDir, 'demo-credentials.json');
      await waitFor(() => (existsSync(credentialsFile) ? true : undefined), 120_000, 'the demo');
      const creds = JSON.parse(readFileSync(credentialsFile, 'utf8')) as DemoCredentials;
      const partner = creds.partners[0]!;
      const partnerId = (
        await t.db.query<{ id: string }>('SELECT id FROM partners WHERE name = $1', [partner.name])
      ).rows[0]!.id;

      // The operator adds the partner's destination while the service runs.
      const add = spawnCli(
        [
          'webhook',
          'add',
          '--partner',
          partner.name,
          '--env',
          'live',
          '--url',
          `${receiver.url}/yield`,
          '--events',
          'deposit.confirmed',
          '--json',
        ],
        env,
      );
      expect((await add.exited).code, add.stderr()).toBe(0);
      const { secret } = JSON.parse(add.stdout()) as { secret: string };
      expect(secret).toMatch(/^whsec_/);

      // A product accepting deposits now (the demo history may leave some paused by an upstream
      // halt, depending on how many days it simulates).
      const rows = await t.db.query<{
        slug: string;
        engine_address: Address;
        asset_address: Address;
        asset_symbol: string;
      }>(
        `SELECT slug, engine_address, asset_address, asset_symbol FROM products
         WHERE partner_id = $1 AND environment = 'live' AND status = 'active' ORDER BY slug LIMIT 1`,
        [partnerId],
      );
      const {
        slug,
        engine_address: engine,
        asset_address: asset,
        asset_symbol: assetSymbol,
      } = rows.rows[0]!;
      const publicClient = createPublicClient({ transport: http(creds.rpc_url) });
      const wallet = createWalletClient({ transport: http(creds.rpc_url) });
      const user = getAddress(LOCAL_ROLES.spare[0]);
      const chainId = await publicClient.getChainId();
      const chain = {
        id: chainId,
        name: 'local',
        nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
        rpcUrls: { default: { http: [creds.rpc_url] } },
      } as const;
      const sendTx = async (hash: Promise<Hash>) => {
        const receipt = await publicClient.waitForTransactionReceipt({ hash: await hash });
        expect(receipt.status).toBe('success');
        return receipt;
      };
      await sendTx(
        wallet.writeContract({
          chain,
          account: LOCAL_ROLES.deployer,
          address: asset,
          abi: testUSDAbi,
          functionName: 'mint',
          args: [user, 1_000_000_000n],
        }),
      );
      await sendTx(
        wallet.writeContract({
          chain,
          account: user,
          address: asset,
          abi: testUSDAbi,
          functionName: 'approve',
          args: [engine, 250_000_000n],
        }),
      );
      const deposit = await sendTx(
        wallet.writeContract({
          chain,
          account: user,
          address: engine,
          abi: yieldEngineAbi,
          functionName: 'deposit',
          args: [250_000_000n, user],
          // Explicit gas: an estimate at the previous block can miss the vault's interest-minting
          // branch, which runs when the block's timestamp moved on.
          gas: 3_000_000n,
        }),
      );
      const txHash = deposit.transactionHash;

      // The partner tells the service about the transaction it broadcast (signed inbound event).
      const body = JSON.stringify({
        occurred_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        data: {
          product_slug: slug,
          chain_id: chainId,
          tx_hash: txHash,
          user_address: user,
          amount: '250',
        },
      });
      const inbound = await fetch(`${creds.base_url}/api/partner/webhooks/inbound`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': partner.live.api_key,
          'idempotency-key': `submitted-${txHash}`,
          'x-service-event': 'deposit.submitted',
          'x-service-signature': createHmac('sha256', partner.live.inbound_secret)
            .update(body)
            .digest('hex'),
        },
        body,
      });
      expect(inbound.status).toBe(200);
      const ack = (await inbound.json()) as {
        success: boolean;
        event_id: number;
        duplicate: boolean;
      };
      expect(ack).toMatchObject({ success: true, duplicate: false });

      const ours = () =>
        receiver.requests.filter(
          (r) => (JSON.parse(r.body.toString('utf8')) as { tx_hash?: string }).tx_hash === txHash,
        );
      const [got] = await waitFor(
        () => (ours().length > 0 ? ours() : undefined),
        60_000,
        'the deposit webhook',
      );
      expect(got!.headers['x-service-event']).toBe('deposit.confirmed');
      expect(verifies(secret, got!.body, got!.headers['x-service-signature'])).toBe(true);
      const payload = JSON.parse(got!.body.toString('utf8')) as Record<string, unknown>;
      expect(payload).toMatchObject({
        slug,
        chain_id: chainId,
        tx_hash: txHash,
        block_number: Number(deposit.blockNumber),
        user_address: user,
        amount: '250',
        asset_symbol: assetSymbol,
      });
      expect(payload.occurred_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

      // Once: no second delivery of that log, and the delivery row says delivered in one attempt.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(ours()).toHaveLength(1);
      const delivery = await t.db.query<{
        status: string;
        attempts: number;
        last_response_code: number;
      }>(
        `SELECT d.status, d.attempts, d.last_response_code FROM webhook_deliveries d
       JOIN events e ON e.id = d.event_id WHERE e.tx_hash = $1`,
        [txHash],
      );
      expect(delivery.rows).toEqual([
        { status: 'delivered', attempts: 1, last_response_code: 200 },
      ]);

      // The submitted transaction is linked to the lifecycle event its log produced.
      const link = await waitFor(
        async () => {
          const r = await t.db.query<{ event_type: string }>(
            `SELECT e.event_type FROM inbound_events i JOIN events e ON e.id = i.linked_event_id WHERE i.id = $1`,
            [ack.event_id],
          );
          return r.rows[0];
        },
        10_000,
        'the link',
      );
      expect(link.event_type).toBe('deposit.confirmed');
    }, 240_000);
  },
);
