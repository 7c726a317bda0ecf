/**
 * `hostadm jobs [list|run|wait|log|kill|ack]`: dispatcher jobs. `run` starts one job and streams its
 * output to stdout (progress and status on stderr); the exit code is 0 when the job succeeded, 5 when
 * it failed.
 */
import type { ConnectionOptions } from '../client-commands.ts';
import type { JobCompletion, JobHandle } from '../../../sdk/src/types.ts';
import { EXIT, runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';
import { followJobs, progressMode, succeeded } from '../lib/progress.ts';
import { openClient } from '../lib/session.ts';

type Json = { json?: boolean };

export async function runJobsList(opts: ConnectionOptions & Json): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const { jobs } = await session.client.rpc.dispatcher.list();
      const rows = Object.entries(jobs).flatMap(([queue, byId]) => Object.entries(byId ?? {}).map(([id, job]) => ({ queue, id, ...job })));
      if (opts.json) {
        printJson(rows);
        return;
      }
      await printTable(
        ['QUEUE', 'ID', 'STATE', 'POS', 'RESULT', 'COMMANDS'],
        rows.map((j) => [
          j.queue,
          j.id,
          j.state,
          j.queue_position,
          j.success === undefined ? '' : j.success === 'true' ? 'ok' : `failed${j.reason ? `: ${j.reason}` : ''}`,
          j.commands.join(' && '),
        ]),
        { maxWidths: { 4: 40, 5: 60 } },
      );
    } finally {
      await session.close();
    }
  });
}

const SAFE_WORD = /^[A-Za-z0-9_\-.,/:=@%+^]+$/;

/** argv words → one command line the dispatcher splits back into the same words. */
export function commandLine(words: readonly string[]): string {
  if (words.length === 1) return words[0]!;
  return words.map((w) => (w === '' ? "''" : SAFE_WORD.test(w) ? w : w.replace(/[^A-Za-z0-9_\-.,/:=@%+^]/g, (c) => `\\${c}`))).join(' ');
}

interface RunOptions extends ConnectionOptions, Json {
  id?: string;
  wait: boolean;
  progress?: string;
}

async function follow(job: JobHandle, opts: Json & { progress?: string }): Promise<number> {
  const mode = progressMode(opts.progress);
  const [completion] = await followJobs([job], { mode, output: opts.json ? 'none' : 'stdout' });
  if (opts.json) printJson(completion);
  return succeeded(completion as JobCompletion) ? EXIT.ok : EXIT.host;
}

export async function runJobsRun(command: string[], opts: RunOptions): Promise<void> {
  await runCommand(async () => {
    if (command.length === 0) throw usageError('missing command');
    const id = opts.id ?? `cli-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    const session = await openClient(opts, { reconnect: opts.wait });
    try {
      const job = await session.client.rpc.dispatcher.run({ [id]: commandLine(command) });
      if (!opts.wait) {
        process.stdout.write(`${job.id}\n`);
        return EXIT.ok;
      }
      return await follow(job, opts);
    } finally {
      await session.close();
    }
  });
}

export async function runJobsWait(id: string, opts: ConnectionOptions & Json & { progress?: string }): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts, { reconnect: true });
    try {
      // Refuse an unknown id rather than waiting forever.
      await session.client.rpc.dispatcher.log({ job_id: id });
      return await follow(await session.client.job(id), opts);
    } finally {
      await session.close();
    }
  });
}

export async function runJobsLog(id: string, opts: ConnectionOptions & Json): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const { log } = await session.client.rpc.dispatcher.log({ job_id: id });
      if (opts.json) printJson(log);
      else process.stdout.write(log.log);
    } finally {
      await session.close();
    }
  });
}

export async function runJobsKill(ids: string[], opts: ConnectionOptions & Json): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const reply = await session.client.rpc.dispatcher.kill({ job_id: ids });
      if (opts.json) printJson(reply);
      else
        process.stdout.write(reply.killed.jobs.length ? `cancelled: ${reply.killed.jobs.join(', ')}\n` : 'nothing cancelled (unknown or already finished)\n');
    } finally {
      await session.close();
    }
  });
}

export async function runJobsAck(ids: string[], opts: ConnectionOptions & Json): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const reply = await session.client.rpc.dispatcher.acknowledge({ job_id: ids });
      if (opts.json) printJson(reply);
      else process.stdout.write(`removed from the list: ${reply.acknowledged.jobs.join(', ') || 'none'}\n`);
    } finally {
      await session.close();
    }
  });
}
