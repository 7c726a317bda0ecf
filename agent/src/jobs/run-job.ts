/** The job type behind `dispatcher run` (a command, or a chain that stops at the first failure), and the step runner queued class actions share. */
import { z } from 'zod';
import { splitCommandLine } from './command-line.ts';
import type { JobContext, JobOutcome, JobType } from './types.ts';

export const RUN_JOB_TYPE = 'dispatcher.run';

const runParams = z.object({ commands: z.array(z.string().min(1)).min(1) });
export type RunJobParams = z.infer<typeof runParams>;

export const runJobType: JobType<RunJobParams> = {
  name: RUN_JOB_TYPE,
  parse(params) {
    const parsed = runParams.parse(params);
    for (const command of parsed.commands) splitCommandLine(command);
    return parsed;
  },
  commands: (params) => params.commands,
  run: (params, ctx) =>
    runSteps(
      ctx,
      params.commands.map((command) => ({ argv: splitCommandLine(command), label: command })),
      { chainProgress: true },
    ),
};

/**
 * Runs commands in order through the job's runner; the first that fails (or a kill) ends the job. With
 * `chainProgress` (a `dispatcher run` chain) the share of its commands done is reported as progress
 * (`percent_done`), so a client can show a real progress bar; a single command's progress is unknown
 * and not reported. Queued class actions report their own progress instead.
 */
export async function runSteps(
  ctx: JobContext,
  steps: ReadonlyArray<{ argv: readonly string[]; label: string }>,
  options: { chainProgress?: boolean } = {},
): Promise<JobOutcome> {
  for (const [index, { argv, label }] of steps.entries()) {
    if (ctx.signal.aborted) return { success: false };
    const result = await ctx.run(argv, { label });
    if (result.code !== 0) {
      const how = result.code === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.code}`;
      return { success: false, reason: `"${label}" ${how}` };
    }
    if (options.chainProgress && steps.length > 1 && index < steps.length - 1) ctx.progress(((index + 1) / steps.length) * 100);
  }
  return { success: true };
}
