/**
 * FreeBSD jails through iocage: the parsers against real published iocage outputs
 * (test/fixtures/freebsd/jail, sources in jail.source.md), then every action through a real agent on
 * the FreeBSD platform whose runner answers as a host with iocage would: the argv each action runs is
 * compared with the checked-in snapshot, and the state rules hold before anything runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandRunner, RunOptions, RunResult } from '@hostadm/agent/runner/runner.ts';
import { createdName, parseJailList, parseJailProps, parseJailUsage, parseRecursiveGet, progressLines } from '@hostadm/agent/platforms/freebsd/parse/jail.ts';
import { freebsdJail } from '@hostadm/agent/platforms/freebsd/jail.ts';
import { labelLines, progressKeys } from '@hostadm/agent/platforms/ports/jail.ts';
import { startTestAgent } from '../helpers/agent.ts';
import { expectError, keySession, snapshotArgv } from './services-support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/jail/${name}`, import.meta.url), 'utf8');

test('iocage tables are read by their header: Python iocage long and short lists, the shell iocage list and df', () => {
  assert.deepEqual(parseJailList(fixture('list-long.txt')), [
    { uuid: 'test_121', tag: 'test_121', boot: 'off', state: 'down', jid: '-', ip4: '10.1.0.121', type: 'jail' },
  ]);
  assert.deepEqual(parseJailList(fixture('list-long-template.txt')), [
    { uuid: 'ansible_client', tag: 'ansible_client', boot: 'off', state: 'down', jid: '-', ip4: 'DHCP (not running)', type: 'template' },
  ]);
  assert.deepEqual(parseJailList(fixture('list-short.txt')), [{ uuid: 'jail1', tag: 'jail1', boot: 'off', state: 'up', jid: '1', ip4: '-', type: 'jail' }]);
  assert.deepEqual(parseJailList(fixture('list-shell.txt')), [
    { uuid: 'b00945a3-d028-11e5-8dc9-68f72865c4fc', tag: 'jail1', boot: 'off', state: 'up', jid: '1', ip4: '-', type: 'basejail' },
  ]);
  const usage = parseJailUsage(fixture('df-shell.txt'));
  assert.equal(usage.length, 4);
  assert.deepEqual(usage[1], {
    uuid: '4448e560-13f0-11e4-9463-db544107b7d4',
    tag: '4448e560-13f0-11e4-9463-db544107b7d4',
    crt: '1.74x',
    res: 'none',
    qta: '15G',
    use: '2.25G',
    ava: '12.8G',
  });
  assert.deepEqual(parseJailList(''), []);
});

test('start/stop lines become progress keys; get all is name:value; -r rows carry TAG; create names the jail', () => {
  const started = progressKeys(progressLines(fixture('start-vnet.txt')));
  assert.deepEqual(Object.keys(started).slice(0, 4), [
    'No default gateway found for ipv6.',
    '* Starting vnet-test',
    'vnet-test is not using the devfs_ruleset of 4, not generating a ruleset for the jail, DHCP may not work.',
    '+ Started OK',
  ]);
  assert.ok(Object.values(started).every((v) => v === ''));
  assert.equal(Object.keys(progressKeys(progressLines(fixture('stop-vnet.txt')))).length, 7);
  assert.ok(
    '+ Using IP options: ip4.addr=10.55.0.13,127.1.0.53 ip6.addr=2001:470:8abf:[redacted] ip4.saddrsel=1 ip4=new ip6.saddrsel=1 ip6=new' in
      progressKeys(progressLines(fixture('start-shared-ip.txt'))),
  );
  const props = parseJailProps(fixture('get-all.txt'));
  assert.equal(Object.keys(props).length, 20);
  assert.equal(props.cloned_release, '11.1-RELEASE');
  assert.equal(props.available, 'readonly');
  assert.deepEqual(parseRecursiveGet('www\tem0|10.0.0.5/24\ndb\tnone\n', 'ip4_addr'), {
    www: { TAG: 'www', ip4_addr: 'em0|10.0.0.5/24' },
    db: { TAG: 'db', ip4_addr: 'none' },
  });
  assert.equal(createdName(fixture('create.txt')), 'examplejail');
  assert.deepEqual(labelLines(progressLines(fixture('create.txt'))), { 'examplejail successfully created!': '' });
});

/** A FreeBSD host with iocage: `www` runs (jid 3), `db` is down; answers follow what ran before. */
class IocageHost implements CommandRunner {
  readonly calls: string[][] = [];
  readonly jails = new Map<string, { up: boolean; boot: string; ip4: string; type: string }>([
    ['www', { up: true, boot: 'on', ip4: 'em0|10.1.0.5/24', type: 'jail' }],
    ['db', { up: false, boot: 'off', ip4: 'none', type: 'jail' }],
  ]);
  activePool = 'zroot';

