/**
 * The simulated host's bhyve guests (the `vm` slice): set up on `em0` and `tank`, a running FreeBSD
 * guest that starts at boot, a stopped Debian one and a FreeBSD ISO, all persisted. Everything follows
 * the same state rules as the real platforms (a running guest is not deleted, resized or booted again),
 * `fetchiso` reports paced progress and a download rate, and nothing here runs a host command.
 */
import { abortableSleep } from '../../jobs/simulated-work.ts';
import { createHash } from 'node:crypto';
import { defaultProps, checkProps } from '../common/vm-props.ts';
import { formatRate, isoFileName } from '../common/iso-download.ts';
import { conflict, formatSize, noSuchDisk, noSuchIso, noSuchVm, notSetUp, parseSize, tooSmall, type VmPort, type VmSummary } from '../ports/vm.ts';
import type { SimContext } from './index.ts';

interface SimGuest {
  props: Record<string, string>;
  /** Disk name to bytes. */
  disks: Record<string, number>;
  running: boolean;
  /** The ISO it was booted from by `install`, until it stops. */
  booted?: string;
}

export interface SimVm {
  setup: { nic: string; pool: string } | null;
  guests: Record<string, SimGuest>;
  /** ISO name to bytes. */
  isos: Record<string, number>;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
/** Simulated downloads take about this long, whatever the size: short enough for a demo. */
const SIM_DOWNLOAD_MS = 2400;
const SIM_DOWNLOAD_STEPS = 12;

export function seedVm(): SimVm {
  const when = new Date('2026-01-12T09:30:00Z');
  const fbsd = { ...defaultProps('fbsd', '20G', when, 0), boot: '1', ram: '1G', cpu: '2', os: 'freebsd' };
  const debian = { ...defaultProps('debian', '16G', when, 1), loader: 'grub-bhyve', os: 'debian', ram: '2G' };
  return {
    setup: { nic: 'em0', pool: 'tank' },
    guests: {
      fbsd: { props: fbsd, disks: { disk0: 20 * GIB }, running: true },
      debian: { props: debian, disks: { disk0: 16 * GIB, disk1: 8 * GIB }, running: false },
    },
    isos: { 'FreeBSD-14.2-RELEASE-amd64-disc1.iso': 1270 * MIB },
  };
}

export function simVm(ctx: SimContext): VmPort {
  const slice = ctx.store.slice('vm', seedVm);
  const guest = (state: SimVm, name: string): SimGuest => {
    const found = Object.hasOwn(state.guests, name) ? state.guests[name] : undefined;
    if (!found) throw noSuchVm(name);
    return found;
  };
  const stopped = (state: SimVm, name: string): SimGuest => {
    const g = guest(state, name);
    if (g.running) throw conflict('name', `${name} is running; stop it first`);
    return g;
  };
  const setUp = (state: SimVm) => {
    if (!state.setup) throw notSetUp();
  };
  return {
    agentStartsBootGuests: true,
    async listVms() {
      const out: Record<string, VmSummary> = {};
      for (const [name, g] of Object.entries(slice.get().guests)) {
        out[name] = { description: g.props.description ?? '', rcboot: g.props.boot === '1', running: g.running, vmm: g.running };
      }
      return out;
    },
    async isSetup() {
      return slice.get().setup !== null;
    },
    async setup(nic, pool) {
      slice.update((d) => {
        d.setup = { nic, pool };
      });
    },
    async create(name, size) {
      slice.update((d) => {
        setUp(d);
        if (Object.hasOwn(d.guests, name)) throw conflict('name', `a virtual machine named ${name} already exists`);
        const index = Object.keys(d.guests).length;
        d.guests[name] = { props: defaultProps(name, size, new Date(), index), disks: { disk0: parseSize(size) }, running: false };
      });
    },
    async install(name, iso) {
      slice.update((d) => {
        const g = stopped(d, name);
        if (!Object.hasOwn(d.isos, iso)) throw noSuchIso('iso', iso);
        g.running = true;
        g.booted = iso;
        g.props.install = 'yes';
      });
    },
    async start(name) {
      slice.update((d) => {
        const g = stopped(d, name);
        g.running = true;
      });
    },
    async stop(name) {
      slice.update((d) => {
        const g = guest(d, name);
        if (!g.running) throw conflict('name', `${name} is not running`);
        g.running = false;
        delete g.booted;
        g.props.install = 'no';
      });
    },
    async destroy(name) {
      slice.update((d) => {
        stopped(d, name);
        delete d.guests[name];
      });
    },
    async addDisk(name, size) {
      return slice.update((d) => {
        const g = stopped(d, name);
        const disk = nextDisk(g.disks);
        g.disks[disk] = parseSize(size);
        return disk;
      });
    },
    async listDisks(name) {
      const g = guest(slice.get(), name);
      return Object.fromEntries(Object.entries(g.disks).map(([disk, bytes]) => [disk, formatSize(bytes)]));
    },
    async resizeDisk(name, disk, size) {
      slice.update((d) => {
        const g = stopped(d, name);
        const current = Object.hasOwn(g.disks, disk) ? g.disks[disk] : undefined;
        if (current === undefined) throw noSuchDisk(name, disk);
        const wanted = parseSize(size);
        if (wanted <= current) throw tooSmall(disk, formatSize(current), size);
        g.disks[disk] = wanted;
        if (disk === 'disk0') g.props.size = size;
      });
    },
    async deleteDisk(name, disk) {
      slice.update((d) => {
        const g = stopped(d, name);
        if (!Object.hasOwn(g.disks, disk)) throw noSuchDisk(name, disk);
        delete g.disks[disk];
      });
    },
    async version() {
      return 'vm-bhyve: Bhyve virtual machine management v1.6.2 (rev. 106002) [simulated]';
    },
    async getProps(name) {
      return { ...guest(slice.get(), name).props };
    },
    async setProps(name, props) {
      const checked = checkProps(props);
      return slice.update((d) => {
        const g = guest(d, name);
        Object.assign(g.props, checked);
        return checked;
      });
    },
    async listIsos() {
      return Object.keys(slice.get().isos).sort();
    },
    async renameIso(source, target) {
      slice.update((d) => {
        const bytes = Object.hasOwn(d.isos, source) ? d.isos[source] : undefined;
        if (bytes === undefined) throw noSuchIso('source', source);
        if (Object.hasOwn(d.isos, target)) throw conflict('target', `an ISO named ${target} already exists`);
        delete d.isos[source];
        d.isos[target] = bytes;
      });
    },
    async removeIso(target) {
      slice.update((d) => {
        if (!Object.hasOwn(d.isos, target)) throw noSuchIso('target', target);
        delete d.isos[target];
      });
    },
    async fetchIso(url) {
      const state = slice.get();
      setUp(state);
      const filename = isoFileName(url);
      if (Object.hasOwn(state.isos, filename)) throw conflict('url', `an ISO named ${filename} already exists`);
      const total = simulatedSize(url);
      return {
        commands: [`fetch -o /tank/vm/.iso/${filename} ${url}`],
        fields: { filename },
        async work(job) {
          job.progress(0);
          const stepMs = SIM_DOWNLOAD_MS / SIM_DOWNLOAD_STEPS;
          for (let step = 1; step <= SIM_DOWNLOAD_STEPS; step++) {
            if (!(await abortableSleep(stepMs, job.signal))) return { success: false, reason: 'killed' };
            const done = Math.round((total * step) / SIM_DOWNLOAD_STEPS);
            job.report({ download_rate: formatRate(total / (SIM_DOWNLOAD_MS / 1000)) });
            job.progress((done / total) * 100);
            job.log(`${filename}\t${Math.round((done / total) * 100)}% of ${formatSize(total)}\n`);
          }
          const added = slice.update((d) => {
            if (Object.hasOwn(d.isos, filename)) return false;
            d.isos[filename] = total;
            return true;
          });
          return added ? { success: true } : { success: false, reason: `${filename} appeared while downloading; not overwritten` };
        },
      };
    },
  };
}

function nextDisk(disks: Record<string, number>): string {
  let n = 0;
  while (Object.hasOwn(disks, `disk${n}`)) n++;
  return `disk${n}`;
}

/** A plausible ISO size (300 MiB to 4.3 GiB), the same for the same URL. */
function simulatedSize(url: string): number {
  const seed = createHash('sha256').update(url).digest().readUInt32BE(0);
  return (300 + (seed % 4000)) * MIB;
}
