/**
 * A headless integration with the SDK, end to end on the local chain: the partner's own UI (here,
 * this script) deposits for a user with a dev wallet — approve if needed, then deposit, built by the
 * SDK's engine helpers from the product's metadata, no ABI work — tells the service about the
 * transaction (inbound deposit.submitted), reads the user's position through the API, and receives
 * the service's deposit.confirmed webhook on its own HTTPS endpoint, verified with verifyWebhook.
 *
 * Run it against the local service (see "Headless example" in packages/sdk/README.md):
 *   WEBHOOK_SECRET=whsec_… npx tsx packages/sdk/examples/headless.ts
 *
 * Environment: DATA_DIR (where the service wrote demo-credentials.json; default ./data),
 * WEBHOOK_SECRET (the secret `webhook add` printed), RECEIVER_PORT (the port of the registered
 * https://localhost:PORT/hooks; default 8443), TLS_CERT / TLS_KEY (the receiver's certificate;
 * default the repository's test certificate for localhost, trusted by the service when started with
 * WEBHOOK_CA_FILE=test/fixtures/tls/ca.pem), AMOUNT (default 100, whole USDC).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PartnerYieldClient, verifyWebhook, type WebhookEvent } from '@partner-yield/sdk';
import { createEngineHelpers, parseAssets, sendCalls } from '@partner-yield/sdk/engine';
import { createPublicClient, createWalletClient, http, parseAbi } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** anvil's well-known development mnemonic: never a real wallet. */
const DEV_MNEMONIC = 'test test test test test test test test test test test junk';

const log = (line: string) => process.stdout.write(`${line}\n`);

interface DemoCredentials {
  base_url: string;
  rpc_url: string;
  partners: Array<{
    name: string;
    live: { api_key: string; inbound_secret: string; products: { active: string } };
  }>;
}

/** The partner's webhook endpoint: verifies each delivery and hands over the verified events. */
function startReceiver(
  port: number,
  secret: string,
  onEvent: (e: WebhookEvent) => void,
  onRefused: (reason: string) => void,
) {
  const server = createServer(
    {
      cert: readFileSync(process.env.TLS_CERT ?? `${ROOT}/test/fixtures/tls/localhost-cert.pem`),
      key: readFileSync(process.env.TLS_KEY ?? `${ROOT}/test/fixtures/tls/localhost-key.pem`),
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        try {
          // The raw bytes as received, never a parsed object: the signature covers the bytes.
          const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret);
          res.writeHead(200).end('ok');
          onEvent(event);
        } catch (e) {
          log(`refused a delivery: ${(e as Error).message}`);
          res.writeHead(400).end('bad signature');
          onRefused((e as Error).message);
        }
      });
    },
  );
  return new Promise<typeof server>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

