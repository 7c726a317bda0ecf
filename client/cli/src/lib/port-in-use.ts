/**
 * A port that is already taken, in one line: which port, and what holds it. A hostadm bridge answers
 * `GET /healthz` with `{"ok":true}`, an agent answers `PUT /rpc/identify` without sign-in; on Linux
 * /proc names the process when we may see it. Used by `hostadm agent`, `hostadm bridge` and `hostadm up`.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { EXIT } from './exit.ts';

const PROBE_TIMEOUT_MS = 1500;

/** The port and address of an EADDRINUSE error from listen(), else undefined. */
export function addressInUse(err: unknown): { host: string; port: number } | undefined {
  const e = err as { code?: unknown; port?: unknown; address?: unknown } | null;
  if (!e || typeof e !== 'object' || e.code !== 'EADDRINUSE') return undefined;
  return { host: typeof e.address === 'string' ? e.address : '127.0.0.1', port: typeof e.port === 'number' ? e.port : 0 };
}

/**
 * Prints `hostadm: cannot listen on HOST:PORT: it is in use by WHAT; HINT` and exits 6 when `err` is
 * EADDRINUSE; returns otherwise.
 */
export async function exitIfAddressInUse(err: unknown, hint: string): Promise<void> {
  const inUse = addressInUse(err);
  if (!inUse) return;
  const holder = await describeHolder(inUse.host, inUse.port);
  const where = inUse.host.includes(':') ? `[${inUse.host}]:${inUse.port}` : `${inUse.host}:${inUse.port}`;
  process.stderr.write(`hostadm: cannot listen on ${where}: the port is in use by ${holder}; ${hint}\n`);
  process.exit(EXIT.connection);
}

/** "a hostadm agent (host simhost, pid 42)", "a hostadm bridge", "another program (pid 7: nginx)". */
export async function describeHolder(host: string, port: number): Promise<string> {
  const kind = await probeHostadm(host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host, port);
  const proc = processHolding(port);
  const details = [kind?.hostname ? `host ${kind.hostname}` : '', proc ? `pid ${proc.pid}${kind ? '' : `: ${proc.command}`}` : ''].filter(Boolean);
  const what = kind ? `a hostadm ${kind.kind}` : 'another program';
  return details.length > 0 ? `${what} (${details.join(', ')})` : what;
}

async function probeHostadm(host: string, port: number): Promise<{ kind: 'agent' | 'bridge'; hostname?: string } | undefined> {
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const ask = async (path: string, method: string): Promise<unknown> => {
    try {
      const res = await fetch(`${base}${path}`, { method, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      return res.ok ? await res.json() : undefined;
    } catch {
      return undefined;
    }
  };
  // REST replies wrap the result in `args` (docs/protocol.md).
  const identify = ((await ask('/rpc/identify', 'PUT')) as { args?: { type?: unknown; hostname?: unknown } } | undefined)?.args;
  if (identify?.type === 'server') return { kind: 'agent', ...(typeof identify.hostname === 'string' ? { hostname: identify.hostname } : {}) };
  const health = (await ask('/healthz', 'GET')) as { ok?: unknown } | undefined;
  if (health?.ok === true) return { kind: 'bridge' };
  return undefined;
}

/** Linux only, and only for processes we may look into: the one with a socket listening on `port`. */
function processHolding(port: number): { pid: number; command: string } | undefined {
  try {
    const inodes = new Set<string>();
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      let text = '';
      try {
        text = readFileSync(table, 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n').slice(1)) {
        const cols = line.trim().split(/\s+/);
        // local_address is HEXADDR:HEXPORT; state 0A is LISTEN; the inode is the tenth column.
        if (cols.length > 9 && cols[3] === '0A' && Number.parseInt(cols[1]!.split(':')[1] ?? '', 16) === port) inodes.add(cols[9]!);
      }
    }
    if (inodes.size === 0) return undefined;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let fds: string[];
      try {
        fds = readdirSync(`/proc/${entry}/fd`);
      } catch {
        continue;
      }
      for (const fd of fds) {
        let link = '';
        try {
          link = readlinkSync(`/proc/${entry}/fd/${fd}`);
        } catch {
          continue;
        }
        const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
        if (inode && inodes.has(inode)) {
          const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(0, 3).join(' ');
          return { pid: Number(entry), command: command.length > 80 ? `${command.slice(0, 80)}…` : command };
        }
      }
    }
  } catch {
    // Not Linux, or /proc not readable: the probe's answer is enough.
  }
  return undefined;
}
