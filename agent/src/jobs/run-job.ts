/** The job type behind `dispatcher run`: a command, or a chain that stops at the first failure. */
import { z } from 'zod';
import { splitCommandLine } from './command-line.ts';
import type { JobType } from './types.ts';

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
  async run(params, ctx) {
    for (const command of params.commands) {
      if (ctx.signal.aborted) return { success: false };
      const result = await ctx.run(splitCommandLine(command), { label: command });
      if (result.code !== 0) {
        const how = result.code === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.code}`;
        return { success: false, reason: `"${command}" ${how}` };
      }
    }
    return { success: true };
  },
};
