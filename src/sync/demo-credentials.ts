/**
 * DATA_DIR/demo-credentials.json: the demo's base URL, RPC URL, and per partner environment a key,
 * a revoked key, the inbound webhook secret, a product slug in every status and wallets with a
 * position. Written once, when the demo is provisioned (the only moment the full keys and secrets
 * exist), readable by its owner only.
 */
import { chmodSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DemoPartnerCredentials } from './demo.ts';

export function demoCredentialsFile(dataDir: string): string {
  return path.join(dataDir, 'demo-credentials.json');
}

export function writeDemoCredentials(
  dataDir: string,
  content: { base_url: string; rpc_url: string; partners: DemoPartnerCredentials[] },
): string {
  const file = demoCredentialsFile(dataDir);
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}
