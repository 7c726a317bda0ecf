/**
 * FreeBSD beadm: the listing parser against published `bectl list` / `beadm list` outputs
 * (test/fixtures/freebsd/beadm, sources in source.md) and the `-H` rows both tools print, then every
 * action through a real agent on the FreeBSD platform whose runner answers like a host with bectl (or,
 * where bectl is absent, sysutils/beadm): the argv each action runs is compared with the snapshot.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import { parseBeList } from '@hostadm/agent/platforms/common/be-list.ts';
import { mountedAt } from '@hostadm/agent/platforms/common/be-tool.ts';
import { startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';
import { okCall } from './powerd-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/beadm/${name}`, import.meta.url), 'utf8');

test('published bectl and beadm listings parse into the spec records', () => {
  assert.deepEqual(parseBeList(fixture('bectl-list-14.2.txt')), {
    '14.2-RELEASE_2025-03-01_190330': { active: '-', mount: '-', space: '5.01M', date: '2025-03-01', nick: '19:03' },
    '14.2-p2-pre-FVWM': { active: '-', mount: '-', space: '1K', date: '2025-03-01', nick: '22:27' },
    '14.2-p2-pre-drm-kmod-fix': { active: '-', mount: '-', space: '3.21M', date: '2025-03-01', nick: '20:50' },
    '14.2-p2-pre-xorg': { active: '-', mount: '-', space: '222K', date: '2025-03-01', nick: '19:25' },
    default: { active: 'NR', mount: '/', space: '2.16G', date: '2025-03-01', nick: '17:42' },
  });
  assert.deepEqual(parseBeList(fixture('bectl-list-12.0.txt')), {
    safe: { active: 'NR', mount: '/', space: '188K', date: '2018-08-18', nick: '02:32' },
    default: { active: '-', mount: '-', space: '427M', date: '2018-08-18', nick: '02:26' },
  });
  assert.deepEqual(parseBeList(fixture('beadm-list-mounted.txt')), {
    default: { active: 'NR', mount: '/', space: '630.2M', date: '2026-03-13', nick: '13:29' },
    NEW: { active: '-', mount: '/tmp/NEW', space: '854.2M', date: '2026-05-09', nick: '23:15' },
  });
});

test('-H rows (tab-separated, as both tools print them), list -s rows, and the end of the listing', () => {
  // The rows of beadm-list-mounted.txt as `-H` prints them (beadm's printf "%s\t%s\t%s\t%s\t%s\n").
  const tabbed = 'default\tNR\t/\t630.2M\t2026-03-13 13:29\nNEW\t-\t/mnt/my dir\t854.2M\t2026-05-09 23:15\n';
  assert.deepEqual(parseBeList(tabbed), {
    default: { active: 'NR', mount: '/', space: '630.2M', date: '2026-03-13', nick: '13:29' },
    NEW: { active: '-', mount: '/mnt/my dir', space: '854.2M', date: '2026-05-09', nick: '23:15' },
  });
  // `bectl list -s` (published, 2025) indents datasets and snapshots: none of those rows is an environment row.
  const withSnapshots =
    'BE/Dataset/Snapshot  Active Mountpoint Space Created\n\ndefault\n  zroot/ROOT/default NR     /          2.03G 2025-08-05 16:53\n  default@origworld  -      -          0     2025-08-05 19:21\n';
  assert.deepEqual(parseBeList(withSnapshots), {});
  assert.deepEqual(parseBeList(''), {});
  assert.deepEqual(Object.keys(parseBeList('a\t-\t-\t1K\t2020-01-01 00:00\n\nnot\t-\t-\t1K\t2020-01-01 00:00\n')), ['a']);
  assert.equal(mountedAt('/tmp/be_mount.c6Sf\n'), '/tmp/be_mount.c6Sf');
  assert.equal(mountedAt("Mounted successfully on '/tmp/BE-NEW.x1y2z3w4'\n"), '/tmp/BE-NEW.x1y2z3w4');
});

/** A FreeBSD host with bectl (or only beadm) whose listing follows what the commands did. */
class FreebsdBeHost extends RecordingRunner {
  readonly tool: 'bectl' | 'beadm';
  constructor(tool: 'bectl' | 'beadm', replies: CannedReply[] = []) {
    super([
      ...replies,
      { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
      { match: ['bectl', 'check'], code: tool === 'bectl' ? 0 : 127, stderr: tool === 'bectl' ? '' : 'command not found: bectl\n' },
      { match: ['beadm', 'version'], stdout: 'beadm 1.3.5\n' },
      { match: (argv) => argv[0] === tool, stdout: '' },
    ]);
    this.tool = tool;
  }
  rows = new Map<string, string[]>([
    ['default', ['NR', '/', '2.16G', '2025-03-01 17:42']],
    ['14.2-RELEASE_2025-03-01_190330', ['-', '-', '5.01M', '2025-03-01 19:03']],
  ]);

  override async run(argv: readonly string[], options = {}) {
    const reply = await super.run(argv, options);
    if (reply.code !== 0 || argv[0] !== this.tool) return reply;
    const [, verb, ...rest] = argv;
    const last = rest.at(-1) ?? '';
    if (verb === 'list') return { ...reply, stdout: `${[...this.rows].map(([n, r]) => [n, ...r].join('\t')).join('\n')}\n` };
    if (verb === 'create') this.rows.set(last, ['-', '-', '1K', '2025-03-02 10:00']);
    if (verb === 'destroy') this.rows.delete(last);
    if (verb === 'rename') {
      const row = this.rows.get(rest[0] ?? '');
      if (row) this.rows.set(last, row);
      this.rows.delete(rest[0] ?? '');
    }
    if (verb === 'mount') {
      const where = rest[1] ?? '/tmp/be_mount.c6Sf';
      this.rows.get(rest[0] ?? '')?.splice(1, 1, where);
      return { ...reply, stdout: this.tool === 'bectl' ? `${where}\n` : `Mounted successfully on '${where}'\n` };
    }
    if (verb === 'umount') this.rows.get(last)?.splice(1, 1, '-');
    return reply;
  }
}

async function freebsdAgent(t: TestContext, host: RecordingRunner): Promise<TestClient> {
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  host.calls.length = 0;
  return root;
}

async function everyAction(t: TestContext, host: FreebsdBeHost): Promise<Record<string, string[][]>> {
  const root = await freebsdAgent(t, host);
  const ran: Record<string, string[][]> = {};
  const step = async (label: string, action: string, args: Record<string, unknown>, reply: unknown) => {
    host.calls.length = 0;
    assert.deepEqual(await okCall(root, 'beadm', action, args), reply, label);
    ran[label] = [...host.calls];
  };
  const old = '14.2-RELEASE_2025-03-01_190330';
  await step(
    'listbes',
    'listbes',
    {},
    {
      listbes: {
        default: { active: 'NR', mount: '/', space: '2.16G', date: '2025-03-01', nick: '17:42' },
        [old]: { active: '-', mount: '-', space: '5.01M', date: '2025-03-01', nick: '19:03' },
      },
    },
  );
  await step('createbe (from the active one)', 'createbe', { newbe: 'pre-upgrade' }, { createbe: { newbe: 'pre-upgrade' } });
  await step('createbe -e', 'createbe', { newbe: 'copy', clonefrom: old }, { createbe: { clonefrom: old, newbe: 'copy' } });
  await step('activatebe', 'activatebe', { target: 'pre-upgrade' }, { activatebe: { target: 'pre-upgrade' } });
  await step('mountbe (temporary directory)', 'mountbe', { be: 'copy' }, { mountbe: { be: 'copy', mountpoint: '/tmp/be_mount.c6Sf' } });
  await step('mountbe at a directory', 'mountbe', { be: old, mountpoint: '/mnt/old' }, { mountbe: { be: old, mountpoint: '/mnt/old' } });
  await step('umountbe (forced)', 'umountbe', { be: old }, { umountbe: { be: old } });
  await step('renamebe', 'renamebe', { source: 'renamed', target: 'copy' }, { renamebe: { source: 'renamed', target: 'copy' } });
  await step('destroybe (forcibly unmounted)', 'destroybe', { target: 'renamed' }, { destroybe: { target: 'renamed' } });
  return ran;
}

test('bectl: every action runs as an administrator would (argv snapshot)', async (t) => {
  const host = new FreebsdBeHost('bectl');
  const ran = await everyAction(t, host);
  assert.deepEqual(ran['destroybe (forcibly unmounted)']?.at(-1), ['bectl', 'destroy', '-F', 'renamed']);
  assert.deepEqual(ran['umountbe (forced)']?.at(-1), ['bectl', 'umount', '-f', '14.2-RELEASE_2025-03-01_190330']);
  assert.equal(host.calls.filter((c) => c[1] === 'check').length, 0, 'the tool is found once, then kept');
  snapshotArgv(t, ran);
});

test('beadm where bectl is absent: the same actions through sysutils/beadm (argv snapshot)', async (t) => {
  const host = new FreebsdBeHost('beadm');
  snapshotArgv(t, await everyAction(t, host));
});

test('a tool that refuses is a 500 with its words; beadm ERROR lines count even on exit 0; no tool is 501', async (t) => {
  const failing = new FreebsdBeHost('beadm', [
    { match: ['beadm', 'activate', '14.2-RELEASE_2025-03-01_190330'], stdout: "ERROR: Cannot activate '14.2-RELEASE_2025-03-01_190330'\n" },
  ]);
  let root = await freebsdAgent(t, failing);
  const err = expectError(await root.call('beadm', 'activatebe', { target: '14.2-RELEASE_2025-03-01_190330' }), 500);
  assert.match(err.message, /beadm activate: ERROR: Cannot activate/);

  const bectlFails = new FreebsdBeHost('bectl', [
    { match: ['bectl', 'rename', 'default', 'x'], code: 1, stderr: 'boot environment is already mounted\nfailed to rename bootenv default to x\n' },
  ]);
  root = await freebsdAgent(t, bectlFails);
  assert.match(expectError(await root.call('beadm', 'renamebe', { source: 'x', target: 'default' }), 500).message, /failed to rename bootenv default to x/);

  const none = new RecordingRunner([
    { match: ['id', '-Gn', 'root'], stdout: 'wheel operator\n' },
    { match: (argv) => argv[0] === 'bectl' || argv[0] === 'beadm', code: 127, stderr: 'command not found\n' },
  ]);
  root = await freebsdAgent(t, none);
  assert.match(expectError(await root.call('beadm', 'listbes'), 501).message, /need bectl .* or beadm/);
});
