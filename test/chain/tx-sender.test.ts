/**
 * The operator's transactions on anvil (src/chain/tx-sender.ts): a transaction priced under the
 * base fee stays pending, is replaced at the same nonce with fees at least 10 % higher on both
 * fields (what nodes require), within the chain's cap, and mined, while a later operation waits
 * behind it in nonce order; a replacement the cap does not allow is logged, not sent; a restart in
 * the middle (the nonce lease left by a dead process, a node that forgot the pending transaction)
 * keeps nonces right; a revert and a dropped transaction are reported with what to do.
 *
 * A stuck transaction is made for real: with automine off, `anvil_setNextBlockBaseFeePerGas` raises
 * the base fee of each mined block above the transaction's max fee, so the node keeps it pending.
 */
import { encodeFunctionData, type Hex, parseGwei, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainSettings } from '../../src/chain/chains.ts';
import { createChainClient, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { yieldEngineAbi } from '../../src/chain/generated/YieldEngine.ts';
import { readScheduledFeeChange } from '../../src/chain/read-scheduled-fee-change.ts';
import { OperatorError, sendEngineCallReceipt } from '../../src/chain/send-engine-call.ts';
import { signerAccount } from '../../src/chain/signer.ts';
import { createTxSender, nonceLeaseName } from '../../src/chain/tx-sender.ts';
import { createChainTransactionsRepo } from '../../src/db/chain-transactions.ts';
import { createLeasesRepo } from '../../src/db/leases.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import { createSignerWatch } from '../../src/sync/signer-watch.ts';
import { registry } from '../../src/telemetry/metrics.ts';
import { registerTransactionCollectors } from '../../src/telemetry/transaction-collectors.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { type Fixture, mineBlock, newEngine, OPERATOR, setupFixture, USERS } from './helpers.ts';

let fx: Fixture;
let t: TestDatabase;
const logs = captureLogger();

beforeAll(async () => {
  [fx, t] = await Promise.all([setupFixture(), freshDatabase('pglite')]);
});
afterAll(async () => {
  await Promise.all([fx?.stop(), t?.drop()]);
});

const settings = (maxFeeGwei: string, replaceAfterBlocks: number): ChainSettings => ({
  ...localChainSettings(fx.anvil.rpcUrl, fx.anvil.chainId),
  transactions: { maxFeePerGas: parseGwei(maxFeeGwei), replaceAfterBlocks },
});
const client = () => createChainClient(localChainSettings(fx.anvil.rpcUrl), LOCAL_NODE_CLIENT);
const senderFor = (chain: ChainSettings, holder = 'test', leaseWaitMs?: number) =>
  createTxSender({
    db: t.db,
    chain,
    client: client(),
    account: signerAccount(chain)!,
    log: logs.logger,
    holder,
    leaseTtlMs: 1_000,
    leaseWaitMs,
  });
/** Mines one block whose base fee is `baseFee`: a transaction with a lower max fee stays out. */
async function mineAtBaseFee(baseFee: bigint) {
  await fx.rpc('anvil_setNextBlockBaseFeePerGas', [toHex(baseFee)]);
  await mineBlock(fx);
}
async function mined(hash: Hex): Promise<boolean> {
  return fx.client.getTransactionReceipt({ hash }).then(
    () => true,
    () => false,
  );
}
const transfer = (i: number, purpose: string) => ({
  to: USERS[i]!,
  data: '0x' as Hex,
  value: 1n,
  purpose,
});
const perMille = (v: bigint, p: bigint) => (v * p + 999n) / 1000n;

describe('a stuck transaction', () => {
  it('is replaced at the same nonce with bumped fees and mined; a later one waits behind it in order', async () => {
    const sender = senderFor(settings('500', 3));
    const a = await sender.send(transfer(0, 'first'));
    const high = a.maxFeePerGas * 10n;
    for (let i = 0; i < 3; i++) await mineAtBaseFee(high);
    expect(await mined(a.txHash)).toBe(false);

    // A later operation: the next nonce, priced for the high base fee, and still it waits.
    const b = await sender.send(transfer(1, 'second'));
    expect(b.nonce).toBe(a.nonce + 1);
    expect(b.maxFeePerGas).toBeGreaterThan(high);
    await mineAtBaseFee(high);
    expect(await mined(b.txHash)).toBe(false);
    expect((await sender.advance(b.id)).status).toBe('pending');

    const replaced = await sender.advance(a.id);
    expect(replaced).toMatchObject({ nonce: a.nonce, attempts: 2, status: 'pending' });
    expect(replaced.hashes).toEqual([a.txHash, replaced.txHash]);
    expect(replaced.maxFeePerGas).toBeGreaterThanOrEqual(perMille(a.maxFeePerGas, 1100n));
    expect(replaced.maxPriorityFeePerGas).toBeGreaterThanOrEqual(
      perMille(a.maxPriorityFeePerGas, 1100n),
    );
    expect(replaced.maxFeePerGas).toBeLessThanOrEqual(parseGwei('500'));

    await mineAtBaseFee(high);
    const [doneA, doneB] = [await sender.advance(a.id), await sender.advance(b.id)];
    expect(doneA).toMatchObject({ status: 'mined', minedTxHash: replaced.txHash });
    expect(doneB).toMatchObject({ status: 'mined', minedTxHash: b.txHash });
    expect(doneA.blockNumber!).toBeLessThanOrEqual(doneB.blockNumber!);
    expect(doneA.feePaid!).toBeGreaterThan(0n);
    expect(await mined(a.txHash)).toBe(false); // the first attempt never was

    const line = logs.lines().find((l) => l.includes('replaced with higher fees'));
    expect(JSON.parse(line!)).toMatchObject({
      nonce: a.nonce,
      previousTxHash: a.txHash,
      txHash: replaced.txHash,
      attempt: 2,
    });
  });

  it('a later one waiting behind it is not replaced; its own wait starts once it is next in line', async () => {
    const sender = senderFor(settings('500', 3));
    const a = await sender.send(transfer(0, 'stuck first'));
    const high = a.maxFeePerGas * 10n;
    await mineAtBaseFee(high);
    const b = await sender.send(transfer(1, 'queued second'));
    expect(b.maxFeePerGas).toBeGreaterThan(high);
    // b waits replaceAfterBlocks blocks, all of them behind a: paying more could not help it.
    for (let i = 0; i < 3; i++) await mineAtBaseFee(high);
    expect(await sender.advance(b.id)).toMatchObject({ status: 'pending', attempts: 1 });
    const replaced = await sender.advance(a.id);
    expect(replaced.attempts).toBe(2);
    await mineAtBaseFee(high);
    expect(await sender.advance(a.id)).toMatchObject({ status: 'mined' });
    // Mined with a in the same block, or next in line now and priced for the base fee: either way
    // its first attempt is the one mined.
    await mineAtBaseFee(high);
    expect(await sender.advance(b.id)).toMatchObject({
      status: 'mined',
      attempts: 1,
      minedTxHash: b.txHash,
    });
  });

  it('is not replaced past the per-chain fee cap: logged as stuck at the cap, mined once fees fall', async () => {
    const base = (await fx.client.getBlock()).baseFeePerGas!;
    // A cap under the node's suggestion (1.2 x base fee + tip): the first send already pays it.
    const capGwei = (Number((base * 11n) / 10n) / 1e9).toFixed(9);
    const chain = settings(capGwei, 2);
    const sender = senderFor(chain);
    const c = await sender.send(transfer(2, 'capped'));
    expect(c.maxFeePerGas).toBe(parseGwei(capGwei));
    for (let i = 0; i < 2; i++) await mineAtBaseFee(c.maxFeePerGas * 10n);
    const after = await sender.advance(c.id);
    expect(after).toMatchObject({ status: 'pending', attempts: 1, txHash: c.txHash });
    expect(logs.lines().some((l) => l.includes('stuck at the fee cap'))).toBe(true);

    // anvil evicts a transaction priced under the base fee from its pool (geth parks it): the
    // follower rebroadcasts the same bytes once the node takes them again.
    await mineAtBaseFee(base);
    await sender.advance(c.id);
    await mineAtBaseFee(base);
    expect(await sender.advance(c.id)).toMatchObject({ status: 'mined', minedTxHash: c.txHash });
  });

  it('is replaced through the operator command path while the command waits (pause on an engine)', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const chain = settings('500', 2);
    let done = false;
    const pause = sendEngineCallReceipt(
      chain,
      client(),
      { engine, call: 'pause', purpose: 'pause test' },
      { db: t.db, logger: logs.logger, timeoutMs: 30_000 },
    ).finally(() => {
      done = true;
    });
    // Once the command has sent it: a base fee far above what it priced, block after block; only a
    // replacement gets in.
    const repo = createChainTransactionsRepo(t.db);
    let sent: Awaited<ReturnType<typeof repo.list>>[number] | undefined;
    while (!sent) {
      sent = (await repo.list({ limit: 1 })).find((r) => r.purpose === 'pause test');
      await new Promise((r) => setTimeout(r, 20));
    }
    const high = sent.maxFeePerGas * 5n;
    for (let i = 0; i < 100 && !done; i++) {
      await mineAtBaseFee(high);
      await new Promise((r) => setTimeout(r, 100));
    }
    const receipt = await pause;
    expect(receipt.status).toBe('success');
    const [row] = await createChainTransactionsRepo(t.db).list({ limit: 1 });
    expect(row).toMatchObject({ purpose: 'pause test', status: 'mined' });
    expect(row!.attempts).toBeGreaterThanOrEqual(2);
    expect(row!.minedTxHash).toBe(receipt.transactionHash);
  });
});

