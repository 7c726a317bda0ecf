/**
 * The client's half of bst1 sign-in tickets (bridge-ticket.ts): the proof is HMAC-SHA256 with the
 * ticket's secret over the label and the bridge's test string, whether or not its key was imported
 * ahead (primeBridgeTicketProof, which the CLI does while the bridge answers the upgrade).
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { describeOnEachEngine } from './engines.test-support.ts';
import { BST1_LABELS, bridgeTicketProof, primeBridgeTicketProof, type BridgeSignInTicket } from './bridge-ticket.ts';

const testString = 'Ab3dEfGh1jKlMn0pQrStUvWxYz012345';

function ticketWith(secret: string): BridgeSignInTicket {
  return { ticket: 'bst1.payload.tag', secret, md5Key: 'x'.repeat(24), bridge: 'ws://127.0.0.1:1/relay', expiresAt: Date.now() + 3600_000 };
}

describeOnEachEngine('bst1 ticket proof', () => {
  test('a primed ticket proves exactly as an unprimed one: HMAC-SHA256(secret, label ‖ test string)', async () => {
    const secret = randomBytes(32);
    const expected = createHmac('sha256', secret)
      .update(BST1_LABELS.signin + testString)
      .digest('base64');
    const primed = ticketWith(secret.toString('base64'));
    primeBridgeTicketProof(primed);
    assert.equal(await bridgeTicketProof(primed, testString), expected);
    assert.equal(await bridgeTicketProof(ticketWith(secret.toString('base64')), testString), expected);
    await assert.rejects(bridgeTicketProof(primed, 'not a test string'), /test string/);
  });

  test('priming a ticket whose secret is not base64 throws nothing; its proof still fails', async () => {
    const broken = ticketWith('***');
    assert.doesNotThrow(() => primeBridgeTicketProof(broken));
    await assert.rejects(bridgeTicketProof(broken, testString));
  });
});

test('a proof is refused for a test string of another shape before any key is used', async () => {
  await assert.rejects(bridgeTicketProof(ticketWith(randomBytes(32).toString('base64')), 'short'), /test string/);
});
