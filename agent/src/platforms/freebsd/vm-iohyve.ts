/**
 * FreeBSD virtual machines through iohyve (sysutils/iohyve), used where vm-bhyve is not installed and
 * iohyve is (index.ts). The spec's vm class is iohyve's own vocabulary: listvms is `iohyve list`,
 * getprops `iohyve getall`, the properties are its ZFS user properties (`iohyve:<name>` on
 * `<pool>/iohyve/<guest>`). iohyve exits 0 after most failures and asks on the terminal before
 * `delete` and `remove`, so every action reads `iohyve list` first (404 for an unknown guest, 409 for
 * a running one) and uses the `-f` forms. `setup` = rc.conf's `iohyve_enable=YES` and
 * `iohyve_flags="kmod=1 net=<nic>"` (so the host's rc.d/iohyve sets up the bridge and kernel modules,
 * and starts the `boot=1` guests, at every boot) and `iohyve setup pool=<pool> kmod=1 net=<nic>`.
 * `fetchiso` is the agent's own download into the ISO's dataset (`<root>/ISO/<name>/<name>`, as
 * `iohyve fetchiso` lays it out), so it reports progress as the other platforms do.
 */
import type { RunResult } from '../../runner/runner.ts';
import { HostadmError, badRequest } from '@hostadm/shared/protocol/errors.ts';
import { commandFailed } from '../common/host-command.ts';
import { isoFileName, planIsoDownload } from '../common/iso-download.ts';
import { checkProps } from '../common/vm-props.ts';
import { conflict, noSuchDisk, noSuchIso, noSuchVm, notSetUp, parseSize, tooSmall, formatSize, type VmPort, type VmSummary } from '../ports/vm.ts';
import { parseIohyveDisks, parseIohyveGetall, parseIohyveIsoList, parseIohyveList, parseIohyveRoot, type IohyveGuest } from './parse/vm-iohyve.ts';
import type { FreebsdContext } from './index.ts';

const QUICK = { timeoutMs: 60_000 };
/** `delete -f` waits 10 s before it destroys ("Hit Ctrl+C in the next 10 seconds to cancel"). */
const DELETE = { timeoutMs: 120_000 };

/**
 * What `setprop` may write, each with the values iohyve reads safely: iohyve expands these unquoted
 * in its shell code, so a value is letters, digits and a few marks only. Properties that name host
 * files, devices or bhyve arguments (bhyve_path, bargs, pcidev:*, con, tap, autogrub, fw) are refused.
 */
const SETTABLE: Readonly<Record<string, { test: RegExp; message: string }>> = {
  cpu: { test: /^\d+$/, message: 'must be a number of CPUs' },
  ram: { test: /^\d+[MG]$/, message: 'must be a memory size like 512M' },
  os: { test: /^[a-z0-9]{1,32}$/, message: 'must be an iohyve os name like freebsd, debian or openbsd61' },
  loader: { test: /^(bhyveload|grub-bhyve|uefi)$/, message: 'must be bhyveload, grub-bhyve or uefi' },
  boot: { test: /^[01]$/, message: 'must be 0 or 1' },
  persist: { test: /^[01]$/, message: 'must be 0 or 1' },
  // iohyve cuts the description at `"` and echoes it unquoted (globbing, `=` splitting).
  description: { test: /^[A-Za-z0-9 .,:_@()+-]{0,200}$/, message: 'may hold letters, digits, spaces and . , : _ @ ( ) + - only' },
};

