import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_SIGNATURE_LABELS, ChallengeShapeError, proofMessage, SIGNATURE_LABELS, signedMessage, type SignaturePurpose } from './signed-messages.ts';

const testString = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';
const token = 'a'.repeat(20) + 'B'.repeat(20);

test('no label is a prefix of another, so a message signed for one purpose never reads as another', () => {
  assert.equal(new Set(ALL_SIGNATURE_LABELS).size, ALL_SIGNATURE_LABELS.length);
  for (const a of ALL_SIGNATURE_LABELS) {
    for (const b of ALL_SIGNATURE_LABELS) if (a !== b) assert.ok(!b.startsWith(a), `${JSON.stringify(a)} is a prefix of ${JSON.stringify(b)}`);
  }
});

test('signedMessage is label ‖ challenge for a challenge of the issued shape', () => {
  assert.equal(signedMessage('agent-signin', testString), `hostadm-signin agent v1\n${testString}`);
  assert.equal(signedMessage('bridge-signin', testString), `hostadm-signin bridge v1\n${testString}`);
  assert.equal(signedMessage('register-proof', token), `hostadm-register-proof v1\n${token}`);
});

test('signedMessage refuses a challenge a peer shaped to spell something else', () => {
  const bad: [SignaturePurpose, string][] = [
    ['bridge-signin', ''],
    ['bridge-signin', testString.slice(1)],
    ['bridge-signin', `${testString}x`],
    ['bridge-signin', `hostadm-hsc1 host${'x'.repeat(15)}`],
    ['agent-signin', `${testString.slice(0, 31)}\n`],
    ['agent-signin', `${testString.slice(0, 31)}\u00e9`],
    ['register-proof', testString],
    ['register-proof', `${token.slice(1)}-`],
  ];
  for (const [purpose, challenge] of bad)
    assert.throws(() => signedMessage(purpose, challenge), ChallengeShapeError, `${purpose} ${JSON.stringify(challenge)}`);
});

test('the original encrypted_string form covers the bare challenge; the signature form the labelled one', () => {
  assert.equal(proofMessage('agent-signin', testString, 'original'), testString);
  assert.equal(proofMessage('agent-signin', testString, 'signature'), SIGNATURE_LABELS['agent-signin'] + testString);
});
