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
    ),
};

/** Runs commands in order through the job's runner; the first that fails (or a kill) ends the job. */
export async function runSteps(ctx: JobContext, steps: ReadonlyArray<{ argv: readonly string[]; label: string }>): Promise<JobOutcome> {
  for (const { argv, label } of steps) {
    if (ctx.signal.aborted) return { success: false };
    const result = await ctx.run(argv, { label });
    if (result.code !== 0) {
      const how = result.code === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.code}`;
      return { success: false, reason: `"${label}" ${how}` };
    }
  }
  return { success: true };
}
