/**
 * Registration is checked by the compiler: the `@ts-expect-error` lines below are registries with a
 * class left out, misspelled, or implemented under another class's name, and `npm run check` fails
 * if any of them compiles. The run-time test shows the registry covers exactly the contracts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import { classes } from './index.ts';
import type { ClassRegistry } from './types.ts';
import { usersImpl } from './users.ts';

const { 'admin/users': _users, ...withoutUsers } = classes;

// @ts-expect-error a class left out of the registry (admin/users) does not compile
export const _missing: ClassRegistry = withoutUsers;
// @ts-expect-error a misspelled class name does not compile
export const _misspelled: ClassRegistry = { ...withoutUsers, 'admin/user': usersImpl };
// @ts-expect-error an implementation under another class's name does not compile
export const _misplaced: ClassRegistry = { ...classes, 'admin/fs': usersImpl };
// Not implemented yet is said in one place: the entry is null.
export const _unserved: ClassRegistry = { ...classes, 'admin/users': null };

test('the registry has one entry per contract, each implementing the contract it is keyed by', () => {
  const contracts = [...Object.values(adminClasses), ...Object.values(rpcClasses)].map((c) => `${c.namespace}/${c.name}`).sort();
  assert.deepEqual(Object.keys(classes).sort(), contracts);
  for (const [key, impl] of Object.entries(classes)) {
    if (impl) assert.equal(`${impl.contract.namespace}/${impl.contract.name}`, key);
  }
});
