/**
 * `vm`: virtual machines, their disks and properties, and the ISO store. Names, sizes and URLs were
 * validated by the contract; the port answers 404/409 naming the field. Changes to one host run one at
 * a time (create, then adddisk of the same guest, must not interleave). `fetchiso` only plans the
 * download: the pipeline queues it and the dispatcher events carry `filename`, `percent_done` and
 * `download_rate`. Where the agent starts the guests marked boot=1 (Linux, sim), vm-autostart.ts does it.
 */
import { vm } from '@hostadm/shared/api/vm.ts';
import { implementClass } from './types.ts';
import { disk0Stays } from '../platforms/ports/vm.ts';
import { serialized } from './serialized.ts';
import { manageBootGuests } from './vm-autostart.ts';

const yesNo = (v: boolean) => (v ? 'YES' : 'NO');

export const vmImpl = implementClass(vm, (services) => {
  const port = services.platform.ports.vm;
  if (!port) return null;
  const oneAtATime = serialized();
  manageBootGuests(port, services, oneAtATime);
  return {
    listvms: async () => {
      const vms = await port.listVms();
      const listvms: Record<string, { description: string; rcboot: 'YES' | 'NO'; running: 'YES' | 'NO'; vmm: 'YES' | 'NO' }> = {};
      for (const [name, v] of Object.entries(vms))
        listvms[name] = { description: v.description, rcboot: yesNo(v.rcboot), running: yesNo(v.running), vmm: yesNo(v.vmm) };
      return { listvms };
    },
    fetchiso: async (args) => port.fetchIso(args.url),
    listisos: async () => ({ listisos: await port.listIsos() }),
    renameiso: async (args) => {
      await oneAtATime(() => port.renameIso(args.source, args.target));
      return { renameiso: { source: args.source, target: args.target } };
    },
    rmiso: async (args) => {
      await oneAtATime(() => port.removeIso(args.target));
      return { rmiso: { target: args.target } };
    },
    setup: async (args) => {
      await oneAtATime(() => port.setup(args.nic, args.pool));
      return { setup: { nic: args.nic, pool: args.pool } };
    },
    issetup: async () => ({ issetup: { setup: (await port.isSetup()) ? 'true' : 'false' } }),
    create: async (args) => {
      await oneAtATime(() => port.create(args.name, args.size));
      return { create: { name: args.name, size: args.size } };
    },
    install: async (args) => {
      await oneAtATime(() => port.install(args.name, args.iso));
      return { install: { iso: args.iso, name: args.name } };
    },
    start: async (args) => {
      await oneAtATime(() => port.start(args.name));
      return { start: { name: args.name } };
    },
    stop: async (args) => {
      await oneAtATime(() => port.stop(args.name));
      return { stop: { name: args.name } };
    },
    delete: async (args) => {
      await oneAtATime(() => port.destroy(args.name));
      return { delete: { name: args.name } };
    },
    adddisk: async (args) => {
      await oneAtATime(() => port.addDisk(args.name, args.size));
      return { adddisk: { [args.name]: { size: args.size } } };
    },
    listdisks: async (args) => ({ listdisks: await port.listDisks(args.name) }),
    resizedisk: async (args) => {
      await oneAtATime(() => port.resizeDisk(args.name, args.disk, args.size));
      return { resizedisk: { disk: args.disk, name: args.name, size: args.size } };
    },
    deletedisk: async (args) => {
      // The boot disk goes only with its guest (the original refused it too).
      if (args.disk === 'disk0') throw disk0Stays();
      await oneAtATime(() => port.deleteDisk(args.name, args.disk));
      return { deletedisk: { disk: args.disk, name: args.name } };
    },
    version: async () => ({ version: { version: await port.version() } }),
    getprops: async (args) => ({ getprops: { [args.name]: await port.getProps(args.name) } }),
    setprop: async (args) => {
      const { name, ...props } = args;
      const changed = await oneAtATime(() => port.setProps(name, props as Record<string, string>));
      return { setprop: { [name]: changed } };
    },
  };
});
