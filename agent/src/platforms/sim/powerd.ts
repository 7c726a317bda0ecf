/**
 * The simulated host's power daemon (the `powerd` slice): options as a laptop's powerd runs with
 * (`-a maximum`, the value the spec observed on AC), not started at boot, not running.
 */
import { POWERD_DEFAULTS } from '@hostadm/shared/api/powerd.ts';
import type { SimContext } from './index.ts';
import type { PowerdOptions, PowerdPort } from '../ports/powerd.ts';

export interface SimPowerd {
  options: PowerdOptions;
  enabled: boolean;
  running: boolean;
}

export function seedPowerd(): SimPowerd {
  return { options: { ...POWERD_DEFAULTS, ac_power_mode: 'maximum' }, enabled: false, running: false };
}

export function simPowerd(ctx: SimContext): PowerdPort {
  const slice = ctx.store.slice('powerd', seedPowerd);
  return {
    async readOptions() {
      return { ...slice.get().options };
    },
    async writeOptions(options) {
      slice.update((draft) => {
        draft.options = { ...options };
      });
    },
    async status() {
      const { enabled, running } = slice.get();
      return { enabled, running };
    },
    async setEnabled(enabled) {
      slice.update((draft) => {
        draft.enabled = enabled;
      });
    },
    async start() {
      slice.update((draft) => {
        draft.running = true;
      });
      return true;
    },
    async stop() {
      slice.update((draft) => {
        draft.running = false;
      });
      return true;
    },
    async restart() {
      slice.update((draft) => {
        draft.running = true;
      });
    },
  };
}
