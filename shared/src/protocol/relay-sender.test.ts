/**
 * The sender line of relayed binary frames (relay-sender.ts), as the agent and the SDK read it: a
 * printable id of at most 64 bytes, else no sender; a frame from another sender after the first is
 * read as that sender, not as the one kept; the kept id does not hold the frame it came in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelaySenders } from './relay-sender.ts';

const frame = (line: string, body = 'sealed') => Buffer.from(`${line}\n${body}`, 'latin1');
const read = (s: RelaySenders, f: Uint8Array) => s.senderOf(f, f.indexOf(0x0a));

test('ids are read, kept, and told apart; anything but printable ASCII up to 64 bytes is no sender', () => {
  const senders = new RelaySenders();
  assert.equal(read(senders, frame('client-1')), 'client-1');
  assert.equal(read(senders, frame('client-1', 'other body')), 'client-1');
  assert.equal(read(senders, frame('client-2')), 'client-2', 'another sender of the same length');
  assert.equal(read(senders, frame('client-22')), 'client-22');
  assert.equal(read(senders, frame('client 1')), null, 'a space');
  assert.equal(read(senders, frame('client-\u00e9')), null, 'not ASCII');
  assert.equal(read(senders, frame('')), null, 'empty');
  assert.equal(read(senders, Buffer.from('no newline')), null);
  assert.equal(read(senders, frame('x'.repeat(64))), 'x'.repeat(64));
  assert.equal(read(senders, frame('x'.repeat(65))), null);
  // The kept id is a copy: rewriting the frame it came in changes nothing.
  const f = frame('agent-9');
  assert.equal(read(senders, f), 'agent-9');
  f.write('agent-8', 0, 'latin1');
  assert.equal(read(senders, f), 'agent-8');
  assert.equal(read(senders, frame('agent-9')), 'agent-9');
});