  async run(argv: readonly string[], _options?: RunOptions): Promise<RunResult> {
    this.calls.push([...argv]);
    const [cmd, sub, ...rest] = argv;
    let stdout = '';
    let code = 0;
    if (cmd === 'iocage' && sub === 'list' && rest[0] === '-r')
      stdout = '+---------------+\n| Bases fetched |\n+===============+\n| 14.1-RELEASE  |\n+---------------+\n';
    else if (cmd === 'iocage' && sub === 'list') stdout = rest[0] === '-t' ? '' : this.table();
    else if (cmd === 'iocage' && sub === 'get' && rest[0] === '-p') stdout = `${this.activePool}\n`;
    else if (cmd === 'iocage' && sub === 'get' && rest[0] === '-r') stdout = 'db\toff\nwww\ton\n';
    else if (cmd === 'iocage' && sub === 'get' && rest[0] === 'all') stdout = 'boot:on\nmemoryuse:deny=2G\nmaxproc:off\npcpu:log=80\n';
    else if (cmd === 'iocage' && sub === 'get') stdout = 'on\n';
    else if (cmd === 'iocage' && sub === 'df')
      stdout =
        '+------+-------+------+------+-------+-------+\n| NAME |  CRT  | RES  | QTA  |  USE  |  AVA  |\n+======+=======+======+======+=======+=======+\n| db   | 2.01x | none | none | 412M  | 92.7G |\n+------+-------+------+------+-------+-------+\n';
    else if (cmd === 'iocage' && (sub === 'start' || sub === 'stop')) {
      const jail = this.jails.get(rest[0] as string);
      if (jail) jail.up = sub === 'start';
      stdout = fixture(sub === 'start' ? 'start-shared-ip.txt' : 'stop-vnet.txt');
    } else if (cmd === 'iocage' && (sub === 'create' || sub === 'clone')) {
      const name = rest[rest.indexOf('-n') + 1] as string;
      this.jails.set(name, { up: false, boot: 'off', ip4: 'none', type: 'jail' });
      stdout = `${name} successfully ${sub === 'create' ? 'created' : 'cloned'}!\n`;
    } else if (cmd === 'iocage' && sub === 'destroy') {
      this.jails.delete(rest[1] as string);
      stdout = `Destroying ${rest[1]}\n`;
    } else if (cmd === 'iocage' && sub === 'exec') stdout = 'uid=80(www) gid=80(www) groups=80(www)\n';
    else if (cmd === 'iocage' && sub === 'activate') this.activePool = rest[0] as string;
    else if (cmd === 'iocage' && sub === 'clean') this.jails.clear();
    else if (cmd === 'rctl' || cmd === 'zfs') code = 0;
    else code = 127;
    return { argv: [...argv], code, signal: null, stdout, stderr: '', timedOut: false, truncated: false, durationMs: 0 };
  }

  /** `iocage list -l` as texttable draws it (columns as wide as their widest cell). */
  private table(): string {
    const header = ['JID', 'NAME', 'BOOT', 'STATE', 'TYPE', 'RELEASE', 'IP4', 'IP6', 'TEMPLATE', 'BASEJAIL'];
    const rows = [...this.jails].map(([name, j]) => [j.up ? '3' : 'None', name, j.boot, j.up ? 'up' : 'down', j.type, '14.1-RELEASE', j.ip4, '-', '-', 'no']);
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
    const line = (c: string) => `+${widths.map((w) => c.repeat(w + 2)).join('+')}+`;
    const row = (cells: string[]) => `|${cells.map((cell, i) => ` ${cell.padEnd(widths[i] as number)} `).join('|')}|`;
    return [line('-'), row(header), line('='), ...rows.flatMap((r) => [row(r), line('-')])].join('\n');
  }
}

