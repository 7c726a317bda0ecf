/**
 * A bridged `hostadm call` never loads node:http (nor node:https, node:tls or node:zlib): the SDK's
 * Node client opens its WebSocket over node:net itself (client/sdk/src/node-websocket.ts) and the
 * CLI gives ws stand-ins for those modules (cli/src/main.cts, scripts/bundle-cli.ts), which load them
 * only when used. Seen in Node's own list of the built-in modules a process loaded, at its exit, for
 * the call bundle (made here, as `npm ci` and the npm package make it), for whichever layout the
 * checkout's `hostadm call` runs, and for a command from the TypeScript sources (`ps`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCallBundle } from '../../scripts/bundle-cli.ts';
import { bridgedProfile } from './bridged-profile.ts';
import { runCli, show } from './cli-support.ts';

const root = new URL('../..', import.meta.url).pathname;
const UNUSED = /^NativeModule (http|https|_http_\w+|tls|_tls_\w+|zlib)$/;

test('a bridged call loads neither node:http nor node:https, node:tls or node:zlib, from the bundle or the sources', async (t) => {
  const { bridge, agent, env } = await bridgedProfile(t, 'nohttp');
  const call = ['call', 'systemmanager', 'memorystats', '--profile', 'lab'];
  // Enrolled and pinned once; the calls below are cold calls with the tickets this one left.
  const first = await runCli(call, { ...env, HOSTADM_JOIN_TOKEN: await bridge.token('client'), HOSTADM_ACCEPT_HOST_KEY: agent.services.hostKey.fingerprint });
  assert.equal(first.code, 0, show(first));
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-nohttp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const preload = join(dir, 'loaded.cjs');
  writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADED_LIST, process.moduleLoadList.join('\\n')));\n");
  const { code } = await buildCallBundle(root, 'test');
  const bundle = join(dir, 'call.cjs');
  writeFileSync(bundle, code);
  // The call bundle as main.cts runs it (lib/call-bundle.cts), with a code cache directory of its own.
  const runner = join(dir, 'run-bundle.cjs');
  writeFileSync(
    runner,
    `require(${JSON.stringify(join(root, 'client/cli/src/lib/call-bundle.cts'))}).runCallBundle(${JSON.stringify(bundle)}, process.argv);\n`,
  );

  const runs: Array<[what: string, args: string[], nodeArgs?: string[]]> = [
    ['the call bundle', call, [runner]],
    ["the checkout's hostadm call", call],
    ['a command from the sources', ['ps', '--profile', 'lab']],
  ];
  for (const [what, args, nodeArgs] of runs) {
    const list = join(dir, `${what.replaceAll(/\W+/g, '-')}.txt`);
    const runEnv = { ...env, XDG_CACHE_HOME: join(dir, 'cache'), LOADED_LIST: list, NODE_OPTIONS: `--require ${preload}` };
    const result = nodeArgs ? await runCli(args, runEnv, { command: [process.execPath, ...nodeArgs] }) : await runCli(args, runEnv);
    assert.equal(result.code, 0, `${what}: ${show(result)}`);
    const loaded = readFileSync(list, 'utf8').split('\n');
    assert.ok(loaded.includes('NativeModule net'), `${what}: the list is the process's own`);
    assert.deepEqual(
      loaded.filter((m) => UNUSED.test(m)),
      [],
      what,
    );
  }
});
