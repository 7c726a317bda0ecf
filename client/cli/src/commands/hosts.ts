/**
 * `hostadm hosts`: the hosts a key may reach through a bridge now: nickname, host key fingerprint, how
 * (the key is registered there, or only a password sign-in is open), online since, and whether this
 * machine has pinned that host key. With `--host NAME` it also asks for a host that does not know the
 * key yet (open to a password sign-in).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { ConnectionOptions } from '../client-commands.ts';
import { certPathFor, isEnrolled, keyPaths, loadConfig, loadKnownHosts, knownHostEntry, markEnrolled, normalizeBridgeUrl } from '../lib/config.ts';
import { runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';
import { bridgeSignInTickets, joinTokenFrom } from '../lib/session.ts';
import { listBridgeHosts, NodeWebSocket } from '../../../sdk/src/node.ts';
import { md5OfCert } from './keys.ts';

export async function runHosts(opts: ConnectionOptions & { json?: boolean; join?: string; joinFile?: string }): Promise<void> {
  await runCommand(async () => {
    const config = loadConfig();
    const profile = config.profiles[opts.profile ?? process.env.HOSTADM_PROFILE ?? config.default ?? ''];
    const bridgeUrl = opts.bridge ?? process.env.HOSTADM_BRIDGE ?? profile?.bridge;
    if (!bridgeUrl) throw usageError('which bridge? give --bridge ws://HOST:PORT (or HOSTADM_BRIDGE, or a bridge profile)');
    const bridge = normalizeBridgeUrl(bridgeUrl);
    const keyPath = opts.key ?? process.env.HOSTADM_KEY ?? profile?.key ?? keyPaths('default').key;
    if (!existsSync(keyPath)) throw usageError(`no key at ${keyPath}`, 'make one: hostadm keys new');
    const certPath = certPathFor(keyPath);
    if (!existsSync(certPath)) throw usageError(`certificate not found next to the key: ${certPath}`);
    const certPem = readFileSync(certPath, 'utf8');
    const md5 = md5OfCert(certPem);
    const joinToken = isEnrolled(bridge, md5) ? undefined : joinTokenFrom(opts);
    const reach = opts.host ?? process.env.HOSTADM_HOST;
    const hosts = await listBridgeHosts({
      bridgeUrl: bridge,
      key: { privatePem: readFileSync(keyPath, 'utf8'), certPem },
      ...(joinToken !== undefined ? { joinToken } : {}),
      onEnrolled: () => markEnrolled(bridge, md5),
      ...bridgeSignInTickets(bridge, md5),
      ...(reach && !reach.startsWith('SHA256:') ? { reach: [reach] } : {}),
      timeoutMs: (opts.timeout ?? 10) * 1000,
      webSocket: NodeWebSocket,
    });
    const pins = loadKnownHosts();
    const rows = hosts.map((h) => {
      const pin = pins[knownHostEntry(bridge, h.nickname)];
      return {
        nickname: h.nickname,
        host_key_fingerprint: h.hostKeyFingerprint,
        access: h.access,
        online_since: h.onlineSince,
        pinned: pin === undefined ? 'no' : pin.fingerprint === h.hostKeyFingerprint ? 'yes' : 'MISMATCH',
      };
    });
    if (opts.json) {
      printJson(rows);
      return;
    }
    if (rows.length === 0) {
      process.stdout.write(
        `no host at ${bridge} accepts the key ${md5} now\n` +
          'a host lists a key once it is registered there (hostadm login --bridge URL --host NAME --user USER signs in by password and registers it)\n',
      );
      return;
    }
    await printTable(
      ['HOST', 'HOST KEY', 'ACCESS', 'ONLINE SINCE', 'PINNED'],
      rows.map((r) => [r.nickname, r.host_key_fingerprint ?? '', r.access === 'key' ? 'key' : 'password sign-in', r.online_since ?? '', r.pinned]),
    );
  });
}
