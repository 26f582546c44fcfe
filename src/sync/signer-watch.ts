/**
 * The signer's side of a chain's lifecycle round: follows the operator's pending transactions
 * (replacing a stuck one, settling mined, reverted or dropped ones; tx-sender.ts) after the CLI that
 * sent them stopped waiting, and keeps the signer's balance gauge fresh (at most once a minute, so
 * a paid RPC quota is not spent on it).
 */
import type { Account } from 'viem';
import { formatEther } from 'viem';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { createTxSender } from '../chain/tx-sender.ts';
import type { Queryable } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import { signerBalance } from '../telemetry/metrics.ts';

const BALANCE_EVERY_MS = 60_000;

export function createSignerWatch(options: {
  db: Queryable;
  chain: ChainSettings;
  client: ChainClient;
  account: Account | undefined;
  log: Logger;
  holder: string;
}) {
  const { chain, client, account, log } = options;
  const sender = account
    ? createTxSender({ db: options.db, chain, client, account, log, holder: options.holder })
    : undefined;
  let balanceReadAt = 0;

  async function round(): Promise<void> {
    if (!sender || !account) return;
    const followed = await sender.followPending();
    const settled = followed.some((t) => t.status !== 'pending');
    if (settled || Date.now() - balanceReadAt >= BALANCE_EVERY_MS) {
      const wei = await client.getBalance({ address: account.address });
      balanceReadAt = Date.now();
      signerBalance.set(
        { chain_id: String(chain.chainId), address: account.address },
        Number(formatEther(wei)),
      );
    }
  }
  return { round, sender };
}
