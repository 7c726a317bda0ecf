/**
 * nginx as a WebSocket relay, the one to beat: Debian's nginx, unpacked (never installed: its package
 * would start an nginx on the host) with test/helpers/debian-tools.ts, one worker, proxying every
 * WebSocket to the bench's echo server the way a site would put nginx in front of a service
 * (`proxy_pass` with the Upgrade headers, no buffering, no logs). A frame crosses it twice, as it
 * crosses the minimal relay and the bridge.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unpackDebianPackages } from '../helpers/debian-tools.ts';

export type NginxRelay = { url: string; pid: number; stop(): Promise<void> } | { skipped: string };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function config(prefix: string, port: number, upstreamPort: number): string {
  return `
worker_processes 1;
daemon off;
master_process on;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://127.0.0.1:${upstreamPort};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_buffering off;
      proxy_read_timeout 3600s;
      proxy_send_timeout 3600s;
    }
  }
}
`;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}: ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createServer().listen(port, '127.0.0.1');
      socket.once('listening', () => socket.close(() => resolve(false)));
      socket.once('error', () => resolve(true));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nginx did not listen on ${port}: ${log()}`);
}

/** Starts nginx in front of `upstreamPort`, or says why it cannot (no root, no apt, no mirror). */
export async function startNginxRelay(upstreamPort: number): Promise<NginxRelay> {
  const tools = await unpackDebianPackages(['nginx', 'nginx-common']);
  if (!tools.ok) return { skipped: tools.reason };
  const prefix = mkdtempSync(join(tmpdir(), 'hostadm-bench-nginx-'));
  const port = await freePort();
  writeFileSync(join(prefix, 'nginx.conf'), config(prefix, port, upstreamPort));
  let stderr = '';
  const child = spawn(join(tools.root, 'usr/sbin/nginx'), ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', join(prefix, 'nginx.conf')], {
    env: { ...process.env, LD_LIBRARY_PATH: tools.env.LD_LIBRARY_PATH },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  try {
    await waitForPort(port, child, () => stderr);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(prefix, { recursive: true, force: true });
    return { skipped: `nginx could not start: ${(error as Error).message}` };
  }
  // The worker does the relaying (the master only supervises): its CPU is what the bench reads.
  const worker = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0]);
  return {
    url: `ws://127.0.0.1:${port}`,
    pid: Number.isInteger(worker) && worker > 0 ? worker : child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
