import { defineConfig } from 'vitest/config';

// Two cores: two forked workers. Every suite gets its own database (test/support/database.ts), so
// workers never share state; the PostgreSQL server is DATABASE_URL's or an embedded one.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'policies/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
