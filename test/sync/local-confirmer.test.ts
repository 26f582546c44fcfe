/**
 * The local chain's confirmer on a real anvil: a quiet chain still confirms transactions (depth
 * empty blocks after a block with transactions) and still closes UTC days (a block at the current
 * second once the wall clock passes midnight), so the daily metrics of a demo left running overnight
 * move on. The wall clock is injected: the test moves it to just after the next UTC midnight.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AnvilHandle, startAnvil } from '../../src/chain/local/anvil.ts';
import { createRpc } from '../../src/chain/local/rpc.ts';
import { startLocalConfirmer } from '../../src/sync/chain-runtime.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';

const DAY = 86_400;

describe('local confirmer', () => {
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s();
  });

  async function chain(
    genesis: number,
  ): Promise<{ anvil: AnvilHandle; rpc: ReturnType<typeof createRpc> }> {
    const anvil = await startAnvil({ genesisTimestamp: genesis });
    stops.push(() => anvil.stop());
    return { anvil, rpc: createRpc(anvil.rpcUrl) };
  }
  const head = async (rpc: ReturnType<typeof createRpc>) =>
    (await rpc('eth_getBlockByNumber', ['latest', false])) as { number: string; timestamp: string };

  it('mines a block at the current second once the wall clock passes UTC midnight, then depth on top', async () => {
    // Genesis at 23:00 UTC of some day; the injected clock reads 00:00:07 the next day.
    const midnight = Math.floor(Date.now() / 1000 / DAY) * DAY;
    const genesis = midnight - 3_600;
    const { anvil, rpc } = await chain(genesis);
    const clock = (midnight + 7) * 1000;
    const confirmer = startLocalConfirmer(anvil.rpcUrl, 2, captureLogger().logger, 50, () => clock);
    stops.push(() => confirmer.stop());
    const latest = await waitFor(
      async () => {
        const b = await head(rpc);
        return BigInt(b.number) === 3n ? b : undefined;
      },
      10_000,
      'the day-closing blocks',
    );
    const closing = (await rpc('eth_getBlockByNumber', ['0x1', false])) as { timestamp: string };
    expect(Number(BigInt(closing.timestamp))).toBe(midnight + 7);
    expect(Number(BigInt(latest.timestamp))).toBeGreaterThanOrEqual(midnight + 7);
    // The day is closed: nothing more is mined while the clock stays in that day.
    await new Promise((r) => setTimeout(r, 500));
    expect(BigInt((await head(rpc)).number)).toBe(3n);
  });

  it('mines nothing while the newest block is from the current UTC day', async () => {
    const midnight = Math.floor(Date.now() / 1000 / DAY) * DAY;
    const { anvil, rpc } = await chain(midnight + 60);
    const confirmer = startLocalConfirmer(
      anvil.rpcUrl,
      2,
      captureLogger().logger,
      50,
      () => (midnight + 3_600) * 1000,
    );
    stops.push(() => confirmer.stop());
    await new Promise((r) => setTimeout(r, 600));
    expect(BigInt((await head(rpc)).number)).toBe(0n);
  });
});
