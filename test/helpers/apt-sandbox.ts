/**
 * A throwaway Debian "host" for testing apt/dpkg for real: new mount, PID, UTS, IPC and network
 * namespaces in which an overlayfs shows the host's own `/` (read-only lower) with its writes going to
 * a tmpfs that dies with the namespace, plus /proc, /dev, /sys and a private /run and /tmp. The agent's
 * runner is aimed inside with `prefix` (nsenter + chroot), so `apt-get install`, `dpkg`, `apt-mark`
 * change only the overlay; the host's dpkg database, /etc and /var are never written.
 *
 * Packages come from a local repository the test fills with `publish()` (built with `dpkg-deb -b`,
 * with a hand-written Packages and Release file), reached as `deb [trusted=yes] file:/… ./`: no network
 * (the namespace has none). The host's apt sources and downloaded lists are hidden inside the sandbox.
 *
 * Only for tests, only as root. Everything vanishes when `dispose()` kills the namespace's PID 1.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRunner, type CommandRunner } from '@hostadm/agent/runner/runner.ts';
import { SANDBOX_INIT } from './linux-sandbox.ts';

/** A test package: built as `<name>_<version>_all.deb` with one file, `/usr/share/<name>/version`. */
export interface TestDeb {
  name: string;
  version: string;
  /** Default `misc`. */
  section?: string;
  /** `Depends:` entries, e.g. `['hostadm-test-lib (>= 1.0)']`. */
  depends?: string[];
  /** One-line summary; default `hostadm test package <name>`. */
  summary?: string;
  /** Long description (one paragraph). */
  description?: string;
  homepage?: string;
}

export interface AptSandbox {
  /** Prefix for the agent's runner: every command runs chrooted inside the sandbox. */
  readonly prefix: string[];
  /** A runner already aimed inside (for test setup and read-back). */
  readonly runner: CommandRunner;
  /** The local repository as apt sees it inside the sandbox (`file:/srv/hostadm-test-repo`). */
  readonly repoUri: string;
  /** The sources entry for the local repository (one-line form). */
  readonly sourcesLine: string;
  /** PID (in the host's namespace) of the sandbox's PID 1. */
  readonly pid: number;
  /** Host path of the sandbox's root as the sandbox sees it (through /proc/<pid>/root): read results here. */
  readonly root: string;
  /**
   * Builds these packages and makes them the repository's whole content (then run `apt-get update`
   * inside). With `subdir`, a second flat repository at `<repoUri>/<subdir>` instead; returns its URI.
   */
  publish(debs: readonly TestDeb[], subdir?: string): string;
  /** Writes a file inside the sandbox (path absolute inside it), creating directories. */
  writeFile(path: string, content: string): void;
  dispose(): Promise<void>;
}

const REPO_INSIDE = '/srv/hostadm-test-repo';

export function canAptSandbox(): { ok: true } | { ok: false; reason: string } {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'needs root' };
  for (const tool of ['/usr/bin/unshare', '/usr/bin/nsenter', '/usr/sbin/chroot', '/usr/bin/dpkg-deb', '/usr/bin/apt-get', '/usr/bin/dpkg-query']) {
    if (!existsSync(tool)) return { ok: false, reason: `needs ${tool}` };
  }
  if (!readFileSync('/proc/filesystems', 'utf8').includes('overlay')) return { ok: false, reason: 'needs overlayfs' };
  return { ok: true };
}

