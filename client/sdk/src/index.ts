/**
 * The hostadm SDK, platform-neutral core (browsers, Workers, Node). In Node, import `node.ts`, which
 * passes the `ws` package as the WebSocket; elsewhere the global WebSocket is used.
 *
 *   const client = await connect({ url: 'ws://127.0.0.1:12150', auth: { username: 'admin', password } });
 *   const users = await client.admin.users.usershow();
 *   const job = await client.rpc.dispatcher.run({ backup: ['tar -cf /tmp/etc.tar /etc'] });
 *   for await (const step of job.progress) console.log(step.output);
 *   const result = await job.done;
 */
export { connect, HostadmClient } from './client/hostadm-client.ts';
export type { ClientState } from './client/connection.ts';
export type { ClientEvents } from './client/emitter.ts';
export type { ConnectOptions, ReconnectOptions } from './client/options.ts';
export type { AuthMethod, KeyAuth, PasswordAuth, Session, TokenAuth } from './client/session.ts';
export type { EventListener, EventStream } from './client/subscriptions.ts';
export {
  ConnectionError,
  ERROR_CODES,
  HostadmClientError,
  HostadmRequestError,
  KeyNotRegisteredError,
  ReplyContractError,
  TimeoutError,
} from './errors.ts';
export type { ErrorCodeName, FieldError, RequestTarget } from './errors.ts';
export type { ActionMethod, AdminClient, ArgsOf, ClassClient, IsQueued, ReplyOf, ResultOf, RpcClient } from './proxy.ts';
export { jobSucceeded } from './types.ts';
export type {
  CallOptions,
  ClassJobEvent,
  DispatcherEvent,
  EventName,
  HostadmEvent,
  JobCompletion,
  JobHandle,
  JobProgress,
  QueuedJob,
  RunJobEvent,
} from './types.ts';
export type { CloseInfo, Transport, TransportFactory, TransportHandlers } from './transport.ts';
export { webSocketTransport } from './websocket.ts';
export type { WebSocketConstructor, WebSocketLike, WebSocketTransportOptions } from './websocket.ts';
export { bridgeTransport, memoryBridgeTicketStore, memoryTicketStore, relayUrl } from './bridge-transport.ts';
export type { BridgeHostSelector, BridgeSignInTicket, BridgeTicketStore, BridgeTransportOptions, ClientTicket, TicketStore } from './bridge-transport.ts';
export { BridgeSession } from './bridge-session.ts';
export type { BridgeSessionOptions } from './bridge-session.ts';
export { listBridgeHosts, type BridgeHost } from './bridge-directory.ts';
export { signChallenge, textToBase64 } from './key-auth.ts';
export type { PrivateKeyMaterial, WebCryptoClientKey } from './key-auth.ts';
export {
  classNames,
  isClass,
  isOperation,
  isQueued,
  jobIdsOf,
  loadClass,
  loadClasses,
  loadOperation,
  resolveAction,
  rpcOperationNames,
} from './contracts.ts';
