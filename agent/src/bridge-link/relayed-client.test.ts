import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SEALED_PLAINTEXT_BYTES } from '@hostadm/shared/crypto/index.ts';
import { sealableText } from './relayed-client.ts';

test('a reply that fits the channel is sent as it is', () => {
  const reply = { id: '7', name: 'response', namespace: 'rpc', args: { note: 'é'.repeat(1000) } };
  assert.deepEqual(JSON.parse(sealableText(reply)), reply);
});

test('a reply larger than the channel carries becomes a 413 under the same id', () => {
  // Multi-byte text: its UTF-8 is over the limit although its length in UTF-16 units is not.
  const reply = { id: '8', name: 'response', namespace: 'rpc', args: { note: 'é'.repeat(Math.ceil(MAX_SEALED_PLAINTEXT_BYTES / 2)) } };
  const sent = JSON.parse(sealableText(reply)) as { id: string; name: string; args: { code: number; message: string } };
  assert.equal(sent.id, '8');
  assert.equal(sent.name, 'error');
  assert.equal(sent.args.code, 413);
  assert.match(sent.args.message, /larger than the bridge channel carries/);
});
