/** Namespace `events`: per-connection subscriptions. */
import { z } from 'zod';
import { defineOperation, lazy } from '../protocol/define.ts';

/** Event names a client may subscribe to; the underscore spellings are the docs' variants. */
export const EVENT_NAMES = ['dispatcher', 'life-preserver', 'system-state'] as const;
export type EventName = (typeof EVENT_NAMES)[number];
export const EVENT_NAME_ALIASES: Readonly<Record<string, EventName>> = {
  life_preserver: 'life-preserver',
  system_state: 'system-state',
};

const eventName = lazy(() =>
  z
    .string()
    .transform((n) => EVENT_NAME_ALIASES[n] ?? n)
    .pipe(z.enum(EVENT_NAMES))
    .describe('dispatcher, life-preserver or system-state'),
);

const eventNames = lazy(() =>
  z
    .union([eventName(), z.array(eventName()).min(1, 'must name at least one event')])
    .transform((v) => (Array.isArray(v) ? v : [v]))
    .describe('Event names: an array, or one name'),
);

// spec: not shown — chosen: the reply lists the names now subscribed/unsubscribed.
export const subscribe = defineOperation({
  namespace: 'events',
  name: 'subscribe',
  description: 'Receive these events on this connection; the last event of each kind is sent at once',
  args: eventNames,
  reply: () => z.object({ subscribe: z.array(z.enum(EVENT_NAMES)).describe('The names subscribed by this request') }),
  access: 'authenticated',
});

export const unsubscribe = defineOperation({
  namespace: 'events',
  name: 'unsubscribe',
  description: 'Stop receiving these events on this connection',
  args: eventNames,
  reply: () => z.object({ unsubscribe: z.array(z.enum(EVENT_NAMES)).describe('The names unsubscribed by this request') }),
  access: 'authenticated',
});
