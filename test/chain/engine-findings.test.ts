/**
 * Regression tests for the findings of the engine review (issue #12), each on a real anvil. Every
 * test here failed on the engine before its fix (bf03237).
 */
import { type Address, encodeFunctionData, type Hash } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import {
  engineReader,
  engineWrite,
  type Fixture,
  mineBlock,
  newEngine,
  setRate,
  setupFixture,
  USD,
  USERS,
} from './helpers.ts';

const [alice, bob, mallory] = USERS as [Address, Address, Address];
let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

/** Fee assets minted so far (service + partner). */
async function feeAssets(engine: Address): Promise<bigint> {
  const r = engineReader(fx, engine);
  return (await r.get('serviceFeeAssetsTotal')) + (await r.get('partnerFeeAssetsTotal'));
}

describe('finding 4: accrueFees() cannot shave the fee', () => {
  it('accruing every 12 s for an hour charges the same fee as one accrual at the end', async () => {
    // 100 USD at 5 % APR and a 15 % fee: each 12 s of yield carries a fee below one base unit.
    await setRate(fx, fx.syncVault, 500);
    const griefed = await newEngine(fx, fx.syncVault, { service: 500, partner: 1000 });
    const quiet = await newEngine(fx, fx.syncVault, { service: 500, partner: 1000 });
    await engineWrite(fx, griefed, alice, { fn: 'deposit', args: [100n * USD, alice] });
    await engineWrite(fx, quiet, bob, { fn: 'deposit', args: [100n * USD, bob] });
    const accrue = encodeFunctionData({ abi: yieldEngineAbi, functionName: 'accrueFees' });
    const hashes: Hash[] = [];
    for (let i = 0; i < 300; i++) {
      fx.now += 11;
      hashes.push(
        (await fx.rpc('eth_sendTransaction', [
          { from: mallory, to: griefed, data: accrue, gas: '0x7a120' },
        ])) as Hash,
      );
      await mineBlock(fx);
    }
    for (const hash of hashes.slice(-3))
      expect((await fx.client.getTransactionReceipt({ hash })).status).toBe('success');
    // One accrual of each at the same block: the quiet engine charges its whole hour at once.
    for (const engine of [griefed, quiet])
      await fx.rpc('eth_sendTransaction', [
        { from: mallory, to: engine, data: accrue, gas: '0x7a120' },
      ]);
    await mineBlock(fx);
    const fair = await feeAssets(quiet);
    const charged = await feeAssets(griefed);
    expect(fair).toBeGreaterThan(50n); // ~85 base units: an hour of 15 % of 5 % APR on 100 USD
    // Before the fix the griefed engine charged 0 (the mark followed the price at every accrual).
    // Each charged accrual rounds its fee down by less than a base unit, carried to the next.
    expect(charged).toBeGreaterThanOrEqual(fair - 2n);
    expect(charged).toBeLessThanOrEqual(fair + 2n);
    await setRate(fx, fx.syncVault, 800);
  });
});
