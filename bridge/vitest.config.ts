/**
 * Tests that run inside workerd (the Workers bridge: `src/runtime/workers/*.workers.test.ts`), with
 * the deployment's own wrangler configuration plus test secrets and test hooks. Run from `bridge/`
 * with `vitest run` on Node ≥ 22 (scripts/run-tests.ts does, after the node:test suite).
 */
import { fileURLToPath } from 'node:url';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: here('../infra/wrangler.jsonc') },
      miniflare: {
        bindings: {
          // Fixed 40-character test values (production: `wrangler secret put`, ≥ 32 characters).
          JOIN_SECRET: 'test-join-secret-0123456789abcdefghijklm',
          ADMIN_SECRET: 'test-admin-secret-0123456789abcdefghijkl',
          HOSTADM_TEST_HOOKS: '1',
          TEST_MIGRATIONS: await readD1Migrations(here('src/db/migrations')),
        },
      },
    }),
  ],
  test: {
    include: ['src/**/*.workers.test.ts'],
    setupFiles: ['./test-workers/setup.mts'],
    testTimeout: 20_000,
    silent: 'passed-only',
  },
});