describe('nonces across a restart', () => {
  it('keeps nonces right when a process dies holding the lease and the node forgets its transaction', async () => {
    const chain = settings('500', 10);
    const first = senderFor(chain, 'process-1');
    const d = await first.send(transfer(3, 'before the restart'));
    // process-1 dies in the middle of its next send: the nonce lease stays taken until it expires.
    const leaseName = nonceLeaseName(chain.chainId, OPERATOR);
    expect(await createLeasesRepo(t.db).acquire(leaseName, 'process-1', 1_000)).toBe(true);
    // And the node restarts with an empty pool: it no longer knows d (anvil_dropTransaction).
    await fx.rpc('anvil_dropTransaction', [d.txHash]);
    expect(await fx.client.getTransactionCount({ address: OPERATOR, blockTag: 'pending' })).toBe(
      d.nonce,
    );

    const second = senderFor(chain, 'process-2', 10_000);
    const e = await second.send(transfer(4, 'after the restart'));
    // Not d's nonce, which the node would have handed out again: the database remembers d.
    expect(e.nonce).toBe(d.nonce + 1);
    // The follower rebroadcasts d from its stored bytes; one block mines both, in order.
    await second.followPending();
    await mineBlock(fx);
    const followed = await second.followPending();
    expect(followed.map((x) => [x.nonce, x.status])).toEqual([
      [d.nonce, 'mined'],
      [e.nonce, 'mined'],
    ]);
    expect(await fx.client.getTransactionCount({ address: OPERATOR })).toBe(e.nonce + 1);
  });
});

