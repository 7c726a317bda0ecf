/** The per-host pages built around a list: processes, services, users and groups, network, files, sysctls. */
import type { HostadmClient } from '@hostadm/client/sdk/src/browser.ts';
import { users as usersContract } from '@hostadm/shared/api/users.ts';
import { systemmanager as smContract } from '@hostadm/shared/api/systemmanager.ts';
import { useState } from 'preact/hooks';
import type { LinkState } from '../hosts.ts';
import { errorText, toast } from '../store.ts';
import { ActionForm } from '../ui/action-form.tsx';
import { confirmAction } from '../ui/confirm.tsx';
import { DataTable, recordColumns, rowsOf, type Column } from '../ui/table.tsx';
import { Freshness, useHostData } from '../ui/use-host-data.tsx';

interface PageProps {
  client: HostadmClient;
  state: LinkState;
}

async function act(what: string, run: () => Promise<unknown>, after?: () => void): Promise<void> {
  try {
    await run();
    toast('success', `${what}: done`);
    after?.();
  } catch (err) {
    toast('error', `${what} failed: ${errorText(err)}`);
  }
}

type Proc = Record<string, unknown> & { __key: string };

export function Processes({ client, state }: PageProps) {
  const procs = useHostData(client, state, (c) => c.admin.systemmanager.procinfo(), 5000);
  const rows = (rowsOf(procs.data?.procinfo ?? {}) ?? []) as Proc[];
  const columns: Column<Proc>[] = [
    { key: 'pid', label: 'PID', value: (r) => Number(r.__key) },
    ...['username', 'state', 'wcpu', 'res', 'time', 'command'].map((k) => ({ key: k, label: k, value: (r: Proc) => String(r[k] ?? '') })),
  ];
  return (
    <section aria-labelledby="procs-title">
      <h2 id="procs-title">Processes</h2>
      <Freshness data={procs} />
      <DataTable
        caption="Processes"
        rows={rows}
        columns={columns}
        actions={(r) => (
          <button
            type="button"
            class="danger"
            aria-label={`Kill process ${r.__key} (${String(r.command)})`}
            onClick={async () => {
              if (await confirmAction(`Kill process ${r.__key}?`, `Send TERM to ${String(r.command)} (PID ${r.__key}).`, { confirm: 'Kill' }))
                await act(`kill ${r.__key}`, () => client.admin.systemmanager.killproc({ pid: r.__key, signal: 'TERM' }), procs.reload);
            }}
          >
            Kill
          </button>
        )}
      />
    </section>
  );
}

export function Services({ client, state }: PageProps) {
  const list = useHostData(client, state, (c) => c.admin.services.list_services(), 10_000);
  const rows = rowsOf(list.data?.services ?? {}) ?? [];
  const columns = recordColumns(rows).filter((c) => ['__key', 'description', 'is_enabled', 'is_running'].includes(c.key));
  const run = async (name: string, op: 'start' | 'stop' | 'restart' | 'enable' | 'disable') => {
    if ((op === 'stop' || op === 'disable') && !(await confirmAction(`${op} ${name}?`, `${op} the service ${name} on this host.`, { confirm: op }))) return;
    await act(`${op} ${name}`, () => client.call('admin', 'services', op, { name }), list.reload);
  };
  return (
    <section aria-labelledby="svc-title">
      <h2 id="svc-title">Services</h2>
      <Freshness data={list} />
      <DataTable
        caption="Services"
        rows={rows}
        columns={columns}
        actions={(r) =>
          (['start', 'stop', 'restart', 'enable', 'disable'] as const).map((op) => (
            <button key={op} type="button" aria-label={`${op} ${String(r.__key)}`} onClick={() => run(String(r.__key), op)}>
              {op}
            </button>
          ))
        }
      />
    </section>
  );
}

