/**
 * Dispatcher jobs and queued class operations, live: progress bars from the `dispatcher` events, the
 * log, kill; a toast when one finishes or fails. The list is read again after a reconnect, so a job
 * that ended while the page was offline is not shown as running.
 */
import type { HostadmClient, HostadmEvent } from '@hostadm/client/sdk/src/browser.ts';
import { dispatcher } from '@hostadm/shared/api/dispatcher.ts';
import { useEffect, useState } from 'preact/hooks';
import type { LinkState } from '../hosts.ts';
import { errorText, toast } from '../store.ts';
import { ActionForm } from '../ui/action-form.tsx';
import { confirmAction } from '../ui/confirm.tsx';
import { Freshness, useHostData } from '../ui/use-host-data.tsx';

interface JobView {
  id: string;
  state: string;
  percent: number | undefined;
  log: string;
  success?: string;
  commands: string[];
}

function fromEvent(args: Record<string, unknown>): Partial<JobView> & { id: string } {
  const details = (args.process_details ?? {}) as Record<string, unknown>;
  const id = String(args.proc_id ?? details.process_id ?? '');
  const percent = typeof args.percent_done === 'string' ? Number.parseFloat(args.percent_done) : undefined;
  return {
    id,
    state: String(args.state ?? details.state ?? ''),
    ...(percent !== undefined && !Number.isNaN(percent) ? { percent } : {}),
    ...(typeof args.success === 'string' ? { success: args.success } : {}),
    ...(Array.isArray(args.cmd_list) ? { commands: args.cmd_list.map(String) } : {}),
  };
}

export function Jobs({ client, state }: { client: HostadmClient; state: LinkState }) {
  const [jobs, setJobs] = useState<Record<string, JobView>>({});
  const list = useHostData(client, state, (c) => c.rpc.dispatcher.list());
  // The host's list is the truth (after a reconnect too); events then move it along.
  useEffect(() => {
    const queues = list.data?.jobs ?? {};
    const next: Record<string, JobView> = {};
    for (const queue of Object.values(queues))
      for (const [id, j] of Object.entries(queue as Record<string, { state: string; success?: string; commands: string[] }>))
        next[id] = {
          id,
          state: j.state,
          percent: j.state === 'finished' ? 100 : undefined,
          log: '',
          commands: j.commands,
          ...(j.success ? { success: j.success } : {}),
        };
    setJobs((old) => {
      for (const id of Object.keys(next)) if (old[id]?.log) next[id]!.log = old[id]!.log;
      return next;
    });
  }, [list.data]);
  useEffect(() => {
    if (state !== 'open') return;
    const stream = client.events.listen(['dispatcher'], (event: HostadmEvent) => {
      const args = event.args as Record<string, unknown>;
      const update = fromEvent(args);
      if (!update.id) return;
      const chunk = typeof args.log === 'string' ? args.log : typeof args.pkg_log === 'string' ? args.pkg_log : '';
      setJobs((old) => {
        const prev = old[update.id] ?? { id: update.id, state: 'running', percent: undefined, log: '', commands: [] };
        const finished = update.state === 'finished';
        const job: JobView = {
          ...prev,
          ...update,
          percent: finished ? 100 : (update.percent ?? prev.percent),
          log: finished && chunk ? chunk : prev.log + chunk,
        };
        return { ...old, [update.id]: job };
      });
      if (update.state === 'finished') {
        if (update.success === 'false') toast('error', `Job ${update.id} failed`);
        else toast('success', `Job ${update.id} finished`);
      }
    });
    return () => stream.close();
  }, [client, state]);

  const kill = async (id: string) => {
    if (!(await confirmAction(`Kill job ${id}?`, 'The job is cancelled; commands already run are not undone.', { confirm: 'Kill job' }))) return;
    try {
      await client.rpc.dispatcher.kill({ job_id: id });
      toast('info', `Job ${id} killed`);
      list.reload();
    } catch (err) {
      toast('error', `kill ${id} failed: ${errorText(err)}`);
    }
  };
  const rows = Object.values(jobs).sort((a, b) => a.id.localeCompare(b.id));
  return (
    <section aria-labelledby="jobs-title">
      <h2 id="jobs-title">Jobs</h2>
      <Freshness data={list} />
      <ActionForm
        client={client}
        namespace="rpc"
        className="dispatcher"
        action="run"
        title="Run a job"
        contract={dispatcher.actions.run}
        showReply={false}
        initial={{ _json: '{"job1": ["sleep 1", "sleep 1", "echo done"]}' }}
        onDone={list.reload}
      />
      {rows.length === 0 && <p>No jobs.</p>}
      <ul class="jobs">
        {rows.map((j) => (
          <li key={j.id} class={`job ${j.state}`} data-job={j.id}>
            <strong>{j.id}</strong>{' '}
            <span class="badge">
              {j.state}
              {j.success ? ` (${j.success === 'true' ? 'succeeded' : 'failed'})` : ''}
            </span>
            <progress max={100} value={j.percent ?? (j.state === 'finished' ? 100 : undefined)} aria-label={`progress of ${j.id}`}>
              {j.percent ?? 0}%
            </progress>
            <small>{j.commands.join(' → ')}</small>
            {j.state !== 'finished' && (
              <button type="button" class="danger" onClick={() => kill(j.id)}>
                Kill
              </button>
            )}
            {j.log && (
              <details>
                <summary>Log</summary>
                <pre>{j.log}</pre>
              </details>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
