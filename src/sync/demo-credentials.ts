/**
 * DATA_DIR/demo-credentials.json: the demo's base URL, RPC URL, and per partner environment a key,
 * a revoked key, the inbound webhook secret, a product slug in every status and wallets with a
 * position. Written once, when the demo is provisioned (the only moment the full keys and secrets
 * exist), readable by its owner only; its addresses are brought up to date at every start
 * (refreshDemoAddresses), since PORT or the local chain's port may differ from the first start's.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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

/**
 * Rewrites the file's `base_url` and `rpc_url` with this start's (a service restarted on another
 * PORT kept the first start's address, and a guide polling it waited forever). False when the
 * demo has no credentials file.
 */
export function refreshDemoAddresses(
  dataDir: string,
  addresses: { base_url: string; rpc_url: string },
): boolean {
  const file = demoCredentialsFile(dataDir);
  if (!existsSync(file)) return false;
  const content = JSON.parse(readFileSync(file, 'utf8')) as Parameters<
    typeof writeDemoCredentials
  >[1];
  if (content.base_url === addresses.base_url && content.rpc_url === addresses.rpc_url) return true;
  writeDemoCredentials(dataDir, { ...content, ...addresses });
  return true;
}
