import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/unit/**/*.test.ts', 'test/sim/**/*.test.ts', 'test/cluster/**/*.test.ts'],
          environment: 'node',
          // Bounds for a loaded 2-core machine, not vitest's 5 s and 10 s: some tests run a shell,
          // openssl, promtool or a Node child, whose start alone can take seconds there. A test
          // that needs longer says so itself; a hang still fails, within a minute.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Vitest's default is the cores less one: one file at a time on a 2-core machine, where the
          // simulation's 2,000 seeds then ran alone for minutes beside an idle core.
          maxWorkers: Math.max(2, availableParallelism() - 1),
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts'],
          environment: 'node',
          globalSetup: ['test/e2e/support/global-setup.ts'],
          setupFiles: ['test/e2e/support/each-file.ts'],
          // One real cluster on two cores: files run one after another, each test may wait on
          // controllers for minutes.
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
