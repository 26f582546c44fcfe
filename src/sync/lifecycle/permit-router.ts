/**
 * Deploys the chain's permit deposit router (src/chain/permit-router.ts) beside the engines: once
 * the chain has a product, each lifecycle round checks the router's computed address for code and,
 * when there is none and nothing is in flight, sends its CREATE2 deployment through the signer's
 * transaction sender (recorded, nonce-leased and followed like the operator's transactions: the
 * signer watch rebroadcasts or replaces it). Once code is seen, nothing more is read. A chain
 * without a signer, or without the deterministic deployment proxy, keeps no router: the embed and
 * the SDK then skip the permit rung (approve + deposit, or a batch).
 */
import type { Account } from 'viem';
import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient } from '../../chain/client.ts';
import {
  CREATE2_FACTORY,
  permitRouterAddress,
  permitRouterDeployment,
} from '../../chain/permit-router.ts';
import { createTxSender } from '../../chain/tx-sender.ts';
import type { Queryable } from '../../db/client.ts';
import type { Logger } from '../../logger.ts';

export function createPermitRouterKeeper(options: {
  db: Queryable;
  chain: ChainSettings;
  client: ChainClient;
  account: Account | undefined;
  log: Logger;
  holder: string;
}) {
  const { chain, client, account, log } = options;
  const address = permitRouterAddress();
  let present = false;
  let sentTx: string | undefined;
  let noFactory = false;

  const hasCode = async (a: `0x${string}`) => {
    const code = await client.getCode({ address: a });
    return code !== undefined && code !== '0x';
  };

  /** One round: true once the router is on the chain. */
  async function ensure(hasProducts: () => Promise<boolean>): Promise<boolean> {
    if (present) return true;
    if (await hasCode(address)) {
      present = true;
      log.info({ chainId: chain.chainId, address }, 'permit deposit router is on the chain');
      return true;
    }
    if (!account || sentTx || noFactory || !(await hasProducts())) return false;
    if (!(await hasCode(CREATE2_FACTORY))) {
      noFactory = true;
      log.warn(
        { chainId: chain.chainId, factory: CREATE2_FACTORY },
        'no deterministic deployment proxy on this chain: no permit deposit router (deposits use approve + deposit)',
      );
      return false;
    }
    const sender = createTxSender({
      db: options.db,
      chain,
      client,
      account,
      log,
      holder: options.holder,
    });
    const tx = await sender.send({
      ...permitRouterDeployment(),
      purpose: 'deploy the permit deposit router',
    });
    sentTx = tx.id;
    log.info(
      { chainId: chain.chainId, address, txHash: tx.txHash },
      'deploying the permit deposit router',
    );
    return false;
  }

  return { address, ensure };
}