export async function createAptSandbox(options: { hostname?: string } = {}): Promise<AptSandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-apt-'));
  const repo = join(dir, 'repo');
  const mountpoint = join(dir, 'root');
  const layers = join(dir, 'layers');
  mkdirSync(repo);
  mkdirSync(mountpoint);
  mkdirSync(layers);
  writeRepoIndex(repo);
  const inside = (path: string) => `${mountpoint}${path}`;
  const setup = [
    'set -e',
    // Upper and work dirs on a tmpfs of the namespace: not inside the lower `/` (overlayfs refuses
    // overlapping layers), and gone with the namespace.
    `mount -t tmpfs -o mode=0755 tmpfs "${layers}"`,
    `mkdir "${layers}/upper" "${layers}/work"`,
    `mount -t overlay overlay -o "lowerdir=/,upperdir=${layers}/upper,workdir=${layers}/work" "${mountpoint}"`,
    `mount -t proc proc "${inside('/proc')}"`,
    `mount --rbind /sys "${inside('/sys')}"`,
    `mount --rbind /dev "${inside('/dev')}"`,
    `mount -t tmpfs tmpfs "${inside('/run')}"`,
    `mount -t tmpfs tmpfs "${inside('/tmp')}"`,
    `mkdir -p "${inside(REPO_INSIDE)}"`,
    `mount --bind "${repo}" "${inside(REPO_INSIDE)}"`,
    `hostname ${options.hostname ?? 'aptbox'}`,
    'echo READY',
    `exec ${SANDBOX_INIT.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`,
  ].join('\n');
  const holder: ChildProcess = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', '--uts', '--ipc', '--net', '--pid', '--fork', '--', 'sh', '-c', setup],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  holder.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout?.on('data', (c: Buffer) => c.toString().includes('READY') && resolve());
      holder.once('exit', (code) => reject(new Error(`apt sandbox setup failed (exit ${code}): ${stderr}`)));
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim().split(/\s+/);
  const pid = Number(children[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('apt sandbox: could not find the namespace PID 1');
  const prefix = ['nsenter', '-t', String(pid), '-m', '-u', '-i', '-n', '-p', '--', 'chroot', mountpoint];
  const root = `/proc/${pid}/root${mountpoint}`;
  const sourcesLine = `deb [trusted=yes] file:${REPO_INSIDE} ./`;

  const writeFile = (path: string, content: string) => {
    mkdirSync(dirname(root + path), { recursive: true });
    writeFileSync(root + path, content);
  };
  // Only the local repository: the host's sources and downloaded lists are hidden (deleted in the overlay).
  for (const sub of ['/etc/apt/sources.list.d', '/var/lib/apt/lists']) {
    const path = root + sub;
    if (!existsSync(path)) continue;
    for (const name of readdirSync(path)) if (name !== 'partial' && name !== 'lock') rmSync(join(path, name), { recursive: true, force: true });
  }
  rmSync(`${root}/etc/apt/sources.list`, { force: true });
  writeFile('/etc/apt/sources.list.d/hostadm-test.list', `${sourcesLine}\n`);
  // Maintainer scripts must not start daemons (there is no init here, but be sure).
  writeFile('/usr/sbin/policy-rc.d', '#!/bin/sh\nexit 101\n');
  spawnSync('chmod', ['0755', `${root}/usr/sbin/policy-rc.d`]);

  return {
    prefix,
    runner: createRunner({ prefix }),
    repoUri: `file:${REPO_INSIDE}`,
    sourcesLine,
    pid,
    root,
    publish(debs, subdir) {
      if (subdir !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(subdir)) throw new Error(`bad repository directory ${subdir}`);
      const target = subdir ? join(repo, subdir) : repo;
      mkdirSync(target, { recursive: true });
      for (const name of readdirSync(target)) if (/\.deb$|^Packages$|^Release$/.test(name)) rmSync(join(target, name), { force: true });
      const build = join(dir, 'build');
      for (const deb of debs) buildDeb(build, target, deb);
      rmSync(build, { recursive: true, force: true });
      writeRepoIndex(target);
      return subdir ? `file:${REPO_INSIDE}/${subdir}` : `file:${REPO_INSIDE}`;
    },
    writeFile,
    async dispose() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await new Promise<void>((resolve) => (holder.exitCode !== null || holder.signalCode !== null ? resolve() : holder.once('exit', () => resolve())));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const NAME = /^[a-z0-9][a-z0-9+.-]+$/;

function buildDeb(build: string, repo: string, deb: TestDeb): void {
  if (!NAME.test(deb.name) || !/^[0-9][A-Za-z0-9.+~-]*$/.test(deb.version)) throw new Error(`bad test package ${deb.name} ${deb.version}`);
  const tree = join(build, `${deb.name}_${deb.version}`);
  mkdirSync(join(tree, 'DEBIAN'), { recursive: true });
  mkdirSync(join(tree, 'usr/share', deb.name), { recursive: true });
  writeFileSync(join(tree, 'usr/share', deb.name, 'version'), `${deb.version}\n`);
  const control = [
    `Package: ${deb.name}`,
    `Version: ${deb.version}`,
    `Section: ${deb.section ?? 'misc'}`,
    'Priority: optional',
    'Architecture: all',
    'Maintainer: hostadm tests <tests@hostadm.invalid>',
    ...(deb.depends?.length ? [`Depends: ${deb.depends.join(', ')}`] : []),
    ...(deb.homepage ? [`Homepage: ${deb.homepage}`] : []),
    `Description: ${deb.summary ?? `hostadm test package ${deb.name}`}`,
    ` ${deb.description ?? 'Built by the hostadm tests; installs one file and runs no scripts.'}`,
  ];
  writeFileSync(join(tree, 'DEBIAN/control'), `${control.join('\n')}\n`);
  const out = join(repo, `${deb.name}_${deb.version}_all.deb`);
  const built = spawnSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-b', tree, out], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`dpkg-deb -b ${deb.name}: ${built.stderr}`);
}

/** Packages (each deb's control plus Filename/Size/checksums) and a Release naming it, as apt expects of a flat repository. */
function writeRepoIndex(repo: string): void {
  const stanzas: string[] = [];
  for (const file of readdirSync(repo)
    .filter((f) => f.endsWith('.deb'))
    .sort()) {
    const path = join(repo, file);
    const fields = spawnSync('dpkg-deb', ['-f', path], { encoding: 'utf8' });
    if (fields.status !== 0) throw new Error(`dpkg-deb -f ${file}: ${fields.stderr}`);
    const bytes = readFileSync(path);
    stanzas.push(
      `${fields.stdout.trimEnd()}\nFilename: ./${file}\nSize: ${statSync(path).size}\n` +
        `MD5sum: ${createHash('md5').update(bytes).digest('hex')}\nSHA256: ${createHash('sha256').update(bytes).digest('hex')}\n`,
    );
  }
  const packages = stanzas.join('\n');
  writeFileSync(join(repo, 'Packages'), packages);
  const sha = createHash('sha256').update(packages).digest('hex');
  const release = [
    'Origin: hostadm-tests',
    'Label: hostadm-tests',
    'Suite: hostadm-tests',
    'Codename: hostadm-tests',
    `Date: ${new Date().toUTCString()}`,
    'Architectures: all amd64 arm64 i386',
    'SHA256:',
    ` ${sha} ${Buffer.byteLength(packages)} Packages`,
  ];
  writeFileSync(join(repo, 'Release'), `${release.join('\n')}\n`);
}

/** Whether the host's own dpkg database knows a package (the sandbox must never make this true). */
export function hostHasPackage(name: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f', '${db:Status-Status}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.trim() !== '' && result.stdout.trim() !== 'not-installed';
}

/** Mounts of the host's namespace under a path (a disposed sandbox leaves none). */
export function hostMountsUnder(path: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(path));
}
