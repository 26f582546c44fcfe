import { describe, expect, it } from 'vitest';
import { parseAmount, projectYield } from '../../src/money/index.ts';
import { D, randomBits, randomInt, rng, truncTrim } from './oracle.ts';

const TWO_256 = 2n ** 256n;

/** Reference: principal × apy and principal × ((1+apy)^(1/12) − 1), 120 digits, then toward zero. */
function oracle(principalBase: bigint, decimals: number, apy: string) {
  const p = new D(principalBase.toString()).div(new D(10).pow(decimals));
  const a = new D(apy);
  return {
    annual: truncTrim(p.mul(a), decimals),
    monthly: truncTrim(p.mul(a.plus(1).pow(new D(1).div(12)).minus(1)), decimals),
  };
}

describe('projectYield: examples', () => {
  it('1000 USDC at 6.1234%', () => {
    expect(projectYield(1_000_000_000n, 6, '0.061234')).toEqual({
      principal: '1000',
      annual_yield: '61.234',
      monthly_yield: '4.964983', // 1000 × (1.061234^(1/12) − 1) = 4.96498369…
      net_apy_for_user: '0.061234',
    });
    expect(oracle(1_000_000_000n, 6, '0.061234')).toEqual({
      annual: '61.234',
      monthly: '4.964983',
    });
  });

  it('echoes the normalised principal from parseAmount and the APY unchanged', () => {
    const parsed = parseAmount('0012.50', 6);
    if (!parsed.ok) throw new Error('unreachable');
    const r = projectYield(parsed.base, 6, '0.050000');
    expect(r.principal).toBe('12.5');
    expect(r.net_apy_for_user).toBe('0.050000');
    expect(r.annual_yield).toBe('0.625');
  });

  it('zero APY yields zero', () => {
    expect(projectYield(1_000_000n, 6, '0.000000')).toEqual({
      principal: '1',
      annual_yield: '0',
      monthly_yield: '0',
      net_apy_for_user: '0.000000',
    });
  });

  it('negative APY gives negative yields, rounded toward zero', () => {
    const r = projectYield(1_000_000_000n, 6, '-0.05');
    expect(r.annual_yield).toBe('-50');
    expect(r.monthly_yield).toBe('-4.265318'); // 1000 × (0.95^(1/12) − 1) = −4.2653189…
    expect(oracle(1_000_000_000n, 6, '-0.05').monthly).toBe('-4.265318');
  });

  it('APY -1 loses everything; below -1 is refused', () => {
    expect(projectYield(5_000_000n, 6, '-1')).toMatchObject({
      annual_yield: '-5',
      monthly_yield: '-5',
    });
    expect(projectYield(5_000_000n, 6, '-1.000000')).toMatchObject({ monthly_yield: '-5' });
    expect(() => projectYield(5_000_000n, 6, '-1.000001')).toThrow(RangeError);
  });

  it('tiny results truncate to "0", never "-0"', () => {
    expect(projectYield(1n, 6, '0.5')).toMatchObject({ annual_yield: '0', monthly_yield: '0' });
    expect(projectYield(1n, 6, '-0.5')).toMatchObject({ annual_yield: '0', monthly_yield: '0' });
    expect(projectYield(0n, 6, '0.1')).toMatchObject({
      principal: '0',
      annual_yield: '0',
      monthly_yield: '0',
    });
  });

  it('one base unit of yield survives at the last decimal', () => {
    // 1000 units at 0.000001 APY: annual 0.001 exactly
    expect(projectYield(1_000_000_000n, 6, '0.000001').annual_yield).toBe('0.001');
    // monthly = 1000 × (1.000001^(1/12) − 1) = 0.0000833333…
    expect(projectYield(1_000_000_000n, 6, '0.000001').monthly_yield).toBe('0.000083');
  });

  it('2^256 whole units at 18 decimals', () => {
    const base = TWO_256 * 10n ** 18n;
    const r = projectYield(base, 18, '0.061234');
    const o = oracle(base, 18, '0.061234');
    expect(r.principal).toBe(TWO_256.toString());
    expect(r.annual_yield).toBe(o.annual);
    expect(r.monthly_yield).toBe(o.monthly);
  });
});

