/**
 * The log indexer of one chain: turns the engines' `Deposit`, `Withdraw` and `RedeemRequested` logs
 * into stored lifecycle events, up to head − confirmationDepth, behind a per-chain cursor.
 *
 * Guarantees and how they hold:
 * - No gap, no duplicate: the events of a block range and the cursor move to its last block commit in
 *   one transaction; a crash or an RPC outage leaves the cursor where the last commit put it, and the
 *   next round starts from there. Re-indexing a range stores nothing twice (unique dedupe key).
 * - Confirmed blocks only: nothing above head − depth is read, so a reorg shallower than the depth
 *   never yields an event for an orphaned log.
 * - Continuity: each range first reads the hash of its last block, then checks that the block at the
 *   cursor still has the stored hash, and stores the hash read first as the new cursor hash. Any reorg
 *   that lands between those reads or later changes a hash the next range checks, so it is seen.
 *   Every log's block hash must also equal the header fetched for its block time.
 * - Deeper reorg (beyond the depth): logged as an error; the cursor rewinds to its newest past
 *   position whose hash the chain still has (or `maxRewindBlocks` back), every stored event of a
 *   block the chain no longer has is retracted with a `chain_event.retracted` event
 *   (indexer/retract.ts), and the blocks are re-indexed: what the canonical chain holds now is
 *   stored, the same log mined again included (as a new event).
 * - New engines: an engine seen for the first time whose deployed block is at or below the cursor
 *   rewinds the cursor to just before that block; other engines' logs in the re-read blocks are
 *   already stored and insert nothing. The lifecycle records deployments near the head, so the
 *   re-read is short.
 * - One indexer per chain: a lease `indexer:<chainId>` (taken each round, renewed in every range's
 *   transaction) and a compare-and-set cursor move. A holder that lost its lease, or raced another,
 *   rolls its range back.
 * - Provider limits: ranges start at blockRangeLimit and halve when the provider rejects one (too
 *   many results, range too large, timeout); the limit grows back slowly after successes.
 */

import type { Hex } from 'viem';
import { getHeader, getHeaders, headNumber } from '../chain/block-headers.ts';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { MAX_CHECKED_BLOCKS } from '../chain/complete-logs.ts';
import { confirmedBlock } from '../chain/confirmed-head.ts';
import { nextSpan, RangeRejectedError } from '../chain/log-ranges.ts';
import { insertChunkFor, insertPrepared } from '../db/chain-events-copy.ts';
import type { Database, Queryable } from '../db/client.ts';
import { type Cursor, createCursorsRepo } from '../db/cursors.ts';
import { createProductsRepo, type Product } from '../db/products.ts';
import type { Logger } from '../logger.ts';
import {
  chainEventsRetracted,
  indexerLogsRecovered,
  recordIndexerRound,
} from '../telemetry/metrics.ts';
import { createLease, createLeasedJob } from '../worker/lease.ts';
import type { Job } from '../worker/runner.ts';
import {
  ChainMovedError,
  type FetchedRange,
  type FetchResult,
  fetchRange as readRange,
} from './indexer/fetch-range.ts';
import { createRangeWindow } from './indexer/range-window.ts';
import { findOrphanedEvents, retractEvents } from './indexer/retract.ts';

export interface IndexerDeps {
  db: Database;
  logger: Logger;
  chain: ChainSettings;
  client: ChainClient;
  /** Identity of this process in the lease (e.g. hostname:pid:random). */
  holder: string;
  /** Lease time to live; another process takes over this long after the holder stops renewing. */
  leaseTtlMs?: number;
  /** How far back a deep reorg may rewind when no past cursor position matches the chain. */
  maxRewindBlocks?: number;
  /** Rows per INSERT statement. */
  insertChunk?: number;
  /** Logs per range the range window aims at (default 2,000; see indexer/range-window.ts). */
  targetLogsPerRange?: number;
  /** Failure injection for tests: runs in the range transaction after each inserted chunk. */
  afterInsertChunk?: (written: number) => void | Promise<void>;
}

export interface IndexRound {
  /** False when another process holds the chain's lease (nothing was done). */
  leased: boolean;
  /** First and last block indexed this round; null when nothing new was confirmed. */
  fromBlock: bigint | null;
  toBlock: bigint | null;
  /** Events newly stored this round. */
  events: number;
  /** Engine logs read this round. */
  logs: number;
  /**
   * Logs a range answer had left out (a node behind the range's end answered it) and that the
   * header check found again by block hash.
   */
  recovered: number;
}

export interface Indexer {
  runOnce(signal?: AbortSignal): Promise<IndexRound>;
  job(intervalMs: number): Job;
  /** Current adaptive block range (shrinks on provider rejection). */
  readonly rangeLimit: bigint;
}

export const DEFAULT_LEASE_TTL_MS = 15_000;
export const DEFAULT_MAX_REWIND_BLOCKS = 1_000;
/** Successful ranges in a row before a shrunk range limit doubles again. */
const GROW_AFTER = 16;
/** Reorg rewinds or mid-range chain changes tolerated in one round before giving up until the next. */
const MAX_RESTARTS_PER_ROUND = 5;

