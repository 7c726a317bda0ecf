/**
 * The SDK's types come from the contracts: checked at compile time (the type check is part of
 * `npm test`) and the run-time side is checked here. Also: the lazy contract loaders return exactly
 * the registry's objects, and the core has no Node imports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api } from '@hostadm/shared/api/index.ts';
import type { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { adminLoaders, eventOperationLoaders, rpcClassLoaders, rpcOperationLoaders } from '../../client/sdk/src/contracts.ts';
import type { HostadmClient, IsQueued, QueuedJob } from '../../client/sdk/src/index.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

type QueuedLabels<NS extends string, Classes> = {
  [K in keyof Classes & string]: Classes[K] extends ClassContract
    ? {
        [A in keyof Classes[K]['actions'] & string]: IsQueued<Classes[K]['actions'][A]> extends true ? `${NS}/${K} ${A}` : never;
      }[keyof Classes[K]['actions'] & string]
    : never;
}[keyof Classes & string];

/** The actions whose contracts say `queued`; the literal must survive into the types, for exactly these. */
const QUEUED = [
  'admin/pkg pkg_audit',
  'admin/pkg pkg_autoremove',
  'admin/pkg pkg_check_upgrade',
  'admin/pkg pkg_install',
  'admin/pkg pkg_lock',
  'admin/pkg pkg_remove',
  'admin/pkg pkg_unlock',
  'admin/pkg pkg_update',
  'admin/pkg pkg_upgrade',
  'admin/update startupdate',
  'admin/vm fetchiso',
  'rpc/dispatcher run',
] as const;

type TypeQueued = QueuedLabels<'admin', typeof adminClasses> | QueuedLabels<'rpc', typeof rpcClasses>;
export type _queuedMatch = Expect<Equal<TypeQueued, (typeof QUEUED)[number]>>;

// Typed methods: arguments and replies from the zod schemas.
type Usershow = Awaited<ReturnType<HostadmClient['admin']['users']['usershow']>>;
export type _usershow = Expect<Equal<Usershow[string]['uid'], string>>;
type KillArgs = Parameters<HostadmClient['admin']['systemmanager']['killproc']>[0];
export type _killArgs = Expect<Equal<KillArgs['signal'], 'INT' | 'QUIT' | 'ABRT' | 'KILL' | 'ALRM' | 'TERM'>>;
type Run = Awaited<ReturnType<HostadmClient['rpc']['dispatcher']['run']>>;
export type _run = Expect<Equal<Run, QueuedJob<{ started: string[] }>>>;
type Upgrade = Awaited<ReturnType<HostadmClient['admin']['pkg']['pkg_upgrade']>>;
export type _upgrade = Expect<Equal<Upgrade['ack']['pkg_upgrade']['status'], 'pending'>>;

// Required arguments are required; none-taking actions need no argument.
export function _compileOnly(client: HostadmClient): void {
  void client.admin.users.usershow();
  void client.admin.services.start({ services: ['sshd'] });
  // @ts-expect-error `pid` and `signal` are required
  void client.admin.systemmanager.killproc();
  // @ts-expect-error `signal` must be one of the contract's signals
  void client.admin.systemmanager.killproc({ pid: 1, signal: 'HUP' });
  // @ts-expect-error no such class
  void client.admin.nosuchclass;
}

test('the queued actions of the contracts are the ones the types treat as jobs', () => {
  const runtime: string[] = [];
  for (const [ns, classes] of [
    ['admin', api.admin],
    ['rpc', api.rpc],
  ] as const) {
    for (const [name, contract] of Object.entries(classes) as [string, ClassContract][]) {
      for (const [action, c] of Object.entries(contract.actions)) if (c.queued !== false) runtime.push(`${ns}/${name} ${action}`);
    }
  }
  assert.deepEqual(runtime.sort(), [...QUEUED].sort());
});

test("every lazy contract loader returns exactly the registry's contract", async () => {
  const pairs: Array<[string, Record<string, () => Promise<unknown>>, Record<string, unknown>]> = [
    ['admin', adminLoaders, api.admin],
    ['rpc', rpcClassLoaders, api.rpc],
    ['rpc operations', rpcOperationLoaders, api.rpcOperations],
    ['events', eventOperationLoaders, api.events],
  ];
  for (const [label, loaders, registry] of pairs) {
    assert.deepEqual(Object.keys(loaders).sort(), Object.keys(registry).sort(), label);
    for (const [name, load] of Object.entries(loaders)) assert.equal(await load(), registry[name], `${label} ${name}`);
  }
});

test('the SDK core imports nothing from Node: only node.ts, with the WebSocket it alone imports, brings in ws', () => {
  const dir = new URL('../../client/sdk/src/', import.meta.url).pathname;
  // The Node entry and its WebSocket (node-websocket.ts: ws, node:net, node:tls), which no other file imports.
  const nodeOnly = new Set(['node.ts', 'node-websocket.ts']);
  // Its tests (`*.test.ts`, beside the code they test) run on Node and are not part of what ships.
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  assert.ok(
    files.some((f) => f.includes('/')),
    'sub-folders of the SDK are checked too',
  );
  for (const file of files) {
    const source = readFileSync(join(dir, file), 'utf8');
    const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'|import\('([^']+)'\)/g)].map((m) => m[1] ?? m[2]!);
    for (const spec of specifiers) {
      const allowed =
        spec.startsWith('./') ||
        spec.startsWith('../') ||
        spec.startsWith('@hostadm/shared/') ||
        spec === 'zod' ||
        (nodeOnly.has(file) && (spec === 'ws' || spec.startsWith('node:')));
      assert.ok(allowed, `${file} imports ${spec}`);
      if (spec.endsWith('/node-websocket.ts')) assert.equal(file, 'node.ts', `${file} imports ${spec}`);
    }
    if (file !== 'node-websocket.ts') assert.doesNotMatch(source, /\bBuffer\.|\bprocess\.|require\(/, `${file} uses a Node global`);
  }
});
