/**
 * Linux virtual machines: QEMU guests the agent supervises (KVM where /dev/kvm opens, TCG otherwise,
 * with the reason in `version` and the `accel` property), disks as qcow2 files made, read, grown and
 * removed with `qemu-img`, properties and setup persisted in the agent's data directory (store.ts).
 * `setup` records the bridge guests join (it must be a Linux bridge) and the pool, a directory under
 * `<data>/vm/pools/`. `install` boots a stopped guest from an ISO; the ISO is attached until it stops.
 */
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CommandRunner } from '../../../runner/runner.ts';
import { hostError, runOrHostError } from '../../common/host-command.ts';
import { planIsoDownload } from '../../common/iso-download.ts';
import { checkProps, defaultProps } from '../../common/vm-props.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { conflict, formatSize, noSuchDisk, noSuchIso, noSuchVm, notSetUp, parseSize, tooSmall, type VmPort, type VmSummary } from '../../ports/vm.ts';
import { qmpStatus } from './qmp.ts';
import { createTap, deleteTap, detectAccelerator, launch, qemuArgv, shutdown, tapName, type Accelerator } from './qemu.ts';
import { VmStore, type LinuxGuest } from './store.ts';

export interface LinuxVmOptions {
  runner: CommandRunner;
  dataDir: string;
  /** The KVM device to try (tests name a missing one to see TCG chosen). */
  kvmDevice?: string;
  /** Largest ISO `fetchiso` accepts. */
  maxIsoBytes?: number;
  /** How long `stop` waits after QMP `quit` before SIGKILL. */
  stopGraceMs?: number;
}

const QEMU_IMG_TIMEOUT = 60_000;

