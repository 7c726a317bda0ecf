/**
 * Guests that start with the host, where the agent stands in for the host's rc script (Linux, sim;
 * see `VmPort.agentStartsBootGuests`). It does what vm-bhyve's rc.d/vm does with rc.conf's `vm_list`:
 * when the agent is up, the guests marked `boot=1` that are not running are started one at a time in
 * their listed order (`vm startall`), in the background so the agent answers requests meanwhile; when
 * the agent stops, the running `boot=1` guests are stopped in the reverse order (`vm stopall` stops
 * the listed guests in reverse start order), each through the port's own stop (on Linux QMP `quit`,
 * then SIGKILL after the grace period). A guest that fails to start or stop is logged and told as a
 * `system-state` event to full-access users; the others carry on and the agent never fails for it.
 */
import { ownedBy } from '../events/audience.ts';
import type { VmPort } from '../platforms/ports/vm.ts';
import type { AgentServices } from '../server/context.ts';

/** The payload of the `system-state` events this sends (docs/protocol.md, "Guests that start with the agent"). */
export interface BootGuestEvent {
  event_system: 'admin/vm';
  action: 'autostart' | 'autostop';
  name: string;
  state: 'started' | 'stopped' | 'failed';
  reason?: string;
}

type Serialize = <T>(task: () => Promise<T>) => Promise<T>;

/** Registers the start-up and shut-down work for `port`'s boot guests with the agent's background. */
export function manageBootGuests(port: VmPort, services: Pick<AgentServices, 'background' | 'events' | 'logger'>, oneAtATime: Serialize): void {
  if (!port.agentStartsBootGuests) return;
  const { background, events, logger } = services;
  const tell = (event: BootGuestEvent) => {
    // Full access only: a failure's reason may name host paths and devices.
    events.publish('system-state', { ...event }, ownedBy(''));
    if (event.state === 'failed') logger.warn(event, `vm ${event.action} of ${event.name} failed`);
    else logger.info(event, `vm ${event.action}: ${event.name} ${event.state}`);
  };
  const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

  background.once('vm autostart', async (signal) => {
    for (const name of Object.keys(await port.listVms())) {
      if (signal.aborted) return;
      // Looked at again just before: a user may have started, unmarked or deleted it meanwhile.
      const started = await oneAtATime(async () => {
        const now = (await port.listVms())[name];
        if (!now?.rcboot || now.vmm || signal.aborted) return false;
        await port.start(name);
        return true;
      }).catch((err: unknown) => {
        tell({ event_system: 'admin/vm', action: 'autostart', name, state: 'failed', reason: reason(err) });
        return false;
      });
      if (started) tell({ event_system: 'admin/vm', action: 'autostart', name, state: 'started' });
    }
  });

  background.atClose('vm autostop', async () => {
    const guests = Object.entries(await port.listVms()).filter(([, g]) => g.rcboot && g.vmm);
    for (const [name] of guests.reverse()) {
      try {
        await oneAtATime(() => port.stop(name));
        tell({ event_system: 'admin/vm', action: 'autostop', name, state: 'stopped' });
      } catch (err) {
        tell({ event_system: 'admin/vm', action: 'autostop', name, state: 'failed', reason: reason(err) });
      }
    }
  });
}
