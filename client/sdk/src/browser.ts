/**
 * The SDK's browser and Workers entry: the core with the global WebSocket and WebCrypto. Bundle it
 * (esbuild, Vite, ...) from here; it has no Node imports.
 */
export * from './index.ts';
