/**
 * The console's build: Preact through esbuild's automatic JSX (no Babel plugin needed), hashed file
 * names under assets/ (served immutable), no inline script or style anywhere (the servers' CSP allows
 * only 'self'), no module-preload polyfill (it would be inline code; every browser the console
 * supports has modulepreload). The Workers `_headers` file is written from the same rules the Node
 * servers use (server/headers.ts).
 */
import { defineConfig, type Plugin } from 'vite';
import { workersHeadersFile } from './server/headers.ts';

const workersHeaders: Plugin = {
  name: 'hostadm-workers-headers',
  generateBundle() {
    this.emitFile({ type: 'asset', fileName: '_headers', source: workersHeadersFile() });
  },
};

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  plugins: [workersHeaders],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1000,
    rollupOptions: {
      // zod's sources carry esbuild-oriented pure annotations that Rollup reports and drops: not ours to fix.
      onwarn(warning, warn) {
        if (warning.code !== 'INVALID_ANNOTATION') warn(warning);
      },
    },
  },
});
