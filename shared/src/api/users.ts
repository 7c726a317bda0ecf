import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { keyedBy, noArgs, resultSuccess, str, boolArg } from './fields.ts';
import { accountDate, accountId, accountName as nameField, accountNames, accountPath, gecos, groupList, loginClass, password } from './fields-accounts.ts';

const accountName = lazy(() => nameField('Account name'));
const groupName = lazy(() => nameField('Group name'));

export const userRecord = lazy(() =>
  z
    .object({
      canremove: str("`false` on the caller's own account (it cannot delete itself); absent otherwise").optional(),
      change: str('Password change time (epoch seconds, 0 = never)'),
      class: str('Login class'),
      comment: str('GECOS field'),
      expire: str('Account expiry time (epoch seconds, 0 = never)'),
      gid: str('Primary group id'),
      home_dir: str('Home directory'),
      name: str('Account name'),
      shell: str('Login shell'),
      uid: str('User id'),
    })
    .describe('A user account'),
);

export const groupRecord = lazy(() =>
  z
    .object({
      gid: str('Group id'),
      name: str('Group name'),
      users: z.array(z.string()).describe('Member account names; one empty string when the group has none'),
    })
    .describe('A group'),
);

/** Fields accepted by `useradd` and (all optional) by `usermod`. */
const accountFields = lazy(() => ({
  change: accountDate('Password expiry time: UNIX time in decimal, `dd-mmm-yy[yy]`, or `+<n>[mhdwoy]` relative').optional(),
  class: loginClass('Login class').optional(),
  comment: gecos('GECOS field (full name)').optional(),
  expire: accountDate('Account expiry: UNIX time in decimal or `dd-mmm-yyyy`').optional(),
  group: nameField('Primary group, name or number').optional(),
  home_dir: accountPath('Home directory; created when given').optional(),
  other_groups: groupList('Secondary groups: an array, or one string of comma-separated names').optional(),
  shell: accountPath('Full path of the login shell').optional(),
}));

export const users = defineClass({
  namespace: 'admin',
  name: 'users',
  description: 'User accounts and groups',
  limitedAccess: 'read/write',
  actions: {
    usershow: action({
      description: "List user accounts (all under full access; only the caller's own under limited access)",
      args: noArgs,
      reply: () => keyedBy('Account name', userRecord(), 'User records keyed by account name'),
      access: 'read',
    }),
    useradd: action({
      description: 'Create a user account',
      args: () =>
        z.strictObject({
          name: accountName(),
          password: password('Initial password; sent to the host on standard input, never as an argument'),
          uid: accountId('User id; default is the next free one').optional(),
          ...accountFields(),
        }),
      reply: resultSuccess,
      access: 'full',
    }),
    userdelete: action({
      description: 'Delete a user account',
      args: () =>
        z.strictObject({
          name: accountName(),
          clean_home: boolArg('Remove the home directory and its files (default `true`)').optional(),
        }),
      reply: resultSuccess,
      access: 'full',
    }),
    usermod: action({
      description: 'Change a user account (limited users: their own account only)',
      args: () =>
        z
          .strictObject({
            name: nameField('Existing account name'),
            newname: nameField('New account name (renames)').optional(),
            password: password('New password; sent on standard input').optional(),
            uid: accountId('New user id').optional(),
            ...accountFields(),
          })
          .refine(({ name: _name, ...changes }) => Object.values(changes).some((v) => v !== undefined), {
            message: 'nothing to change: give at least one field besides name',
            path: ['name'],
          }),
      reply: resultSuccess,
      access: 'write',
    }),
    groupshow: action({
      description: "List groups (all with members under full access; only the caller's groups under limited access)",
      args: noArgs,
      reply: () => keyedBy('Group name', groupRecord(), 'Group records keyed by group name'),
      access: 'read',
    }),
    groupadd: action({
      description: 'Create a group',
      args: () =>
        z.strictObject({
          name: groupName(),
          gid: accountId('Group id; default is the next free one').optional(),
          users: accountNames('Initial members').optional(),
        }),
      reply: resultSuccess,
      access: 'full',
    }),
    groupdelete: action({
      description: 'Delete a group',
      args: () => z.strictObject({ name: groupName() }),
      reply: resultSuccess,
      access: 'full',
    }),
    groupmod: action({
      description: "Change a group's members: exactly one of users (set), add_users or remove_users",
      args: () =>
        z
          .strictObject({
            name: groupName(),
            users: accountNames('Set the member list to exactly these accounts').optional(),
            add_users: accountNames('Accounts to add').min(1).optional(),
            remove_users: accountNames('Accounts to remove').min(1).optional(),
          })
          .refine((a) => [a.users, a.add_users, a.remove_users].filter((v) => v !== undefined).length === 1, {
            message: 'exactly one of users, add_users, remove_users is required',
            path: ['users'],
          }),
      reply: resultSuccess,
      access: 'full',
    }),
    personacrypt_listdevs: action({
      description: 'List removable devices usable as personacrypt devices',
      args: noArgs,
      reply: () => keyedBy('Device name', str('Description and size'), 'Removable devices keyed by device name'),
      access: 'read',
    }),
  },
});
