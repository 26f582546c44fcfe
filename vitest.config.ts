import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    pool: 'forks',
    // A worker process runs many files and keeps the modules they share (viem, Fastify, TypeBox,
    // PGlite, the service's own) instead of evaluating them again for each file: about 50 s of the
    // suite's CPU and 50 s of its wall time on this machine. It holds because no test file needs
    // fresh module state: nothing is mocked with vi.mock or vi.stub*, fake timers are restored after
    // each test, tests read process.env and give changes to spawned processes only, and the
    // module-level state in src/ (the metrics registry, caches of static files and validators) is
    // read by tests only through spawned processes or does not change. A new test that needs a
    // fresh module graph runs it in a child process (test/helpers/process.ts).
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Suites start real anvil nodes, databases and servers; two cores, so two files at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