test('every action runs the expected iocage/rctl argv (snapshot), with the state rules checked before anything runs', async (t) => {
  const host = new IocageHost();
  const agent = await startTestAgent({ platform: 'freebsd', runner: host });
  t.after(() => agent.dispose());
  const root = await keySession(t, agent);
  const calls: Record<string, string[][]> = {};
  const step = async (label: string, action: string, args: Record<string, unknown> = {}, code?: number) => {
    const before = host.calls.length;
    const reply = await root.call('jail', action, args);
    if (code === undefined) assert.equal(reply.name, 'response', `${label}: ${JSON.stringify(reply.args)}`);
    else expectError(reply, code);
    calls[label] = host.calls.slice(before);
    return reply.args as Record<string, unknown>;
  };

  assert.deepEqual((await step('listjails', 'listjails')).listjails, {
    www: { boot: 'on', ip4: '10.1.0.5', jid: '3', state: 'up', tag: 'www', type: 'jail' },
    db: { boot: 'off', ip4: '-', jid: '-', state: 'down', tag: 'db', type: 'jail' },
  });
  await step('getjailsettings one', 'getjailsettings', { jail: 'www', prop: 'boot' });
  await step('getjailsettings all', 'getjailsettings', { jail: 'www' });
  assert.deepEqual((await step('getjailsettings -r', 'getjailsettings', { switches: '-r', prop: 'boot' })).getjailsettings, {
    db: { TAG: 'db', boot: 'off' },
    www: { TAG: 'www', boot: 'on' },
  });
  await step('df', 'df');
  assert.deepEqual(await step('startjail running', 'startjail', { jail: 'www' }), { startjail: { www: { INFO: ' www is already up' } } });
  await step('startjail', 'startjail', { jail: 'db' });
  await step('stopjail', 'stopjail', { jail: 'db' });
  await step('stopjail stopped', 'stopjail', { jail: 'db' });
  await step('capjail', 'capjail', { jail: 'www' });
  await step('capjail stopped', 'capjail', { jail: 'db' }, 409);
  await step('createjail', 'createjail', { props: 'tag=web2 release=14.1-RELEASE boot=on' });
  assert.deepEqual((await step('createjail -e', 'createjail', { props: 'tag=empty1', switches: '-e' })).createjail, {
    props: 'tag=empty1',
    switches: '-e',
    success: { uuid: 'empty1' },
  });
  await step('createjail -b', 'createjail', { props: 'tag=base1 release=14.1-RELEASE', switches: '-b' });
  await step('clonejail', 'clonejail', { jail: 'www', props: 'tag=www2 ip4_addr=em0|10.1.0.6/24' });
  await step('destroyjail running', 'destroyjail', { jail: 'www' }, 409);
  await step('destroyjail', 'destroyjail', { jail: 'web2' });
  assert.deepEqual((await step('execjail', 'execjail', { jail: 'www', user: 'www', command: ['id', '-u'] })).execjail, {
    success: { 'uid=80(www) gid=80(www) groups=80(www)': '' },
  });
  await step('execjail one word', 'execjail', { jail: 'www', user: 'root', command: 'id' });
  await step('execjail shell word', 'execjail', { jail: 'www', user: 'root', command: ['id;reboot'] }, 400);
  await step('execjail stopped', 'execjail', { jail: 'db', user: 'root', command: 'id' }, 409);
  await step('cleanjails foreign', 'cleanjails', {}, 409);
  await step('cleanreleases foreign', 'cleanreleases', {}, 409);
  await step('cleantemplates none', 'cleantemplates');
  await step('cleanall foreign', 'cleanall', {}, 409);
  await step('activatepool query', 'activatepool');
  await step('activatepool', 'activatepool', { pool: 'tank' });
  await step('deactivatepool other', 'deactivatepool', { pool: 'zroot' }, 409);
  await step('deactivatepool', 'deactivatepool', { pool: 'tank' });
  snapshotArgv(t, calls);
});

test('clean runs iocage clean only when every jail there was made by hostadm', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-jail-freebsd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const host = new IocageHost();
  host.jails.clear();
  const port = freebsdJail({ runner: host, dataDir: dir });
  await port.create(
    [
      ['tag', 'a'],
      ['release', '14.1-RELEASE'],
    ],
    undefined,
  );
  await port.create(
    [
      ['tag', 'b'],
      ['release', '14.1-RELEASE'],
    ],
    undefined,
  );
  await port.start('a');
  await assert.rejects(port.clean('jails'), /running jails would be destroyed \(a\)/);
  await port.stop('a');
  await port.clean('jails');
  assert.deepEqual(host.calls.at(-1), ['iocage', 'clean', '-f', '-j']);
  assert.deepEqual(await port.list(), []);
});