export function Users({ client, state }: PageProps) {
  const users = useHostData(client, state, (c) => c.admin.users.usershow());
  const groups = useHostData(client, state, (c) => c.admin.users.groupshow());
  const [adding, setAdding] = useState(false);
  const userRows = rowsOf(users.data ?? {}) ?? [];
  const groupRows = (rowsOf(groups.data ?? {}) ?? []).map((g) => ({ ...g, users: (g.users as string[]).filter(Boolean).join(', ') }));
  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">Users and groups</h2>
      <Freshness data={users} />
      <button type="button" class="primary" aria-expanded={adding} onClick={() => setAdding(!adding)}>
        {adding ? 'Close the form' : 'Add a user'}
      </button>
      {adding && (
        <ActionForm
          client={client}
          namespace="admin"
          className="users"
          action="useradd"
          title="Add user"
          contract={usersContract.actions.useradd}
          onDone={users.reload}
          showReply={false}
        />
      )}
      <DataTable
        caption="Users"
        rows={userRows}
        columns={recordColumns(userRows).filter((c) => ['__key', 'uid', 'gid', 'comment', 'home_dir', 'shell'].includes(c.key))}
        actions={(r) =>
          r.canremove === 'false' ? null : (
            <button
              type="button"
              class="danger"
              aria-label={`Delete user ${String(r.__key)}`}
              onClick={async () => {
                if (await confirmAction(`Delete user ${String(r.__key)}?`, 'The account and its home directory are removed.', { confirm: 'Delete' }))
                  await act(`delete ${String(r.__key)}`, () => client.admin.users.userdelete({ name: String(r.__key) }), users.reload);
              }}
            >
              Delete
            </button>
          )
        }
      />
      <ActionForm
        client={client}
        namespace="admin"
        className="users"
        action="groupadd"
        title="Add group"
        contract={usersContract.actions.groupadd}
        onDone={groups.reload}
        showReply={false}
      />
      <DataTable caption="Groups" rows={groupRows} columns={recordColumns(groupRows)} />
    </section>
  );
}

export function Network({ client, state }: PageProps) {
  const devs = useHostData(client, state, (c) => c.admin.network['list-devices'](), 15_000);
  const rows = rowsOf(devs.data ?? {}) ?? [];
  return (
    <section aria-labelledby="net-title">
      <h2 id="net-title">Network devices</h2>
      <Freshness data={devs} />
      <DataTable caption="Devices" rows={rows} columns={recordColumns(rows, 'device')} />
    </section>
  );
}

export function Files({ client, state }: PageProps) {
  const [dir, setDir] = useState('/');
  const list = useHostData(client, state, (c) => c.admin.fs.dirlist({ dir }));
  const rows = (rowsOf(list.data?.dirlist ?? {}) ?? []) as (Record<string, unknown> & { __key: string })[];
  const join = (name: string) => (dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`);
  const open = (path: string) => {
    setDir(path);
    setTimeout(list.reload, 0);
  };
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files: {dir}</h2>
      <Freshness data={list} />
      {dir !== '/' && (
        <button type="button" onClick={() => open(dir.replace(/\/[^/]+\/?$/, '') || '/')}>
          Up
        </button>
      )}
      <DataTable
        caption="Entries"
        rows={rows}
        columns={[
          {
            key: 'name',
            label: 'name',
            value: (r) => r.__key,
            render: (r) =>
              r.dir ? (
                <button type="button" class="link" onClick={() => open(join(r.__key))}>
                  {r.__key}/
                </button>
              ) : (
                r.__key
              ),
          },
          { key: 'size', label: 'size', value: (r) => Number(r.size ?? 0) },
          { key: 'owner', label: 'owner', value: (r) => String(r.owner ?? '') },
          { key: 'group', label: 'group', value: (r) => String(r.group ?? '') },
        ]}
      />
    </section>
  );
}

export function Sysctls({ client, state }: PageProps) {
  const list = useHostData(client, state, (c) => c.admin.systemmanager.sysctllist());
  const rows = Object.entries(list.data?.sysctllist ?? {}).map(([name, value]) => ({ name, value: String(value) }));
  return (
    <section aria-labelledby="sysctl-title">
      <h2 id="sysctl-title">Sysctls</h2>
      <Freshness data={list} />
      <ActionForm
        client={client}
        namespace="admin"
        className="systemmanager"
        action="setsysctl"
        title="Set a sysctl"
        contract={smContract.actions.setsysctl}
        onDone={list.reload}
        showReply={false}
      />
      <DataTable
        caption="Sysctls"
        rows={rows}
        columns={[
          { key: 'name', label: 'name', value: (r) => r.name },
          { key: 'value', label: 'value', value: (r) => r.value },
        ]}
      />
    </section>
  );
}
