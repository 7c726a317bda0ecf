/** @module The bridge's Node runtime: `startBridge` and what the CLI needs (key store, secrets, tokens). */
export { startBridge, type BridgeOptions, type RunningBridge } from './start.ts';
export { SqliteKeyStore } from './key-store.ts';
export { ADMIN_SECRET_FILE, JOIN_SECRET_FILE, URL_FILE, joinSecretKey, readOrCreateSecret } from './secrets.ts';
export { issueJoinToken, verifyJoinToken } from '../../relay/join-token.ts';
