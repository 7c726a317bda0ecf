import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './agent/src/store/schema.ts',
  out: './agent/src/store/migrations',
});
