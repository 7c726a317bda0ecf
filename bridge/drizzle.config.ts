/** drizzle-kit settings for the bridge; run from the repository root (paths are relative to it). */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './bridge/src/db/schema.ts',
  out: './bridge/src/db/migrations',
});
