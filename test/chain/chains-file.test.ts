/**
 * CHAINS_FILE's parser (src/chain/chains.ts): a key it does not know is refused, naming the key and
 * the closest known one, never ignored (a misspelt fee cap used to leave the 100 gwei default in
 * force, silently); invalid JSON says where; the three-chain example of going-live.md parses.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChainsFileError, parseChainsFile } from '../../src/chain/chains.ts';

const base = {
  chain_id: 8453,
  name: 'Base',
  rpc_urls: ['https://base.example/v2/KEY123456789'],
  confirmation_depth: 2,
  block_range_limit: 2000,
  signer: { env: 'BASE_DEPLOYER_KEY' },
};
const refusal = (entry: Record<string, unknown>) => {
  try {
    parseChainsFile(JSON.stringify([entry]), 'CHAINS_FILE "chains.json"');
  } catch (err) {
    expect(err).toBeInstanceOf(ChainsFileError);
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('CHAINS_FILE', () => {
  it('refuses an unknown key of a chain, naming it and the closest known one', () => {
    expect(refusal({ ...base, max_fee_per_gas: '5' })).toBe(
      'CHAINS_FILE "chains.json"[0]: unknown key "max_fee_per_gas": did you mean "max_fee_per_gas_gwei"?',
    );
    expect(refusal({ ...base, replace_after_block: 5 })).toBe(
      'CHAINS_FILE "chains.json"[0]: unknown key "replace_after_block": did you mean "replace_after_blocks"?',
    );
    expect(refusal({ ...base, finalty: 'safe' })).toBe(
      'CHAINS_FILE "chains.json"[0]: unknown key "finalty": did you mean "finality"?',
    );
    // A misspelt required field is named as such, not as a missing one.
    const { rpc_urls, ...noUrls } = base;
    expect(refusal({ ...noUrls, rpc_url: rpc_urls })).toBe(
      'CHAINS_FILE "chains.json"[0]: unknown key "rpc_url": did you mean "rpc_urls"?',
    );
    expect(refusal({ ...base, colour: 'blue' })).toMatch(
      /^CHAINS_FILE "chains\.json"\[0\]: unknown key "colour"; expected one of chain_id, name, rpc_urls, /,
    );
    expect(refusal({ ...base, signer: { env: 'BASE_DEPLOYER_KEY', adress: '0x' } })).toBe(
      'CHAINS_FILE "chains.json"[0].signer: unknown key "adress": did you mean "address"?',
    );
  });

  it('says where invalid JSON stops, by line and column', () => {
    expect(() =>
      parseChainsFile('[\n  {"chain_id": 8453,\n  }\n]\n', 'CHAINS_FILE "c.json"'),
    ).toThrow(
      'CHAINS_FILE "c.json": not valid JSON (line 3, column 3: Expected double-quoted property name)',
    );
  });

  it("parses going-live.md's example file with all three chains", () => {
    const doc = readFileSync(
      new URL('../../docs/maintainers/going-live.md', import.meta.url),
      'utf8',
    );
    const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const example = blocks.find((b) => b.includes('"chain_id": 42161'));
    expect(example).toBeDefined();
    const chains = parseChainsFile(example!);
    expect(chains.map((c) => c.chainId)).toEqual([1, 8453, 42161]);
    expect(chains.every((c) => c.signer && c.transactions)).toBe(true);
  });
});
