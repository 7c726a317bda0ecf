/**
 * A `--require` preload for counting a process's round trips (cold-call-timeline.ts): every client
 * socket (diagnostics_channel 'net.client.socket') gets its 'data' events recorded with the time since
 * the process started, each preceded by the bytes written since the one before (if any). At exit the
 * timeline is appended as one JSON line to the file HOSTADM_TIMELINE names. Observes only.
 */
const diagnostics = require('node:diagnostics_channel');
const { appendFileSync } = require('node:fs');

const out = process.env.HOSTADM_TIMELINE;
const events = [];
const now = () => Math.round(performance.now() * 100) / 100;
let sockets = 0;

diagnostics.subscribe('net.client.socket', ({ socket }) => {
  const id = ++sockets;
  events.push([now(), id, 'connect', 0]);
  // What was written since the last 'data' shows as a rise in bytesWritten (http and ws write through
  // internals that a patched socket.write does not see).
  let written = 0;
  socket.on('data', (chunk) => {
    const total = socket.bytesWritten;
    if (total > written) events.push([now(), id, 'write', total - written]);
    written = total;
    events.push([now(), id, 'data', chunk.length]);
  });
});

process.on('exit', () => {
  if (out && events.length > 0) appendFileSync(out, `${JSON.stringify({ pid: process.pid, argv: process.argv.slice(2), events })}\n`);
});
