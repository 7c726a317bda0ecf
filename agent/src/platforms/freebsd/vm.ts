/**
 * FreeBSD virtual machines: bhyve through vm-bhyve (`vm`, sysutils/vm-bhyve). `setup` makes the
 * datastore `<pool>/vm` (vm_dir="zfs:<pool>/vm", vm init) and the switch `public` with `nic` on it;
 * guests, disks and ISOs live in the default datastore. Every action reads `vm list` first, so an
 * unknown guest is a 404 and a running one a 409 before anything changes. Properties map the spec's
 * names onto the guest's configuration (ram = memory, os = guest; boot = membership of rc.conf's
 * vm_list); only settings that cannot point bhyve at host files or scripts are written. Disks other
 * than disk0 go only from the end: vm-bhyve numbers them without gaps. `fetchiso` is the agent's own
 * download into `<vm_dir>/.iso`, so it reports progress as the other platforms do.
 */
import type { RunResult } from '../../runner/runner.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { commandFailed } from '../common/host-command.ts';
import { planIsoDownload } from '../common/iso-download.ts';
import { checkProps } from '../common/vm-props.ts';
import { conflict, formatSize, noSuchDisk, noSuchIso, noSuchVm, notSetUp, parseSize, tooSmall, type VmPort, type VmSummary } from '../ports/vm.ts';
import { parseIsoList, parseRcFile, parseSwitchList, parseVmInfo, parseVmList, type BhyveGuest } from './parse/vm.ts';
import { sysrcLookup } from './rc-conf.ts';
import type { FreebsdContext } from './index.ts';

const QUICK = { timeoutMs: 60_000 };
/** The switch `setup` puts the host's interface on, as vm-bhyve's documentation names it. */
const SWITCH = 'public';
/** Spec property name to vm-bhyve configuration key, where they differ. */
const CONF_KEY: Readonly<Record<string, string>> = { ram: 'memory', os: 'guest' };
/** Keys `setprop` may write: none of them names a host file, a device or a script. */
const SETTABLE = new Set([
  'cpu',
  'memory',
  'guest',
  'loader',
  'description',
  'cpu_sockets',
  'cpu_cores',
  'cpu_threads',
  'uefi',
  'utctime',
  'graphics',
  'graphics_port',
  'graphics_listen',
  'graphics_res',
  'graphics_wait',
  'xhci_mouse',
  'ignore_bad_msr',
  'wired_memory',
]);

