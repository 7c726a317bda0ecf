/**
 * vitest setup inside workerd (vitest.config.ts): applies the bridge's D1 migrations
 * (`src/db/migrations`, read in Node by `readD1Migrations`) before each test file, and types the
 * test bindings. Files here end in `.mts` so the Node and Worker type projects (`*.ts`) skip them;
 * tsconfig.workers-test.json checks them.
 */
import { applyD1Migrations, type D1Migration } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { BridgeEnv } from '../src/runtime/workers/env.ts';

declare global {
  namespace Cloudflare {
    interface Env extends BridgeEnv {
      TEST_MIGRATIONS: D1Migration[];
    }
    interface GlobalProps {
      mainModule: typeof import('../src/runtime/workers/index.ts');
      durableNamespaces: 'RelayHub';
    }
  }
}

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
