/**
 * The service files in infra/: the systemd units pass `systemd-analyze verify` with no warning (the
 * ExecStart path pointed at a stand-in executable, which verify requires to exist), and the FreeBSD
 * rc.d scripts pass `sh -n` and shellcheck, and, run against a stand-in rc.subr that records what
 * run_rc_command would start, start daemon(8) with the rc.conf settings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const UNITS = ['hostadm-agent.service', 'hostadm-bridge.service'];
const RC_SCRIPTS = ['hostadm_agent', 'hostadm_bridge'];
const found = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

test('the systemd units pass systemd-analyze verify without a warning', {
  skip: found('systemd-analyze') ? false : 'systemd-analyze is not installed (Debian package systemd)',
}, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-units-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const standIn = join(dir, 'hostadm');
  writeFileSync(standIn, '#!/bin/sh\n');
  chmodSync(standIn, 0o755);
  for (const unit of UNITS) {
    const text = readFileSync(join(root, 'infra/systemd', unit), 'utf8');
    assert.match(text, /^ExecStart=\/usr\/local\/bin\/hostadm /m, `${unit} starts the npm-installed hostadm`);
    writeFileSync(join(dir, unit), text.replaceAll('/usr/local/bin/hostadm', standIn));
  }
  const r = spawnSync('systemd-analyze', ['verify', ...UNITS.map((u) => join(dir, u))], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '', 'no warning either (an unknown or misspelt key is only a warning)');
});

test('the bridge unit runs unprivileged and confined; the agent unit says why it is root', () => {
  const bridge = readFileSync(join(root, 'infra/systemd/hostadm-bridge.service'), 'utf8');
  for (const line of [
    'DynamicUser=yes',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    'CapabilityBoundingSet=',
    'SystemCallFilter=@system-service',
  ])
    assert.match(bridge, new RegExp(`^${line}$`, 'm'), line);
  const agent = readFileSync(join(root, 'infra/systemd/hostadm-agent.service'), 'utf8');
  assert.match(agent, /^User=root$/m);
  assert.match(agent, /# Why root/);
});

test('the rc.d scripts pass sh -n and shellcheck', {
  skip: found('shellcheck') ? false : 'shellcheck is not installed (Debian package shellcheck; .ci/run installs it as root)',
}, () => {
  for (const script of RC_SCRIPTS) {
    const path = join(root, 'infra/freebsd/rc.d', script);
    const syntax = spawnSync('sh', ['-n', path], { encoding: 'utf8' });
    assert.equal(syntax.status, 0, `${script}: ${syntax.stderr}`);
    const lint = spawnSync('shellcheck', ['--shell=sh', '--severity=style', path], { encoding: 'utf8' });
    assert.equal(lint.status, 0, `${script}:\n${lint.stdout}${lint.stderr}`);
  }
});

/** An rc.subr that loads the given rc.conf and prints what run_rc_command would run. */
const STAND_IN_RC_SUBR = `
load_rc_config() { . "$RC_CONF"; }
err() { shift; echo "err: $*" >&2; exit 1; }
run_rc_command() {
  eval "enabled=\\\${$rcvar:-}"
  printf 'rcvar=%s\\nenabled=%s\\npidfile=%s\\ncommand=%s\\nargs=%s\\nprecmd=%s\\nenv=%s\\n' "$rcvar" "$enabled" "$pidfile" "$command" "$command_args" "$start_precmd" "$(eval "echo \\\${\${name}_env}")"
}
`;

test('the rc.d scripts start daemon(8) with a pid file and the flags and data directory from rc.conf', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-rcd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'rc.subr'), STAND_IN_RC_SUBR);
  const run = (script: string, rcConf: string) => {
    writeFileSync(join(dir, 'rc.conf'), rcConf);
    const text = readFileSync(join(root, 'infra/freebsd/rc.d', script), 'utf8').replace('. /etc/rc.subr', `. ${join(dir, 'rc.subr')}`);
    writeFileSync(join(dir, script), text);
    const r = spawnSync('sh', [join(dir, script), 'start'], { encoding: 'utf8', env: { ...process.env, RC_CONF: join(dir, 'rc.conf') } });
    assert.equal(r.status, 0, r.stderr);
    return Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  };

  const agentDefaults = run('hostadm_agent', '');
  assert.equal(agentDefaults.rcvar, 'hostadm_agent_enable');
  assert.equal(agentDefaults.enabled, 'NO', 'off until rc.conf enables it');
  assert.equal(agentDefaults.command, '/usr/sbin/daemon');
  assert.equal(
    agentDefaults.args,
    '-f -r -P /var/run/hostadm_agent.pid -t hostadm_agent -S -T hostadm_agent /usr/local/bin/hostadm agent --platform freebsd --data /var/db/hostadm --listen 127.0.0.1:12150',
  );
  assert.match(agentDefaults.env ?? '', /PATH=\S*\/usr\/local\/bin/, 'node from pkg is on PATH');

  const agent = run(
    'hostadm_agent',
    'hostadm_agent_enable="YES"\nhostadm_agent_flags="--listen 0.0.0.0:12150 --bridge wss://bridge.example:12160"\nhostadm_agent_data="/z/hostadm"\n',
  );
  assert.equal(agent.enabled, 'YES');
  assert.match(agent.args ?? '', / --data \/z\/hostadm --listen 0\.0\.0\.0:12150 --bridge wss:\/\/bridge\.example:12160$/);

  const bridge = run('hostadm_bridge', 'hostadm_bridge_enable="YES"\nhostadm_bridge_user="relay"\n');
  assert.equal(bridge.rcvar, 'hostadm_bridge_enable');
  assert.equal(bridge.pidfile, '/var/run/hostadm_bridge.pid');
  assert.equal(
    bridge.args,
    '-f -r -P /var/run/hostadm_bridge.pid -u relay -t hostadm_bridge -S -T hostadm_bridge /usr/local/bin/hostadm bridge serve --data /var/db/hostadm-bridge --listen 0.0.0.0:12160',
  );
  assert.equal(bridge.precmd, 'hostadm_bridge_precmd');
});