export function freebsdVm(ctx: FreebsdContext): VmPort {
  const { runner } = ctx;
  const run = async (argv: readonly string[]): Promise<RunResult> => {
    const result = await runner.run(argv, QUICK);
    if (result.code !== 0) throw commandFailed(argv.slice(0, 2).join(' '), result);
    return result;
  };

  /** The default datastore's directory, or null before setup. */
  const vmDir = async (): Promise<string | null> => {
    const spec = (await sysrcLookup(runner, 'vm_dir')) ?? '';
    if (spec === '') return null;
    if (!spec.startsWith('zfs:')) return spec;
    return (await run(['zfs', 'get', '-H', '-o', 'value', 'mountpoint', '--', spec.slice(4)])).stdout.trim();
  };
  const needDir = async () => {
    const dir = await vmDir();
    if (dir === null) throw notSetUp();
    return dir;
  };
  const guests = async (): Promise<BhyveGuest[]> => parseVmList((await run(['vm', 'list'])).stdout);
  const guest = async (name: string): Promise<BhyveGuest> => {
    const found = (await guests()).find((g) => g.name === name);
    if (!found) throw noSuchVm(name);
    return found;
  };
  const stopped = async (name: string): Promise<BhyveGuest> => {
    const g = await guest(name);
    if (g.state !== 'Stopped') throw conflict('name', `${name} is ${g.state.toLowerCase()}; stop it first`);
    return g;
  };
  const info = async (name: string) => parseVmInfo((await run(['vm', 'info', name])).stdout);
  const confPath = (dir: string, name: string) => `${dir}/${name}/${name}.conf`;
  const readConf = async (dir: string, name: string) => parseRcFile((await run(['cat', '--', confPath(dir, name)])).stdout);
  const isos = async () => parseIsoList((await run(['vm', 'iso'])).stdout);
  const isoPath = async (iso: string) => `${await needDir()}/.iso/${iso}`;

  return {
    async listVms() {
      const dir = await vmDir();
      const out: Record<string, VmSummary> = {};
      for (const g of await guests()) {
        let description = '';
        if (dir !== null && (g.columns.DATASTORE ?? 'default') === 'default') {
          const conf = await runner.run(['cat', '--', confPath(dir, g.name)], QUICK);
          if (conf.code === 0) description = parseRcFile(conf.stdout).description ?? '';
        }
        out[g.name] = { description, rcboot: g.autostart !== null, running: g.state === 'Running', vmm: g.state !== 'Stopped' };
      }
      return out;
    },
    async isSetup() {
      return (await vmDir()) !== null;
    },
    async setup(nic, pool) {
      if ((await runner.run(['ifconfig', nic], QUICK)).code !== 0)
        throw badRequest(`nic: no network device ${nic}`, [{ field: 'nic', message: 'no such network device' }]);
      const made = await runner.run(['zfs', 'create', '-p', '--', `${pool}/vm`], QUICK);
      if (made.code !== 0) {
        if (/does not exist|no such pool/.test(made.stderr)) throw badRequest(`pool: no ZFS pool ${pool}`, [{ field: 'pool', message: 'no such pool' }]);
        throw commandFailed('zfs create', made);
      }
      await run(['sysrc', '--', 'vm_enable=YES']);
      await run(['sysrc', '--', `vm_dir=zfs:${pool}/vm`]);
      await run(['vm', 'init']);
      let sw = parseSwitchList((await run(['vm', 'switch', 'list'])).stdout).find((s) => s.name === SWITCH);
      if (!sw) {
        await run(['vm', 'switch', 'create', SWITCH]);
        sw = { name: SWITCH, type: 'standard', iface: '-', ports: [] };
      }
      if (!sw.ports.includes(nic)) await run(['vm', 'switch', 'add', SWITCH, nic]);
    },
    async create(name, size) {
      await needDir();
      if ((await guests()).some((g) => g.name === name)) throw conflict('name', `a virtual machine named ${name} already exists`);
      const made = await runner.run(['vm', 'create', '-s', size, name], QUICK);
      if (made.code !== 0) {
        // vm-bhyve stops at the first error and may leave the guest's directory half made.
        if ((await guests()).some((g) => g.name === name)) await runner.run(['vm', 'destroy', '-f', name], QUICK);
        throw commandFailed('vm create', made);
      }
    },
    async install(name, iso) {
      await stopped(name);
      if (!(await isos()).includes(iso)) throw noSuchIso('iso', iso);
      await run(['vm', 'install', name, iso]);
    },
    async start(name) {
      await stopped(name);
      await run(['vm', 'start', name]);
    },
    async stop(name) {
      const g = await guest(name);
      if (g.state !== 'Running') throw conflict('name', `${name} is not running`);
      await run(['vm', 'stop', name]);
    },
    async destroy(name) {
      await stopped(name);
      await run(['vm', 'destroy', '-f', name]);
    },
    async addDisk(name, size) {
      await stopped(name);
      const { disks } = await info(name);
      const device = disks[0]?.deviceType;
      const kind = device === 'zvol' || device === 'sparse-zvol' ? device : 'file';
      await run(['vm', 'add', '-d', 'disk', '-t', kind, '-s', size, name]);
      return `disk${disks.length}`;
    },
    async listDisks(name) {
      await guest(name);
      const out: Record<string, string> = {};
      for (const d of (await info(name)).disks) out[d.name] = d.bytes === null ? '-' : formatSize(d.bytes);
      return out;
    },
    async resizeDisk(name, disk, size) {
      await stopped(name);
      const d = (await info(name)).disks.find((x) => x.name === disk);
      if (!d) throw noSuchDisk(name, disk);
      if (d.bytes !== null && parseSize(size) <= d.bytes) throw tooSmall(disk, formatSize(d.bytes), size);
      if (d.deviceType === 'file') await run(['truncate', '-s', size, '--', d.path]);
      else if (d.deviceType === 'zvol' || d.deviceType === 'sparse-zvol')
        await run(['zfs', 'set', `volsize=${size}`, '--', d.path.replace(/^\/dev\/zvol\//, '')]);
      else throw conflict('disk', `${disk} is a ${d.deviceType} device, which vm-bhyve does not size`);
    },
    async deleteDisk(name, disk) {
      await stopped(name);
      const { disks } = await info(name);
      const d = disks.find((x) => x.name === disk);
      if (!d) throw noSuchDisk(name, disk);
      if (d !== disks.at(-1)) throw conflict('disk', `vm-bhyve numbers disks without gaps: remove ${disks.at(-1)?.name} first`);
      const dir = await needDir();
      const n = disk.slice(4);
      await run(['sysrc', '-i', '-f', confPath(dir, name), '-x', '--', ...['name', 'type', 'dev', 'opts', 'size'].map((k) => `disk${n}_${k}`)]);
      if (d.deviceType === 'file') await run(['rm', '-f', '--', d.path]);
      else if (d.deviceType === 'zvol' || d.deviceType === 'sparse-zvol') await run(['zfs', 'destroy', '--', d.path.replace(/^\/dev\/zvol\//, '')]);
    },
    async version() {
      return (await run(['vm', 'version'])).stdout.trim();
    },
    async getProps(name) {
      const g = await guest(name);
      const conf = await readConf(await needDir(), name);
      const disk0 = (await info(name)).disks[0];
      const props: Record<string, string> = { ...conf, name, boot: g.autostart !== null ? '1' : '0' };
      for (const [spec, key] of Object.entries(CONF_KEY)) {
        if (conf[key] !== undefined) props[spec] = conf[key];
        delete props[key];
      }
      if (disk0?.bytes) props.size = formatSize(disk0.bytes);
      return props;
    },
    async setProps(name, props) {
      const g = await guest(name);
      const checked = checkProps(props);
      const refused = Object.keys(checked).filter((k) => k !== 'boot' && !SETTABLE.has(CONF_KEY[k] ?? k));
      if (refused.length > 0) {
        throw badRequest(
          refused.map((k) => `${k}: not settable through setprop on vm-bhyve`).join('; '),
          refused.map((field) => ({ field, message: 'not settable through setprop on vm-bhyve' })),
        );
      }
      const dir = await needDir();
      for (const [key, value] of Object.entries(checked)) {
        if (key === 'boot') {
          const listed = g.autostart !== null;
          if (value === '1' && !listed) await run(['sysrc', '--', `vm_list+=${name}`]);
          if (value === '0' && listed) await run(['sysrc', '--', `vm_list-=${name}`]);
        } else {
          await run(['sysrc', '-f', confPath(dir, name), '--', `${CONF_KEY[key] ?? key}=${value}`]);
        }
      }
      return checked;
    },
    listIsos: isos,
    async renameIso(source, target) {
      const have = await isos();
      if (!have.includes(source)) throw noSuchIso('source', source);
      if (have.includes(target)) throw conflict('target', `an ISO named ${target} already exists`);
      const dir = `${await needDir()}/.iso`;
      await run(['mv', '-n', '--', `${dir}/${source}`, `${dir}/${target}`]);
    },
    async removeIso(target) {
      if (!(await isos()).includes(target)) throw noSuchIso('target', target);
      await run(['rm', '-f', '--', await isoPath(target)]);
    },
    async fetchIso(url) {
      const isoDir = `${await needDir()}/.iso`;
      return planIsoDownload(url, { isoDir, commands: [`fetch -o ${isoDir}/ ${url}`], ...(ctx.maxIsoBytes ? { maxBytes: ctx.maxIsoBytes } : {}) });
    },
  };
}
