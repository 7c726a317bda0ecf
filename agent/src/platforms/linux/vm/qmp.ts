/**
 * A minimal QMP client (QEMU Machine Protocol, JSON lines over the guest's unix socket): one
 * connection per request, the capabilities handshake, one command, asynchronous events skipped.
 * A socket that refuses or is missing means no QEMU is there, which the caller reads as "not running".
 */
import { connect } from 'node:net';

export class QmpUnavailable extends Error {
  override readonly name = 'QmpUnavailable';
}

interface QmpReply {
  return?: unknown;
  error?: { class: string; desc: string };
  event?: string;
  QMP?: unknown;
}

/** Runs `execute` on the QEMU behind `socketPath` and returns its `return` value. */
export async function qmp(socketPath: string, execute: string, args?: Record<string, unknown>, timeoutMs = 5000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let buffer = '';
    let stage: 'greeting' | 'capabilities' | 'command' = 'greeting';
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`QMP ${execute}: no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') fail(new QmpUnavailable(`no QEMU listens on ${socketPath}`));
      else fail(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      // `quit` closes the connection, sometimes before its reply arrives.
      if (stage === 'command' && execute === 'quit') resolve({});
      else reject(new QmpUnavailable(`QEMU closed ${socketPath}`));
    });
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf('\n');
        if (line === '') continue;
        let reply: QmpReply;
        try {
          reply = JSON.parse(line) as QmpReply;
        } catch {
          return fail(new Error(`QMP: not JSON: ${line.slice(0, 200)}`));
        }
        if (reply.event) continue;
        if (stage === 'greeting' && reply.QMP) {
          stage = 'capabilities';
          socket.write(`${JSON.stringify({ execute: 'qmp_capabilities' })}\n`);
        } else if (stage === 'capabilities') {
          if (reply.error) return fail(new Error(`QMP qmp_capabilities: ${reply.error.desc}`));
          stage = 'command';
          socket.write(`${JSON.stringify(args ? { execute, arguments: args } : { execute })}\n`);
        } else if (stage === 'command') {
          clearTimeout(timer);
          socket.end();
          if (reply.error) return reject(new Error(`QMP ${execute}: ${reply.error.desc}`));
          stage = 'greeting';
          socket.removeAllListeners('close');
          return resolve(reply.return);
        }
      }
    });
  });
}

/** The guest's run state (`running`, `paused`, `inmigrate`, ...), or null when no QEMU answers. */
export async function qmpStatus(socketPath: string): Promise<string | null> {
  try {
    const status = (await qmp(socketPath, 'query-status')) as { status?: string };
    return status.status ?? 'unknown';
  } catch (err) {
    if (err instanceof QmpUnavailable) return null;
    throw err;
  }
}