export function createIndexer(deps: IndexerDeps): Indexer {
  const { db, logger, chain, client, holder } = deps;
  const chainId = chain.chainId;
  const ttl = deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const maxRewind = BigInt(deps.maxRewindBlocks ?? DEFAULT_MAX_REWIND_BLOCKS);
  const configuredLimit = BigInt(Math.max(1, chain.blockRangeLimit));
  const log = logger.child({ component: 'indexer', chainId });
  const lease = createLease({ db, name: `indexer:${chainId}`, holder, ttlMs: ttl });
  const cursors = createCursorsRepo(db);
  const insertChunk = deps.insertChunk ?? insertChunkFor(db.engine);
  let limit = configuredLimit;
  let successes = 0;
  const window = createRangeWindow({
    maxBlocks: configuredLimit,
    ...(deps.targetLogsPerRange ? { targetLogs: deps.targetLogsPerRange } : {}),
  });

  /** Runs fn in a transaction that commits only while this process still holds the lease. */
  const leasedTx = <T>(fn: (tx: Queryable) => Promise<T>) =>
    db.transaction(async (tx) => {
      await lease.renewIn(tx);
      return fn(tx);
    });

  /**
   * Loads the chain's engines; registers the ones seen for the first time and, when one was deployed
   * at or below the cursor, rewinds the cursor to just before its deployed block. Creates the cursor
   * (just before the earliest engine, never above the confirmed head) on the first round.
   */
  async function syncEngines(safe: bigint): Promise<Map<string, Product>> {
    const products = await createProductsRepo(db).listDeployedOnChain(chainId);
    const engines = new Map<string, Product>();
    for (const p of products) if (p.engineAddress) engines.set(p.engineAddress.toLowerCase(), p);
    const known = await cursors.knownEngines(chainId);
    const fresh = [...engines.entries()].filter(([a]) => !known.has(a));
    if (fresh.length === 0) return engines;

    const cursor = await cursors.get(chainId);
    const earliest = fresh.reduce((m, [, p]) => {
      const b = p.deployedBlock ?? 0n;
      return b < m ? b : m;
    }, safe + 1n);
    let start = earliest > 0n ? earliest - 1n : 0n;
    if (start > safe) start = safe;
    const rewind = !cursor || start < cursor.blockNumber;
    const target: Cursor | undefined = rewind
      ? { blockNumber: start, blockHash: (await getHeader(client, start)).hash }
      : undefined;
    await leasedTx(async (tx) => {
      const repo = createCursorsRepo(tx);
      await repo.addEngines(
        chainId,
        fresh.map(([address, p]) => ({ address, productId: p.id })),
      );
      if (target) await repo.move(chainId, cursor, target);
    });
    log.info(
      {
        engines: fresh.map(([a]) => a),
        ...(target ? { cursor: target.blockNumber.toString() } : {}),
      },
      cursor && target
        ? 'new engines: cursor rewound to their deployed block'
        : 'new engines followed',
    );
    return engines;
  }

  /**
   * A reorg deeper than the depth took the cursor's block away: rewind to the newest past position
   * whose hash the chain still has, or `maxRewind` blocks back when none does.
   */
  async function rewindAfterReorg(cursor: Cursor, chainHash: Hex): Promise<Cursor> {
    const history = (await cursors.history(chainId)).filter(
      (h) => h.blockNumber < cursor.blockNumber && h.blockNumber >= cursor.blockNumber - maxRewind,
    );
    let target: Cursor | undefined;
    for (let i = 0; i < history.length && !target; i += 32) {
      const batch = history.slice(i, i + 32);
      const headers = await getHeaders(
        client,
        batch.map((h) => h.blockNumber),
      );
      target = batch.find((h) => headers.get(h.blockNumber)?.hash === h.blockHash);
    }
    if (!target) {
      const n = cursor.blockNumber > maxRewind ? cursor.blockNumber - maxRewind : 0n;
      target = { blockNumber: n, blockHash: (await getHeader(client, n)).hash };
    }
    const rewindTo = target;
    const orphans = await findOrphanedEvents(db, client, chainId, rewindTo.blockNumber);
    const retracted = await leasedTx(async (tx) => {
      const n = await retractEvents(tx, chainId, orphans, new Date());
      await createCursorsRepo(tx).move(chainId, cursor, rewindTo);
      return n;
    });
    if (retracted > 0) chainEventsRetracted.inc({ chain_id: String(chainId) }, retracted);
    log.error(
      {
        cursor: cursor.blockNumber.toString(),
        storedHash: cursor.blockHash,
        chainHash,
        rewindTo: rewindTo.blockNumber.toString(),
        retracted,
      },
      'reorg deeper than the confirmation depth: events of orphaned blocks retracted (chain_event.retracted sent), rewinding and re-indexing',
    );
    return rewindTo;
  }

  const fetchRange = (cursor: Cursor, to: bigint, engines: Map<string, Product>) =>
    readRange(client, { chainId, cursor, to, engines, insertChunk });

  /** Stores a fetched range's events and moves the cursor to its end, in one transaction. */
  async function commitRange(cursor: Cursor, r: FetchedRange): Promise<number> {
    const started = performance.now();
    const inserted = await leasedTx(async (tx) => {
      const n = await insertPrepared(tx, r.events, deps.afterInsertChunk);
      await createCursorsRepo(tx).move(chainId, cursor, r.next);
      return n;
    });
    log.debug(
      {
        from: r.from.toString(),
        to: r.next.blockNumber.toString(),
        logs: r.logs,
        rpcMs: r.rpcMs,
        buildMs: r.buildMs,
        dbMs: Math.round(performance.now() - started),
      },
      'range indexed',
    );
    return inserted;
  }

  async function runOnce(signal?: AbortSignal): Promise<IndexRound> {
    const ran = await lease.run(() => indexRound(signal));
    return (
      ran?.value ?? {
        leased: false,
        fromBlock: null,
        toBlock: null,
        events: 0,
        logs: 0,
        recovered: 0,
      }
    );
  }

  /** One round while holding the lease: from the cursor up to the confirmed head. */
  async function indexRound(signal?: AbortSignal): Promise<IndexRound> {
    const round: IndexRound = {
      leased: true,
      fromBlock: null,
      toBlock: null,
      events: 0,
      logs: 0,
      recovered: 0,
    };

    const head = await headNumber(client);
    const safe = await confirmedBlock(client, chain, head);
    if (safe < 0n) return round;
    const engines = await syncEngines(safe);
    if (engines.size === 0) return round;
    const stored = await cursors.get(chainId);
    if (!stored) return round;
    let cursor: Cursor = stored;

    let restarts = 0;
    const rangeEnd = (c: Cursor) => {
      let span = window.blocks < limit ? window.blocks : limit;
      // Every header of a range is held while it is checked (complete-logs.ts).
      if (span > MAX_CHECKED_BLOCKS) span = MAX_CHECKED_BLOCKS;
      return c.blockNumber + span < safe ? c.blockNumber + span : safe;
    };
    // The next range is fetched while the current one is written (the RPC and the database work
    // at once). A prefetch only checks continuity against the uncommitted end of the current
    // range: if that commit fails, the prefetch is dropped with it.
    let pending: Promise<FetchResult> | undefined;
    while (cursor.blockNumber < safe && !signal?.aborted) {
      const to = rangeEnd(cursor);
      let result: FetchResult;
      try {
        result = await (pending ?? fetchRange(cursor, to, engines));
      } catch (err) {
        pending = undefined;
        const half =
          err instanceof RangeRejectedError
            ? nextSpan(err, cursor.blockNumber + 1n, to)
            : undefined;
        if (half !== undefined) {
          // The same split as readLogRanges (the provider's named cap, or half), remembered: the
          // next ranges ask for the smaller span.
          limit = half;
          successes = 0;
          log.warn(
            { err: (err as Error).message, limit: limit.toString() },
            'range rejected: shrinking',
          );
          continue;
        }
        if (err instanceof ChainMovedError && ++restarts <= MAX_RESTARTS_PER_ROUND) {
          log.warn({ err: err.message }, 'chain moved during a range: retrying it');
          continue;
        }
        throw err;
      }
      pending = undefined;
      if (result.kind === 'reorg') {
        if (++restarts > MAX_RESTARTS_PER_ROUND) throw new Error('chain keeps reorganising; later');
        cursor = await rewindAfterReorg(cursor, result.chainHash);
        continue;
      }
      const next = result.next;
      window.record(next.blockNumber - cursor.blockNumber, result.logs);
      if (next.blockNumber < safe && !signal?.aborted) {
        pending = fetchRange(next, rangeEnd(next), engines);
        // Handled when awaited; until then it must not count as an unhandled rejection.
        pending.catch(() => {});
      }
      let inserted: number;
      try {
        inserted = await commitRange(cursor, result);
      } catch (err) {
        await pending?.catch(() => {});
        throw err;
      }
      round.fromBlock ??= cursor.blockNumber + 1n;
      round.toBlock = next.blockNumber;
      round.events += inserted;
      round.logs += result.logs;
      round.recovered += result.recovered;
      cursor = next;
      if (limit < configuredLimit && ++successes >= GROW_AFTER) {
        limit = limit * 2n < configuredLimit ? limit * 2n : configuredLimit;
        successes = 0;
      }
    }
    await pending?.catch(() => {});
    recordIndexerRound(chainId, head, cursor.blockNumber, safe);
    if (round.recovered > 0) {
      indexerLogsRecovered.inc({ chain_id: String(chainId) }, round.recovered);
      log.warn(
        { recovered: round.recovered },
        'the provider answered ranges without some of their logs (a node behind the range): found by block hash',
      );
    }
    if (round.events > 0 || round.logs > 0) {
      log.info(
        {
          from: round.fromBlock?.toString(),
          to: round.toBlock?.toString(),
          logs: round.logs,
          events: round.events,
        },
        'indexed',
      );
    }
    return round;
  }

  return {
    runOnce,
    get rangeLimit() {
      return limit;
    },
    job(intervalMs: number): Job {
      return createLeasedJob({ lease, intervalMs, logger, tick: runOnce });
    },
  };
}
