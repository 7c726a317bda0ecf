/**
 * Debian tools for tests, unpacked rather than installed: packages whose maintainer scripts would start
 * a daemon on the real host (zfs-fuse, openssh-server) are fetched with `apt-get download` and unpacked
 * with `dpkg-deb -x` into a cache folder, then run from there inside namespaces the test makes. The host's
 * package database, services and /etc are never touched.
 *
 * One cache folder per package set (under the system temp dir, or HOSTADM_TEST_DEBS), shared by the test
 * files of one run and by later runs; a mkdir lock keeps two processes from unpacking at once.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type UnpackedTools = { ok: true; root: string; env: { PATH: string; LD_LIBRARY_PATH: string } } | { ok: false; reason: string };

const PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]{0,99}$/;

function cacheBase(): string {
  return process.env.HOSTADM_TEST_DEBS ?? join(tmpdir(), 'hostadm-test-debs');
}

function envFor(root: string): { PATH: string; LD_LIBRARY_PATH: string } {
  const bins = ['usr/sbin', 'usr/bin', 'sbin', 'bin'].map((d) => join(root, d));
  const libs = ['usr/lib/x86_64-linux-gnu', 'lib/x86_64-linux-gnu', 'usr/lib', 'lib'].map((d) => join(root, d));
  return { PATH: [...bins, process.env.PATH ?? '/usr/bin:/bin'].join(':'), LD_LIBRARY_PATH: libs.join(':') };
}

async function waitForLock(lock: string, done: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (existsSync(done)) return;
    try {
      mkdirSync(lock);
      return;
    } catch {
      // A lock older than ten minutes belongs to a run that died.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 600_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error(`timed out waiting for ${lock}`);
}

/**
 * Unpack `packages` (exact Debian names, dependencies not resolved: list the libraries the host lacks)
 * and return where they are, or why they cannot be had (not root, no apt, no mirror).
 */
export async function unpackDebianPackages(packages: readonly string[]): Promise<UnpackedTools> {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'unpacking Debian packages for this test needs root (apt-get download)' };
  if (!existsSync('/usr/bin/apt-get') || !existsSync('/usr/bin/dpkg-deb')) return { ok: false, reason: 'needs apt-get and dpkg-deb (a Debian host)' };
  const bad = packages.find((p) => !PACKAGE_NAME.test(p));
  if (bad !== undefined) return { ok: false, reason: `not a Debian package name: ${bad}` };
  const key = createHash('sha256')
    .update([...packages].sort().join('\n'))
    .digest('hex')
    .slice(0, 16);
  const base = cacheBase();
  mkdirSync(base, { recursive: true, mode: 0o700 });
  const root = join(base, key);
  const done = join(root, '.unpacked');
  if (existsSync(done)) return { ok: true, root, env: envFor(root) };
  const lock = `${root}.lock`;
  await waitForLock(lock, done);
  try {
    if (existsSync(done)) return { ok: true, root, env: envFor(root) };
    const work = `${root}.work-${process.pid}`;
    rmSync(work, { recursive: true, force: true });
    const debs = join(work, 'debs');
    mkdirSync(debs, { recursive: true });
    try {
      // _apt cannot write into a 0700 root-owned folder; the sandbox option keeps apt from warning about it.
      execFileSync('apt-get', ['-q', '-o', 'APT::Sandbox::User=root', 'download', ...packages], { cwd: debs, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      rmSync(work, { recursive: true, force: true });
      const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').pop() ?? String(error);
      return { ok: false, reason: `apt-get download ${packages.join(' ')} failed: ${stderr}` };
    }
    const tree = join(work, 'root');
    for (const deb of readdirSync(debs)) execFileSync('dpkg-deb', ['-x', join(debs, deb), tree]);
    rmSync(root, { recursive: true, force: true });
    renameSync(tree, root);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(done);
    return { ok: true, root, env: envFor(root) };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