async function main() {
  const dataDir = path.resolve(process.env.DATA_DIR ?? `${ROOT}/data`);
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) throw new Error('WEBHOOK_SECRET: the whsec_… secret `webhook add` printed');
  const creds = JSON.parse(
    readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'),
  ) as DemoCredentials;
  const partner = creds.partners[0]!;
  const slug = partner.live.products.active;

  // 1. The partner's webhook endpoint, listening before anything happens.
  const confirmed = new Map<string, WebhookEvent>();
  const waiters = new Set<() => void>();
  let refused: string | undefined;
  const receiver = await startReceiver(
    Number(process.env.RECEIVER_PORT ?? 8443),
    secret,
    (e) => {
      log(`webhook verified: ${e.type} (id ${e.id})`);
      if (e.known && e.type === 'deposit.confirmed') confirmed.set(e.data.tx_hash.toLowerCase(), e);
      for (const w of waiters) w();
    },
    (reason) => {
      refused = reason;
      for (const w of waiters) w();
    },
  );

  try {
    // 2. The API client: the key stays on the partner's server.
    const client = new PartnerYieldClient({
      baseUrl: creds.base_url,
      apiKey: partner.live.api_key,
      inboundSecret: partner.live.inbound_secret,
      onRetry: (r) => log(`retrying ${r.path} after ${r.error.code} in ${r.delayMs} ms`),
    });
    const product = await client.getProduct(slug);
    log(
      `product ${product.slug}: ${product.display_name}, net APY ${product.latest_metrics?.net_apy_for_user ?? 'not measured yet'}`,
    );

    // 3. A dev wallet with test dollars (on the local chain the token's owner mints them).
    const publicClient = createPublicClient({ transport: http(creds.rpc_url) });
    const user = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 19 });
    const wallet = createWalletClient({ account: user, transport: http(creds.rpc_url) });
    const assets = parseAssets(product, process.env.AMOUNT ?? '100');
    const minter = createWalletClient({
      account: mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 0 }),
      transport: http(creds.rpc_url),
    });
    // The local service sends its own transactions from that account too: a nonce it took between
    // our read of the nonce and our send is retried with the next one.
    const mint = () =>
      minter.writeContract({
        chain: null,
        address: product.asset_address as `0x${string}`,
        abi: parseAbi(['function mint(address to, uint256 amount)']),
        functionName: 'mint',
        args: [user.address, assets],
      });
    let mintHash: `0x${string}` | undefined;
    for (let attempt = 1; !mintHash; attempt++) {
      try {
        mintHash = await mint();
      } catch (err) {
        if (attempt >= 5 || !/nonce/i.test(String(err))) throw err;
      }
    }
    await publicClient.waitForTransactionReceipt({ hash: mintHash });

    // 4. The deposit, built by the SDK: approve when the allowance is short, then deposit.
    const engine = createEngineHelpers(product, publicClient);
    const plan = await engine.buildDeposit({ owner: user.address, assets });
    log(
      `deposit plan: ${plan.calls.map((c) => c.kind).join(' then ')}; preview ${plan.previewShares} shares`,
    );
    const receipts = await sendCalls(wallet, publicClient, plan.calls);
    const receipt = receipts.at(-1)!;
    const [minted] = engine.decodeReceipt(receipt).deposits;
    const txHash = receipt.transactionHash.toLowerCase();
    log(`deposit ${txHash}: ${minted?.shares} shares minted`);

    // 5. Tell the service about it (inbound deposit.submitted), as a headless partner does.
    const ack = await client.sendInbound({
      type: 'deposit.submitted',
      data: {
        product_slug: slug,
        chain_id: product.chain_id,
        tx_hash: txHash,
        user_address: user.address,
        amount: process.env.AMOUNT ?? '100',
      },
    });
    log(`inbound deposit.submitted stored as event ${ack.event_id}`);

    // 6. The position, read through the API.
    const position = await client.getPosition(slug, user.address);
    log(`position: ${position.shares} shares worth ${position.assets} ${product.asset_symbol}`);

    // 7. The deposit.confirmed webhook. The indexer confirms a deposit two blocks deep; the local
    //    chain mines only on transactions, so mine a few here (a real chain needs no help).
    await publicClient.request({ method: 'anvil_mine' as never, params: ['0x3'] as never });
    const deadline = Date.now() + Number(process.env.WEBHOOK_TIMEOUT_MS ?? 120_000);
    while (!confirmed.has(txHash)) {
      // Deliveries to this endpoint that do not verify: WEBHOOK_SECRET is not its secret.
      if (refused) throw new Error(`a delivery did not verify with WEBHOOK_SECRET (${refused})`);
      if (Date.now() > deadline) throw new Error(`no deposit.confirmed for ${txHash}`);
      await new Promise<void>((r) => {
        const done = () => (waiters.delete(done), r());
        waiters.add(done);
        setTimeout(done, 1000);
      });
    }
    const event = confirmed.get(txHash)!;
    if (event.known && event.type === 'deposit.confirmed') {
      log(
        `deposit.confirmed ${event.data.tx_hash}: ${event.data.amount} ${event.data.asset_symbol}, ${event.data.shares} shares`,
      );
    }
    log('headless integration: done');
  } finally {
    await new Promise((r) => receiver.close(r));
  }
}

main().catch((e) => {
  log(`failed: ${(e as Error).message}`);
  process.exit(1);
});
