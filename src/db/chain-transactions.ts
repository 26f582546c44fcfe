/**
 * The operator's transactions (migration 0035): recorded before broadcast, followed until mined,
 * reverted or dropped. Written by the transaction sender (src/chain/tx-sender.ts); read by the
 * CLI (`yield-service tx list`) and the metrics collectors. Amounts are bigint wei throughout.
 */
import type { Hex } from 'viem';
import type { Queryable } from './client.ts';

export type ChainTxStatus = 'pending' | 'mined' | 'reverted' | 'dropped';

export interface ChainTx {
  id: string;
  chainId: number;
  sender: `0x${string}`;
  nonce: number;
  purpose: string;
  to: `0x${string}` | null;
  data: Hex;
  value: bigint;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  txHash: Hex;
  rawTx: Hex;
  hashes: Hex[];
  attempts: number;
  status: ChainTxStatus;
  sentBlock: bigint;
  minedTxHash: Hex | null;
  blockNumber: bigint | null;
  feePaid: bigint | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}

type Row = Record<string, unknown>;

const big = (v: unknown) => BigInt(String(v));
const bigOrNull = (v: unknown) => (v === null || v === undefined ? null : big(v));

function toTx(r: Row): ChainTx {
  return {
    id: String(r.id),
    chainId: Number(r.chain_id),
    sender: r.sender as `0x${string}`,
    nonce: Number(r.nonce),
    purpose: r.purpose as string,
    to: (r.to_address as `0x${string}` | null) ?? null,
    data: r.data as Hex,
    value: big(r.value),
    gas: big(r.gas),
    maxFeePerGas: big(r.max_fee_per_gas),
    maxPriorityFeePerGas: big(r.max_priority_fee_per_gas),
    txHash: r.tx_hash as Hex,
    rawTx: r.raw_tx as Hex,
    hashes: r.hashes as Hex[],
    attempts: Number(r.attempts),
    status: r.status as ChainTxStatus,
    sentBlock: big(r.sent_block),
    minedTxHash: (r.mined_tx_hash as Hex | null) ?? null,
    blockNumber: bigOrNull(r.block_number),
    feePaid: bigOrNull(r.fee_paid),
    error: (r.error as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
  };
}

export interface NewChainTx {
  chainId: number;
  sender: `0x${string}`;
  nonce: number;
  purpose: string;
  to: `0x${string}` | null;
  data: Hex;
  value: bigint;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  txHash: Hex;
  rawTx: Hex;
  sentBlock: bigint;
}

export interface ChainTxTotals {
  chainId: number;
  pending: number;
  /** Seconds since the oldest pending transaction was first recorded (0 when none). */
  oldestPendingAgeSeconds: number;
  /** Wei paid in fees by every mined or reverted transaction recorded. */
  feesPaid: bigint;
}

export function createChainTransactionsRepo(db: Queryable) {
  return {
    async insert(t: NewChainTx): Promise<ChainTx> {
      const { rows } = await db.query<Row>(
        `INSERT INTO chain_transactions (chain_id, sender, nonce, purpose, to_address, data, value,
           gas, max_fee_per_gas, max_priority_fee_per_gas, tx_hash, raw_tx, hashes, sent_block)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, ARRAY[$11::text], $13)
         RETURNING *`,
        [
          t.chainId,
          t.sender.toLowerCase(),
          t.nonce,
          t.purpose,
          t.to,
          t.data,
          t.value.toString(),
          t.gas.toString(),
          t.maxFeePerGas.toString(),
          t.maxPriorityFeePerGas.toString(),
          t.txHash,
          t.rawTx,
          t.sentBlock.toString(),
        ],
      );
      return toTx(rows[0]!);
    },

    async get(id: string): Promise<ChainTx | undefined> {
      const { rows } = await db.query<Row>('SELECT * FROM chain_transactions WHERE id = $1', [id]);
      return rows[0] ? toTx(rows[0]) : undefined;
    },

    /** The highest nonce among `sender`'s pending transactions on the chain. */
    async highestPendingNonce(chainId: number, sender: string): Promise<number | undefined> {
      const { rows } = await db.query<{ n: number | string | null }>(
        `SELECT max(nonce) AS n FROM chain_transactions
         WHERE chain_id = $1 AND sender = $2 AND status = 'pending'`,
        [chainId, sender.toLowerCase()],
      );
      const n = rows[0]?.n;
      return n === null || n === undefined ? undefined : Number(n);
    },

    async pending(chainId: number): Promise<ChainTx[]> {
      const { rows } = await db.query<Row>(
        `SELECT * FROM chain_transactions WHERE chain_id = $1 AND status = 'pending'
         ORDER BY nonce`,
        [chainId],
      );
      return rows.map(toTx);
    },

    /**
     * A replacement: new fees, hash and bytes at the same nonce, only when the row still holds
     * `previousHash` (two processes that both replace it: one wins, the other broadcasts nothing).
     */
    async replace(
      id: string,
      previousHash: Hex,
      next: {
        txHash: Hex;
        rawTx: Hex;
        maxFeePerGas: bigint;
        maxPriorityFeePerGas: bigint;
        sentBlock: bigint;
      },
    ): Promise<boolean> {
      const r = await db.query(
        `UPDATE chain_transactions SET tx_hash = $3, raw_tx = $4, max_fee_per_gas = $5,
           max_priority_fee_per_gas = $6, sent_block = $7, hashes = array_append(hashes, $3::text),
           attempts = attempts + 1, updated_at = now()
         WHERE id = $1 AND tx_hash = $2 AND status = 'pending'`,
        [
          id,
          previousHash,
          next.txHash,
          next.rawTx,
          next.maxFeePerGas.toString(),
          next.maxPriorityFeePerGas.toString(),
          next.sentBlock.toString(),
        ],
      );
      return r.rowCount === 1;
    },

    /** The outcome: mined or reverted (with the fee paid), or dropped (with what to do). */
    async settle(
      id: string,
      outcome:
        | {
            status: 'mined' | 'reverted';
            minedTxHash: Hex;
            blockNumber: bigint;
            feePaid: bigint;
            error?: string;
          }
        | { status: 'dropped'; error: string },
    ): Promise<void> {
      const mined = outcome.status === 'dropped' ? undefined : outcome;
      await db.query(
        `UPDATE chain_transactions SET status = $2, mined_tx_hash = $3, block_number = $4,
           fee_paid = $5, error = $6, updated_at = now()
         WHERE id = $1 AND status = 'pending'`,
        [
          id,
          outcome.status,
          mined?.minedTxHash ?? null,
          mined?.blockNumber.toString() ?? null,
          mined?.feePaid.toString() ?? null,
          outcome.error ?? null,
        ],
      );
    },

    /** Pending ones first, then the newest; for `yield-service tx list`. */
    async list(options: { chainId?: number; limit: number }): Promise<ChainTx[]> {
      const { rows } = await db.query<Row>(
        `SELECT * FROM chain_transactions WHERE ($1::int IS NULL OR chain_id = $1)
         ORDER BY (status = 'pending') DESC, created_at DESC, id DESC LIMIT $2`,
        [options.chainId ?? null, options.limit],
      );
      return rows.map(toTx);
    },

    async totals(): Promise<ChainTxTotals[]> {
      const { rows } = await db.query<{
        chain_id: number;
        pending: string | number;
        oldest: string | number | null;
        fees: string | number | null;
      }>(
        `SELECT chain_id,
           count(*) FILTER (WHERE status = 'pending') AS pending,
           extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending')) AS oldest,
           coalesce(sum(fee_paid), 0) AS fees
         FROM chain_transactions GROUP BY chain_id ORDER BY chain_id`,
      );
      return rows.map((r) => ({
        chainId: Number(r.chain_id),
        pending: Number(r.pending),
        oldestPendingAgeSeconds: Number(r.oldest ?? 0),
        feesPaid: BigInt(String(r.fees ?? 0).split('.')[0]!),
      }));
    },
  };
}

export type ChainTransactionsRepo = ReturnType<typeof createChainTransactionsRepo>;
