/**
 * The call index (client/cli/src/lib/call-index.ts) against the contracts it stands in for: what the
 * bundle carries (scripts/bundle-cli.ts computes it at build time) and what the sources compute at
 * run time must say, for every class and action, what loading the contract says: the action names,
 * the aliases and what they resolve to, which are queued, and which take `{}`. A call it sends without
 * the contract must be exactly one the contract would have let through unchecked.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argumentFreeAction, canonicalAction, classEntry, type ClassEntry } from '../../client/cli/src/lib/call-index.ts';
import { classNames, isQueued, loadClass, resolveAction, type ClassNamespace } from '../../client/sdk/src/contracts.ts';
import { check } from '../../client/sdk/src/validate.ts';
import { callIndexFromContracts } from '../../scripts/bundle-cli.ts';

const root = new URL('../..', import.meta.url).pathname;
const NAMESPACES: ClassNamespace[] = ['admin', 'rpc'];

test('the index a bundle carries says what every contract says', async () => {
  const index = await callIndexFromContracts(root);
  assert.deepEqual(Object.keys(index).sort(), [...NAMESPACES].sort());
  for (const ns of NAMESPACES) {
    assert.deepEqual(Object.keys(index[ns]).sort(), classNames(ns).sort(), `${ns} classes`);
    for (const name of classNames(ns)) {
      const contract = (await loadClass(ns, name))!;
      const entry = index[ns][name]!;
      const label = `${ns}/${name}`;
      assert.deepEqual(Object.keys(entry.actions).sort(), Object.keys(contract.actions).sort(), `${label} actions`);
      assert.deepEqual(entry.aliases, contract.actionAliases, `${label} aliases`);
      for (const [action, actionContract] of Object.entries(contract.actions)) {
        assert.equal(entry.actions[action]!.queued, isQueued(actionContract), `${label} ${action} queued`);
        // What the CLI's own check of a call without arguments says (call.ts): no problems at all.
        assert.equal(entry.actions[action]!.acceptsEmpty, check(actionContract.args, {}).length === 0, `${label} ${action} takes {}`);
      }
      // Every spelling a user may type, and some no contract has: resolved as the contract resolves it,
      // and sent without the contract only when it names an action that is not queued and takes {}.
      for (const typed of [...Object.keys(contract.actions), ...Object.keys(contract.actionAliases), 'nosuch', '__proto__', 'toString']) {
        const canonical = resolveAction(contract, typed);
        assert.equal(canonicalAction(entry, typed), canonical, `${label} ${typed} resolves`);
        const free = canonical !== undefined && !isQueued(contract.actions[canonical]!) && check(contract.actions[canonical]!.args, {}).length === 0;
        assert.equal(argumentFreeAction(entry, typed), free ? canonical : undefined, `${label} ${typed} needs no contract`);
      }
    }
  }
});

test('run from the sources, each class entry is computed from its contract as the bundle computes it', async () => {
  const index = await callIndexFromContracts(root);
  for (const ns of NAMESPACES) {
    for (const name of classNames(ns)) assert.deepEqual(await classEntry(ns, name), index[ns][name], `${ns}/${name}`);
  }
  assert.equal(await classEntry('admin', 'nosuch'), undefined);
  assert.equal(argumentFreeAction(undefined, 'memorystats'), undefined);
});

test('what the index decides for the actions a user types most', async () => {
  const index = await callIndexFromContracts(root);
  const sys: ClassEntry = index.admin.systemmanager!;
  assert.equal(argumentFreeAction(sys, 'memorystats'), 'memorystats');
  // An alias is sent under its canonical name.
  assert.equal(argumentFreeAction(sys, 'systeminfo'), 'systemmanager');
  // Needs arguments: the contract loads and refuses the call before anything is sent.
  assert.equal(argumentFreeAction(sys, 'killproc'), undefined);
  // Queued: the contract loads to follow the jobs.
  assert.equal(argumentFreeAction(index.admin.pkg, 'pkg_audit'), undefined);
  assert.equal(argumentFreeAction(index.rpc.settings, 'list_ssl_certificates'), 'list_ssl_certs');
});