describe('a transaction that fails', () => {
  it('reverted on chain: settled with the fee paid and what to do', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const sender = senderFor(settings('500', 10));
    // A fee increase, scheduled: applyFeeChange() may run from effectiveAt on.
    await sender.send({
      to: engine,
      data: encodeFunctionData({ abi: yieldEngineAbi, functionName: 'setFees', args: [600, 1000] }),
      purpose: 'raise fees',
    });
    await mineBlock(fx);
    const scheduled = (await readScheduledFeeChange(fx.client, { engine }))!;
    // Estimated for a block at effectiveAt, it passes; mined in a block before it, it reverts.
    await fx.rpc('evm_setNextBlockTimestamp', [Number(scheduled.effectiveAt)]);
    const apply = await sender.send({
      to: engine,
      data: encodeFunctionData({ abi: yieldEngineAbi, functionName: 'applyFeeChange' }),
      purpose: 'apply fee change early',
    });
    await mineBlock(fx); // at fx.now, days before effectiveAt
    const failed = await sender.advance(apply.id);
    expect(failed).toMatchObject({ status: 'reverted', minedTxHash: apply.txHash });
    expect(failed.feePaid!).toBeGreaterThan(0n);
    expect(failed.error).toMatch(
      /apply fee change early: reverted on chain .* send it again if still wanted/,
    );
    // A call the engine refuses at once is refused before anything is signed or recorded.
    const before = (await createChainTransactionsRepo(t.db).list({ limit: 1000 })).length;
    await expect(
      sendEngineCallReceipt(
        settings('500', 10),
        client(),
        { engine, call: 'applyFeeChange' },
        { db: t.db, logger: logs.logger },
      ),
    ).rejects.toThrow(OperatorError);
    expect((await createChainTransactionsRepo(t.db).list({ limit: 1000 })).length).toBe(before);
  });

  it('dropped: another transaction took its nonce; reported with what to do', async () => {
    const sender = senderFor(settings('500', 10));
    const f = await sender.send(transfer(5, 'will be dropped'));
    // Sent outside the service from the same account (the node unlocks it), at f's nonce.
    await fx.rpc('eth_sendTransaction', [
      {
        from: OPERATOR,
        to: USERS[6],
        value: '0x2',
        nonce: toHex(f.nonce),
        maxFeePerGas: toHex(f.maxFeePerGas * 2n),
        maxPriorityFeePerGas: toHex(f.maxPriorityFeePerGas * 2n + 1n),
      },
    ]);
    await mineBlock(fx);
    const after = await sender.advance(f.id);
    expect(after.status).toBe('dropped');
    expect(after.error).toMatch(/another transaction took nonce .* send it again if not/);
    expect(logs.lines().some((l) => l.includes('will be dropped: dropped'))).toBe(true);
  });
});