describe('projectYield: exact rounding of the twelfth root', () => {
  // 1 + apy = 1.01^12 exactly makes the monthly factor exactly 0.01.
  const up = '0.126825030131969720661201'; // 1.01^12 − 1
  const down = '-0.113615128283870719341199'; // 0.99^12 − 1
  const eps = (s: string, delta: bigint) => {
    const places = s.split('.')[1]!.length + 6;
    const scaled = BigInt(s.replace('.', '').replace('-0', '-')) * 10n ** 6n + delta;
    const neg = scaled < 0n;
    const digits = (neg ? -scaled : scaled).toString().padStart(places + 1, '0');
    return `${neg ? '-' : ''}${digits.slice(0, -places)}.${digits.slice(-places)}`;
  };

  it('checks the constants', () => {
    expect(new D('1.01').pow(12).minus(1).toFixed()).toBe(up);
    expect(new D('0.99').pow(12).minus(1).toFixed()).toBe(down);
    // and by plain integers: 101^12 and 99^12 over 10^24
    expect(101n ** 12n - 10n ** 24n).toBe(126_825_030_131_969_720_661_201n);
    expect(10n ** 24n - 99n ** 12n).toBe(113_615_128_283_870_719_341_199n);
  });

  it.each([
    [up, '1'],
    [eps(up, -1n), '0'], // a hair under exactly 1 base unit truncates to 0
    [eps(up, 1n), '1'],
    [down, '-1'],
    [eps(down, -1n), '-1'], // a hair more than 1 unit of loss truncates toward zero: -1
    [eps(down, 1n), '0'], // a hair less than 1 unit of loss: 0
  ])('100 base units, decimals 0, apy %s -> monthly %s', (apy, want) => {
    expect(projectYield(100n, 0, apy).monthly_yield).toBe(want);
  });

  it('annual rounds toward zero at the last decimal', () => {
    expect(projectYield(3n, 0, '0.5').annual_yield).toBe('1'); // 1.5 -> 1
    expect(projectYield(3n, 0, '-0.5').annual_yield).toBe('-1'); // -1.5 -> -1
    expect(projectYield(3n, 1, '0.5').annual_yield).toBe('0.1'); // 0.15 -> 0.1
  });
});

describe('projectYield: invalid input', () => {
  it.each(['', '1e-2', '+0.05', '.05', '5%', '0x1', ' 0.05', 'NaN'])('rejects APY %j', (apy) => {
    expect(() => projectYield(1n, 6, apy)).toThrow(RangeError);
  });
  it('rejects negative principal and bad decimals', () => {
    expect(() => projectYield(-1n, 6, '0.05')).toThrow(RangeError);
    expect(() => projectYield(1n, 256, '0.05')).toThrow(RangeError);
  });
});

describe('projectYield: seeded comparison with a 120-digit reference', () => {
  it('300 random principals, decimals and APYs', () => {
    const next = rng(0x1e1dn);
    for (let i = 0; i < 300; i++) {
      const decimals = [0, 2, 6, 8, 18][randomInt(next, 0, 4)]!;
      const base = randomBits(next, randomInt(next, 1, 256 + 60));
      const micro = BigInt(randomInt(next, -999_999, 3_000_000)); // APY −0.999999 … 3
      const neg = micro < 0n;
      const m = (neg ? -micro : micro).toString().padStart(7, '0');
      const apy = `${neg ? '-' : ''}${m.slice(0, -6)}.${m.slice(-6)}`;
      const r = projectYield(base, decimals, apy);
      const o = oracle(base, decimals, apy);
      expect([r.annual_yield, r.monthly_yield], `${base} ${decimals} ${apy}`).toEqual([
        o.annual,
        o.monthly,
      ]);
    }
  });
});
