/**
 * Linux firewall: an nftables table of ours, `inet hostadm`, beside whatever else the host loads
 * (another table never sees ours, and a packet must pass every input hook). The open ports are its
 * sets `tcp_open` and `udp_open`; the whole table lives in /etc/hostadm/firewall.nft, written by
 * open/close (checked with `nft -c` before it replaces the old one) and loaded with `nft -f`.
 *
 * - status: `is_running` = the kernel has the table (`nft list table inet hostadm`);
 *   `is_enabled` = the distribution's nftables.service loads it at boot: /etc/nftables.conf (Debian,
 *   Ubuntu, Arch) includes our file and the unit is enabled;
 * - list_open: the kernel's sets while running, else the file (never opened: 22/tcp, so a first
 *   start does not lock out ssh);
 * - start/restart: `nft -f` the file (an atomic replacement); stop: `nft delete table inet hostadm`;
 * - enable: add the include to /etc/nftables.conf and `systemctl enable nftables.service`; disable:
 *   remove the include, leaving the unit (and the administrator's own rules) alone;
 * - reset-defaults: 501, as the spec says for systems other than TrueOS.
 */
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { LinuxContext } from './index.ts';
import type { RunOptions, RunResult } from '../../runner/runner.ts';
import { commandFailed } from '../common/host-command.ts';
import { formatPortSpec, parsePortSpec, uniquePorts, type FirewallPort, type PortSpec } from '../ports/firewall.ts';
import {
  INCLUDE_COMMENT,
  includeLine,
  includesRuleset,
  isNoSuchTable,
  parseNftTable,
  parseRulesetPorts,
  parseServicesDb,
  renderRuleset,
  TABLE,
  withoutInclude,
} from './parse/firewall.ts';

export const RULESET_DIR = '/etc/hostadm';
export const RULESET = `${RULESET_DIR}/firewall.nft`;
export const NFTABLES_CONF = '/etc/nftables.conf';
const NFTABLES_UNIT = 'nftables.service';
const DEFAULT_OPEN = ['22/tcp'].map(parsePortSpec);
const QUICK: RunOptions = { timeoutMs: 30_000 };

export function linuxFirewall(ctx: LinuxContext): FirewallPort {
  const { runner } = ctx;

  const nft = async (args: string[], options: RunOptions = QUICK): Promise<RunResult> => {
    const result = await runner.run(['nft', ...args], options);
    if (result.code === 127) throw unsupported('the firewall needs nftables: nft is not installed on this host');
    return result;
  };
  const mustRun = async (argv: string[], options: RunOptions = QUICK): Promise<RunResult> => {
    const result = argv[0] === 'nft' ? await nft(argv.slice(1), options) : await runner.run(argv, options);
    if (result.code !== 0) throw commandFailed(argv.join(' '), result);
    return result;
  };
  /** The file's text, or null when it does not exist. */
  const readFile = async (path: string): Promise<string | null> => {
    const result = await runner.run(['cat', '--', path], QUICK);
    if (result.code === 0) return result.stdout;
    if (/No such file or directory/.test(result.stderr)) return null;
    throw commandFailed(`cat ${path}`, result);
  };
  /** Replaces a file by rename, so a reader never sees half of it; `check` vets the new one first. */
  const writeFile = async (path: string, text: string, existing: boolean, check?: (tmp: string) => Promise<void>): Promise<void> => {
    const tmp = `${path}.hostadm-new`;
    await mustRun(['tee', '--', tmp], { ...QUICK, input: text });
    try {
      // Keep the mode and owner of the file replaced (Debian ships nftables.conf executable).
      if (existing) await mustRun(['chmod', `--reference=${path}`, '--', tmp]);
      if (check) await check(tmp);
    } catch (err) {
      await runner.run(['rm', '-f', '--', tmp], QUICK);
      throw err;
    }
    await mustRun(['mv', '-f', '--', tmp, path]);
  };

  /** The kernel's open ports, or null when our table is not loaded. */
  const kernelPorts = async (): Promise<PortSpec[] | null> => {
    const result = await nft(['-j', 'list', 'table', 'inet', TABLE]);
    if (result.code === 0) return parseNftTable(result.stdout);
    if (isNoSuchTable(result.stderr)) return null;
    throw commandFailed(`nft list table inet ${TABLE}`, result);
  };
  const filePorts = async (): Promise<PortSpec[] | null> => {
    const text = await readFile(RULESET);
    return text === null ? null : parseRulesetPorts(text);
  };
  const writeRuleset = async (ports: readonly PortSpec[]): Promise<void> => {
    await mustRun(['mkdir', '-p', '-m', '0755', '--', RULESET_DIR]);
    await writeFile(RULESET, renderRuleset(ports), false, async (tmp) => {
      await mustRun(['nft', '-c', '-f', tmp]);
    });
  };
  const ensureRuleset = async (): Promise<void> => {
    if ((await filePorts()) === null) await writeRuleset(DEFAULT_OPEN);
  };
  const unitEnabled = async (): Promise<boolean> => {
    const result = await runner.run(['systemctl', 'is-enabled', '--', NFTABLES_UNIT], QUICK);
    return result.code === 0;
  };

  return {
    async knownPorts() {
      const text = await readFile('/etc/services');
      return text === null ? [] : parseServicesDb(text);
    },
    async listOpen() {
      return (await kernelPorts()) ?? (await filePorts()) ?? DEFAULT_OPEN;
    },
    async status() {
      const running = (await kernelPorts()) !== null;
      const conf = await readFile(NFTABLES_CONF);
      const enabled = conf !== null && includesRuleset(conf, RULESET) && (await unitEnabled());
      return { enabled, running };
    },
    async change(action, ports) {
      const current = (await filePorts()) ?? DEFAULT_OPEN;
      const asked = new Set(ports.map(formatPortSpec));
      const next = action === 'open' ? uniquePorts([...current, ...ports]) : current.filter((p) => !asked.has(formatPortSpec(p)));
      await writeRuleset(next);
      if ((await kernelPorts()) !== null) await mustRun(['nft', '-f', RULESET]);
    },
    async run(action) {
      if (action === 'stop') {
        if ((await kernelPorts()) !== null) await mustRun(['nft', 'delete', 'table', 'inet', TABLE]);
        return;
      }
      await ensureRuleset();
      await mustRun(['nft', '-f', RULESET]);
    },
    async setEnabled(enabled) {
      const conf = await readFile(NFTABLES_CONF);
      if (enabled) {
        await ensureRuleset();
        if (conf === null || !includesRuleset(conf, RULESET)) {
          const base = conf ?? '#!/usr/sbin/nft -f\n';
          await writeFile(NFTABLES_CONF, `${base.replace(/\n*$/, '\n')}${INCLUDE_COMMENT}\n${includeLine(RULESET)}\n`, conf !== null);
        }
        const result = await runner.run(['systemctl', 'enable', '--', NFTABLES_UNIT], QUICK);
        if (result.code === 127) throw unsupported('enable needs systemd (systemctl) to load nftables.conf at boot');
        if (result.code !== 0) throw commandFailed(`systemctl enable ${NFTABLES_UNIT}`, result);
        return;
      }
      if (conf !== null && includesRuleset(conf, RULESET)) await writeFile(NFTABLES_CONF, withoutInclude(conf, RULESET), true);
    },
    async resetDefaults() {
      throw unsupported('reset-defaults: supported on TrueOS only (its reset-firewall script); not on Linux');
    },
  };
}
