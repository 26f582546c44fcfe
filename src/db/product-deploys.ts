/**
 * The deployment columns of the products table (migration 0005): the deploy hold and the signed
 * deployment transaction. The lifecycle's deployer writes them; the operator commands (hold,
 * release) and the demo provisioning read and set them.
 */
import type { Queryable } from './client.ts';

export function createProductDeploysRepo(db: Queryable) {
  return {
    /**
     * Records the signed deployment before it is broadcast. Only a pending product with no
     * deployment in flight takes it, so two writers can never both start one.
     */
    async recordSigned(
      id: string,
      txHash: `0x${string}`,
      raw: `0x${string}`,
      sentBlock?: bigint,
    ): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET deploy_tx_hash = $2, deploy_raw_tx = $3, deploy_sent_block = $4,
           deploy_prior_tx_hashes = '{}', updated_at = now()
         WHERE id = $1 AND status = 'pending_deploy' AND deploy_tx_hash IS NULL AND NOT deploy_held`,
        [id, txHash, raw, sentBlock?.toString() ?? null],
      );
      return r.rowCount === 1;
    },

    /**
     * A replacement of the recorded deployment (same nonce, higher fees), recorded before it is
     * broadcast; only while `previousHash` is still the current attempt.
     */
    async recordReplacement(
      id: string,
      previousHash: `0x${string}`,
      next: { txHash: `0x${string}`; raw: `0x${string}`; sentBlock: bigint },
    ): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET deploy_tx_hash = $3, deploy_raw_tx = $4, deploy_sent_block = $5,
           deploy_prior_tx_hashes = array_append(deploy_prior_tx_hashes, $2::text), updated_at = now()
         WHERE id = $1 AND deploy_tx_hash = $2 AND status = 'pending_deploy'`,
        [id, previousHash, next.txHash, next.raw, next.sentBlock.toString()],
      );
      return r.rowCount === 1;
    },

    /** The current attempt's sent block (null for one recorded before 0036) and earlier attempts. */
    async attempts(id: string): Promise<{ sentBlock: bigint | null; prior: `0x${string}`[] }> {
      const { rows } = await db.query<{
        deploy_sent_block: string | number | null;
        deploy_prior_tx_hashes: `0x${string}`[] | null;
      }>('SELECT deploy_sent_block, deploy_prior_tx_hashes FROM products WHERE id = $1', [id]);
      const r = rows[0];
      return {
        sentBlock:
          r?.deploy_sent_block === null || r?.deploy_sent_block === undefined
            ? null
            : BigInt(String(r.deploy_sent_block)),
        prior: r?.deploy_prior_tx_hashes ?? [],
      };
    },

    /** Signed deployments of a chain's pending products that are recorded and not yet mined. */
    async inFlightRawTxs(chainId: number): Promise<`0x${string}`[]> {
      const { rows } = await db.query<{ deploy_raw_tx: `0x${string}` }>(
        `SELECT deploy_raw_tx FROM products
         WHERE chain_id = $1 AND status = 'pending_deploy' AND deploy_raw_tx IS NOT NULL`,
        [chainId],
      );
      return rows.map((r) => r.deploy_raw_tx);
    },

    async rawTx(id: string): Promise<`0x${string}` | undefined> {
      const { rows } = await db.query<{ deploy_raw_tx: `0x${string}` | null }>(
        'SELECT deploy_raw_tx FROM products WHERE id = $1',
        [id],
      );
      return rows[0]?.deploy_raw_tx ?? undefined;
    },

    /** Forgets a deployment that can never be mined (replaced nonce, or reverted with `hold`). */
    async clearDeploy(id: string, txHash: string, hold: boolean): Promise<void> {
      await db.query(
        `UPDATE products SET deploy_tx_hash = NULL, deploy_raw_tx = NULL, deploy_sent_block = NULL,
           deploy_prior_tx_hashes = '{}', deploy_held = deploy_held OR $3, updated_at = now()
         WHERE id = $1 AND deploy_tx_hash = $2 AND status = 'pending_deploy'`,
        [id, txHash, hold],
      );
    },

    async setHold(id: string, held: boolean): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET deploy_held = $2, updated_at = now()
         WHERE id = $1 AND status = 'pending_deploy'`,
        [id, held],
      );
      return r.rowCount === 1;
    },

    async heldIds(): Promise<Set<string>> {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM products WHERE status = 'pending_deploy' AND deploy_held`,
      );
      return new Set(rows.map((r) => r.id));
    },
  };
}

export type ProductDeploysRepo = ReturnType<typeof createProductDeploysRepo>;