export function iohyveVm(ctx: FreebsdContext): VmPort {
  const { runner } = ctx;
  const run = async (argv: readonly string[], options = QUICK): Promise<RunResult> => {
    const result = await runner.run(argv, options);
    if (result.code !== 0) throw commandFailed(argv.slice(0, 2).join(' '), result);
    return result;
  };
  const root = async () => parseIohyveRoot((await run(['zfs', 'list', '-H', '-o', 'name,mountpoint', '-t', 'filesystem'])).stdout);
  const needRoot = async () => {
    const r = await root();
    if (r === null) throw notSetUp();
    return r;
  };
  const guests = async (): Promise<IohyveGuest[]> => {
    // Before setup iohyve lists nothing useful (and may fail on the missing datasets).
    if ((await root()) === null) return [];
    return parseIohyveList((await run(['iohyve', 'list'])).stdout);
  };
  const guest = async (name: string): Promise<IohyveGuest> => {
    const found = (await guests()).find((g) => g.name === name);
    if (!found) throw noSuchVm(name);
    return found;
  };
  /** Neither running nor loaded in the VMM (a loaded guest still holds its disks). */
  const stopped = async (name: string): Promise<IohyveGuest> => {
    const g = await guest(name);
    if (g.running || g.vmm) throw conflict('name', `${name} is ${g.running ? 'running' : 'loaded in the VMM'}; stop it first`);
    return g;
  };
  const disks = async (name: string) => parseIohyveDisks((await run(['iohyve', 'disks', name])).stdout);
  const isos = async () => ((await root()) === null ? [] : parseIohyveIsoList((await run(['iohyve', 'isolist'])).stdout));

  return {
    async listVms() {
      const out: Record<string, VmSummary> = {};
      for (const g of await guests()) out[g.name] = { description: g.description, rcboot: g.rcboot, running: g.running, vmm: g.vmm };
      return out;
    },
    async isSetup() {
      return (await root()) !== null;
    },
    async setup(nic, pool) {
      if ((await runner.run(['ifconfig', nic], QUICK)).code !== 0)
        throw badRequest(`nic: no network device ${nic}`, [{ field: 'nic', message: 'no such network device' }]);
      if ((await runner.run(['zpool', 'list', '-H', '-o', 'name', pool], QUICK)).code !== 0)
        throw badRequest(`pool: no ZFS pool ${pool}`, [{ field: 'pool', message: 'no such pool' }]);
      await run(['sysrc', '--', 'iohyve_enable=YES']);
      await run(['sysrc', '--', `iohyve_flags=kmod=1 net=${nic}`]);
      await run(['iohyve', 'setup', `pool=${pool}`, 'kmod=1', `net=${nic}`]);
      if ((await root()) === null) throw new HostadmError('HOST_ERROR', `iohyve setup made no ${pool}/iohyve/ISO dataset`);
    },
    async create(name, size) {
      const r = await needRoot();
      if ((await guests()).some((g) => g.name === name)) throw conflict('name', `a virtual machine named ${name} already exists`);
      const made = await runner.run(['iohyve', 'create', name, size], QUICK);
      if (made.code !== 0 || !(await guests()).some((g) => g.name === name)) {
        // iohyve stops half way (the guest's dataset without its disk0, say): nothing of it stays.
        await runner.run(['zfs', 'destroy', '-r', '--', `${r.dataset}/${name}`], QUICK);
        throw commandFailed('iohyve create', made);
      }
    },
    async install(name, iso) {
      await stopped(name);
      if (!(await isos()).includes(iso)) throw noSuchIso('iso', iso);
      await run(['iohyve', 'install', name, iso]);
    },
    async start(name) {
      await stopped(name);
      await run(['iohyve', 'start', name]);
    },
    async stop(name) {
      const g = await guest(name);
      // `stop` asks the guest to power off (SIGTERM to bhyve: an ACPI shutdown); a guest only loaded
      // (a loader that never handed over) is freed with `destroy`. forcekill is never used: it kills
      // every process whose command line matches the name.
      if (g.running) await run(['iohyve', 'stop', name]);
      else if (g.vmm) await run(['iohyve', 'destroy', name]);
      else throw conflict('name', `${name} is not running`);
    },
    async destroy(name) {
      await stopped(name);
      await run(['iohyve', 'delete', '-f', name], DELETE);
    },
    async addDisk(name, size) {
      await stopped(name);
      const before = Object.keys(await disks(name));
      await run(['iohyve', 'add', name, size]);
      const added = Object.keys(await disks(name)).find((d) => !before.includes(d));
      if (!added) throw new HostadmError('HOST_ERROR', `iohyve add: no new disk listed for ${name}`);
      return added;
    },
    async listDisks(name) {
      await guest(name);
      return disks(name);
    },
    async resizeDisk(name, disk, size) {
      await stopped(name);
      if (!Object.hasOwn(await disks(name), disk)) throw noSuchDisk(name, disk);
      const r = await needRoot();
      const bytes = Number((await run(['zfs', 'get', '-Hp', '-o', 'value', 'volsize', '--', `${r.dataset}/${name}/${disk}`])).stdout.trim());
      if (Number.isFinite(bytes) && parseSize(size) <= bytes) throw tooSmall(disk, formatSize(bytes), size);
      await run(['iohyve', 'resize', name, disk, size]);
    },
    async deleteDisk(name, disk) {
      await stopped(name);
      if (!Object.hasOwn(await disks(name), disk)) throw noSuchDisk(name, disk);
      await run(['iohyve', 'remove', '-f', name, disk]);
    },
    async version() {
      return (await run(['iohyve', 'version'])).stdout.trim();
    },
    async getProps(name) {
      await guest(name);
      return parseIohyveGetall((await run(['iohyve', 'getall', name])).stdout);
    },
    async setProps(name, props) {
      await guest(name);
      const checked = checkProps(props);
      const errors = Object.entries(checked).flatMap(([key, value]) => {
        const rule = SETTABLE[key];
        if (!rule) return [{ field: key, message: 'not settable through setprop on iohyve' }];
        return rule.test.test(value) ? [] : [{ field: key, message: rule.message }];
      });
      if (errors.length > 0) throw badRequest(errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
      await run(['iohyve', 'set', name, ...Object.entries(checked).map(([k, v]) => `${k}=${v}`)]);
      return checked;
    },
    listIsos: isos,
    async renameIso(source, target) {
      const have = await isos();
      if (!have.includes(source)) throw noSuchIso('source', source);
      if (have.includes(target)) throw conflict('target', `an ISO named ${target} already exists`);
      await run(['iohyve', 'renameiso', source, target]);
    },
    async removeIso(target) {
      if (!(await isos()).includes(target)) throw noSuchIso('target', target);
      await run(['iohyve', 'rmiso', target]);
    },
    async fetchIso(url) {
      const r = await needRoot();
      const filename = isoFileName(url);
      if ((await isos()).includes(filename)) throw conflict('url', `an ISO named ${filename} already exists`);
      const dataset = `${r.dataset}/ISO/${filename}`;
      const plan = await planIsoDownload(url, {
        isoDir: `${r.mountpoint}/ISO/${filename}`,
        commands: [`iohyve fetchiso ${url}`],
        ...(ctx.maxIsoBytes ? { maxBytes: ctx.maxIsoBytes } : {}),
      });
      return {
        ...plan,
        async work(job) {
          // iohyve keeps each ISO in a dataset of its own, named as the file.
          const made = await runner.run(['zfs', 'create', '--', dataset], QUICK);
          if (made.code !== 0) return { success: false, reason: `zfs create ${dataset}: ${made.stderr.trim()}` };
          const outcome = await plan.work(job);
          if (!outcome.success) await runner.run(['zfs', 'destroy', '--', dataset], QUICK);
          return outcome;
        },
      };
    },
  };
}
