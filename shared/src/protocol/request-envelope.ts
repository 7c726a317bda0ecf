/**
 * The agent's check of a request envelope as it arrives. Kept out of envelope.ts, which every client
 * loads: building this schema is a program's first zod construction and pays zod's first-use costs
 * (~4 ms of a cold `hostadm call`), and only the agent's pipeline ever parses with it.
 */
import { z } from 'zod';

/**
 * A request as it arrives. `namespace` and `name` are kept as plain strings here so that an unknown
 * class can be answered with 404 rather than a parse error; routing decides.
 */
export const requestEnvelopeSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String).describe('Any value unique for the request; echoed in the reply'),
  name: z.string().min(1).describe('Class (namespace admin), rpc operation, or subscribe/unsubscribe (namespace events)'),
  namespace: z.string().min(1).describe('admin, rpc or events'),
  args: z.unknown().optional().describe('Object or array; for class requests it holds `action` plus the arguments'),
});
export type RequestEnvelope = z.infer<typeof requestEnvelopeSchema>;
