import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Writable } from 'node:stream';
import { Background } from './background.ts';

function recordingLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

test('once runs after the caller returns; close aborts it, waits for it, then runs the closing tasks last-registered first', async () => {
  const { logger } = recordingLogger();
  const background = new Background(logger);
  const order: string[] = [];
  let release = () => {};
  background.once('slow start', async (signal) => {
    order.push('once began');
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    order.push(signal.aborted ? 'once saw the abort' : 'once not aborted');
  });
  background.atClose('first registered', async () => void order.push('first registered'));
  background.atClose('second registered', async () => void order.push('second registered'));
  order.push('caller returned');
  await new Promise((resolve) => setImmediate(resolve));
  const closing = background.close();
  release();
  await closing;
  assert.deepEqual(order, ['caller returned', 'once began', 'once saw the abort', 'second registered', 'first registered']);
});

test('a failing task is logged and the others still run; nothing starts after close', async () => {
  const { logger, lines } = recordingLogger();
  const background = new Background(logger);
  const ran: string[] = [];
  background.once('broken', () => {
    throw new Error('boom');
  });
  background.atClose('broken stop', async () => {
    throw new Error('stop failed');
  });
  background.atClose('good stop', async () => void ran.push('good stop'));
  await new Promise((resolve) => setImmediate(resolve));
  await background.close();
  assert.deepEqual(ran, ['good stop']);
  assert.ok(lines.some((l) => l.includes('"task":"broken"') && l.includes('boom')));
  assert.ok(lines.some((l) => l.includes('"task":"broken stop"') && l.includes('stop failed')));
  background.once('too late', () => void ran.push('too late'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(ran, ['good stop']);
});