export function linuxVm(options: LinuxVmOptions): VmPort {
  const { runner } = options;
  const store = new VmStore(options.dataDir);
  let accelerator: Accelerator | null = null;
  const accel = () => (accelerator ??= detectAccelerator(options.kvmDevice));

  const guestOf = (name: string): LinuxGuest => {
    const guests = store.read().guests;
    const guest = Object.hasOwn(guests, name) ? guests[name] : undefined;
    if (!guest) throw noSuchVm(name);
    return guest;
  };
  const status = (name: string) => qmpStatus(store.runPaths(name).qmp);
  const stoppedGuest = async (name: string): Promise<LinuxGuest> => {
    const guest = guestOf(name);
    if ((await status(name)) !== null) throw conflict('name', `${name} is running; stop it first`);
    return guest;
  };
  const virtualSize = async (path: string): Promise<number> => {
    const out = await runOrHostError(runner, ['qemu-img', 'info', '--output=json', '--', path], `reading ${path} failed`, { timeoutMs: QEMU_IMG_TIMEOUT });
    const size = (JSON.parse(out) as { 'virtual-size'?: unknown })['virtual-size'];
    if (typeof size !== 'number') throw new Error(`qemu-img info ${path}: no virtual-size`);
    return size;
  };
  const createImage = (path: string, size: string) =>
    runOrHostError(runner, ['qemu-img', 'create', '-q', '-f', 'qcow2', '--', path, size], `creating ${path} failed`, { timeoutMs: QEMU_IMG_TIMEOUT });

  const boot = async (name: string, iso?: string): Promise<void> => {
    const guest = await stoppedGuest(name);
    const setup = store.read().setup;
    if (!setup) throw notSetUp();
    store.ensureDirs();
    const run = store.runPaths(name);
    const tap = guest.props.nic === 'none' ? undefined : tapName(store.root, name);
    if (tap) await createTap(runner, tap, setup.nic);
    try {
      await launch(runner, qemuArgv(name, guest, run, accel(), { ...(iso ? { iso } : {}), ...(tap ? { tap } : {}) }), run);
    } catch (err) {
      if (tap) await deleteTap(runner, tap);
      throw err;
    }
    store.update((d) => {
      const g = d.guests[name];
      if (g) {
        g.props.install = iso ? 'yes' : 'no';
        if (iso) g.installIso = iso;
        else delete g.installIso;
      }
    });
  };

  return {
    // Nothing else starts QEMU guests with the host: the agent plays rc.d/vm's part (classes/vm-autostart.ts).
    agentStartsBootGuests: true,
    async listVms() {
      const out: Record<string, VmSummary> = {};
      for (const [name, guest] of Object.entries(store.read().guests)) {
        const state = await status(name);
        out[name] = { description: guest.props.description ?? '', rcboot: guest.props.boot === '1', running: state === 'running', vmm: state !== null };
      }
      return out;
    },
    async isSetup() {
      return store.read().setup !== null;
    },
    async setup(nic, pool) {
      const out = await runner.run(['ip', '-j', '-d', 'link', 'show', 'dev', nic], { timeoutMs: 10_000 });
      if (out.code !== 0) throw badRequest(`nic: no network device ${nic}`, [{ field: 'nic', message: 'no such network device' }]);
      const kind = (JSON.parse(out.stdout) as Array<{ linkinfo?: { info_kind?: string } }>)[0]?.linkinfo?.info_kind;
      if (kind !== 'bridge') throw badRequest(`nic: ${nic} is not a bridge; guests join a Linux bridge`, [{ field: 'nic', message: 'must be a bridge' }]);
      store.ensureDirs();
      await mkdir(store.poolDir(pool), { recursive: true, mode: 0o700 });
      store.update((d) => {
        d.setup = { nic, pool };
      });
    },
    async create(name, size) {
      const state = store.read();
      if (!state.setup) throw notSetUp();
      if (Object.hasOwn(state.guests, name)) throw conflict('name', `a virtual machine named ${name} already exists`);
      const dir = join(store.poolDir(state.setup.pool), name);
      await mkdir(store.poolDir(state.setup.pool), { recursive: true, mode: 0o700 });
      try {
        await mkdir(dir, { recursive: false, mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw conflict('name', `${dir} already exists`);
        throw err;
      }
      try {
        await createImage(join(dir, 'disk0.qcow2'), size);
        const index = Object.keys(state.guests).length;
        const props = {
          ...defaultProps(name, size, new Date(), index),
          loader: 'seabios',
          con: 'none',
          tap: tapName(store.root, name),
          bargs: '-',
          nic: 'virtio',
          bootorder: 'c',
        };
        store.update((d) => {
          d.guests[name] = { dir, props, disks: { disk0: 'disk0.qcow2' } };
        });
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
    },
    async install(name, iso) {
      const path = join(store.isoDir, iso);
      if (!(await isFile(path))) throw noSuchIso('iso', iso);
      await boot(name, path);
    },
    start: (name) => boot(name),
    async stop(name) {
      guestOf(name);
      const run = store.runPaths(name);
      if ((await qmpStatus(run.qmp)) === null) throw conflict('name', `${name} is not running`);
      await shutdown(runner, run, options.stopGraceMs);
      await deleteTap(runner, tapName(store.root, name));
      store.update((d) => {
        const g = d.guests[name];
        if (g) {
          g.props.install = 'no';
          delete g.installIso;
        }
      });
    },
    async destroy(name) {
      const guest = await stoppedGuest(name);
      store.update((d) => {
        delete d.guests[name];
      });
      await rm(guest.dir, { recursive: true, force: true });
    },
    async addDisk(name, size) {
      const guest = await stoppedGuest(name);
      let n = 0;
      while (Object.hasOwn(guest.disks, `disk${n}`)) n++;
      const disk = `disk${n}`;
      const file = `${disk}.qcow2`;
      await createImage(join(guest.dir, file), size);
      store.update((d) => {
        const g = d.guests[name];
        if (g) g.disks[disk] = file;
      });
      return disk;
    },
    async listDisks(name) {
      const guest = guestOf(name);
      const out: Record<string, string> = {};
      for (const [disk, file] of Object.entries(guest.disks)) out[disk] = formatSize(await virtualSize(join(guest.dir, file)));
      return out;
    },
    async resizeDisk(name, disk, size) {
      const guest = await stoppedGuest(name);
      const file = Object.hasOwn(guest.disks, disk) ? guest.disks[disk] : undefined;
      if (!file) throw noSuchDisk(name, disk);
      const path = join(guest.dir, file);
      const current = await virtualSize(path);
      if (parseSize(size) <= current) throw tooSmall(disk, formatSize(current), size);
      await runOrHostError(runner, ['qemu-img', 'resize', '-q', '--', path, size], `growing ${disk} failed`, { timeoutMs: QEMU_IMG_TIMEOUT });
      if (disk === 'disk0') store.update((d) => void (d.guests[name] && (d.guests[name].props.size = size)));
    },
    async deleteDisk(name, disk) {
      const guest = await stoppedGuest(name);
      const file = Object.hasOwn(guest.disks, disk) ? guest.disks[disk] : undefined;
      if (!file) throw noSuchDisk(name, disk);
      store.update((d) => {
        delete d.guests[name]?.disks[disk];
      });
      await rm(join(guest.dir, file), { force: true });
    },
    async version() {
      const result = await runner.run(['qemu-system-x86_64', '--version'], { timeoutMs: 10_000 });
      if (result.code !== 0) throw hostError('QEMU is not usable', result, 'qemu-system-x86_64');
      const first = result.stdout.split('\n')[0]?.trim() ?? '';
      const a = accel();
      return `${first}; accelerator ${a.kind}${a.reason ? ` (${a.reason})` : ''}`;
    },
    async getProps(name) {
      const guest = guestOf(name);
      const a = accel();
      return { ...guest.props, accel: a.reason ? `${a.kind}: ${a.reason}` : a.kind };
    },
    async setProps(name, props) {
      guestOf(name);
      const checked = checkProps(props);
      return store.update((d) => {
        const g = d.guests[name];
        if (!g) throw noSuchVm(name);
        Object.assign(g.props, checked);
        return checked;
      });
    },
    async listIsos() {
      try {
        const names = await readdir(store.isoDir, { withFileTypes: true });
        // Hidden names are downloads still in progress.
        return names
          .filter((e) => e.isFile() && !e.name.startsWith('.'))
          .map((e) => e.name)
          .sort();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
    },
    async renameIso(source, target) {
      const from = join(store.isoDir, source);
      const to = join(store.isoDir, target);
      if (!(await isFile(from))) throw noSuchIso('source', source);
      if (await isFile(to)) throw conflict('target', `an ISO named ${target} already exists`);
      await rename(from, to);
    },
    async removeIso(target) {
      const path = join(store.isoDir, target);
      if (!(await isFile(path))) throw noSuchIso('target', target);
      await rm(path);
    },
    async fetchIso(url) {
      store.ensureDirs();
      return planIsoDownload(url, { isoDir: store.isoDir, ...(options.maxIsoBytes ? { maxBytes: options.maxIsoBytes } : {}) });
    },
  };
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
