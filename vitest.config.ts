import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Suites start real anvil nodes, databases and servers; two cores, so two files at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