describe('what an operator sees', () => {
  it('`tx list` shows pending transactions first (age, attempts, fees), then the recent ones with what to do', async () => {
    const sender = senderFor(settings('500', 10));
    const p = await sender.send(transfer(7, 'still pending'));
    const run = (args: string[]) =>
      runCliInProcess(args, {
        env: { DATA_DIR: '/nonexistent', LOG_LEVEL: 'silent' },
        database: t.db,
      });
    const text = await run(['tx', 'list', '--limit', '50']);
    expect(text.code).toBe(0);
    const lines = text.out.split('\n');
    expect(lines[0]).toMatch(
      /^CHAIN\s+NONCE\s+STATUS\s+AGE\s+ATTEMPTS\s+MAX FEE \(gwei\)\s+HASH\s+PURPOSE$/,
    );
    expect(lines[1]).toContain(`${p.nonce}`);
    expect(lines[1]).toMatch(/pending .* still pending$/);
    expect(text.out).toMatch(/dropped .* will be dropped/);
    expect(text.out).toMatch(/another transaction took nonce/);
    const json = JSON.parse((await run(['tx', 'list', '--json', '--chain-id', '31337'])).out);
    expect(json[0]).toMatchObject({ status: 'pending', purpose: 'still pending', attempts: 1 });
    expect(
      json.some(
        (r: { status: string; attempts: number }) => r.status === 'mined' && r.attempts >= 2,
      ),
    ).toBe(true);
    await mineBlock(fx);
    expect((await sender.advance(p.id)).status).toBe('mined');
  });

  it("metrics: pending transactions and the oldest one's age, fees paid, replacements", async () => {
    const sender = senderFor(settings('500', 10));
    const p = await sender.send(transfer(8, 'for the metrics'));
    // Settles what earlier tests left recorded as pending though mined: p alone stays pending.
    await sender.followPending();
    const unregister = registerTransactionCollectors(t.db);
    try {
      const text = await registry.metrics();
      const value = (name: string) =>
        Number(new RegExp(`^${name}\\{chain_id="31337"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      expect(value('chain_transactions_pending')).toBe(1);
      expect(value('chain_transaction_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
      expect(value('chain_transaction_fees_paid_ether')).toBeGreaterThan(0);
      expect(value('chain_transaction_replacements_total')).toBeGreaterThanOrEqual(2);
      // The signer's balance, set by the lifecycle worker's round (signer-watch.ts).
      const chain = settings('500', 10);
      await createSignerWatch({
        db: t.db,
        chain,
        client: client(),
        account: signerAccount(chain),
        log: logs.logger,
        holder: 'test',
      }).round();
      const balance = new RegExp(
        `^chain_signer_balance_ether\\{chain_id="31337",address="${OPERATOR}"\\} (\\S+)$`,
        'm',
      ).exec(await registry.metrics());
      const wei = await fx.client.getBalance({ address: OPERATOR });
      expect(Number(balance?.[1])).toBeCloseTo(Number(wei) / 1e18, 3);
    } finally {
      unregister();
    }
    await mineBlock(fx);
    expect((await sender.advance(p.id)).status).toBe('mined');
  });
});
