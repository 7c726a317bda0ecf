import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { bridgeTicketFrom, bridgeTicketProof } from '@hostadm/shared/crypto/bridge-ticket.ts';
import type { KeyRecord } from './ports.ts';
import { SignInTickets } from './signin-tickets.ts';

const key: KeyRecord = {
  id: 'kabcdefghijk',
  md5Key: 'bWQ1IG9mIHRoZSBrZXkgU1BLSQ==',
  spkiPem: '',
  algorithm: 'rsa',
  kind: 'client',
  nickname: '',
  createdBy: '',
  createdAt: 0,
  lastSeenAt: null,
  revokedAt: null,
};
const testString = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';
const nodeHmac = (k: Uint8Array, data: Uint8Array) => createHmac('sha256', k).update(data).digest();

test("WebCrypto's HMAC and node:crypto's make the same tickets: either bridge runtime takes the other's", async () => {
  const secret = randomBytes(32);
  const web = new SignInTickets(secret);
  const node = new SignInTickets(secret, nodeHmac);
  for (const [issuer, checker] of [
    [web, node],
    [node, web],
  ] as const) {
    const grant = await issuer.issue(key, 1_000_000, 3600);
    assert.ok(grant);
    const kept = bridgeTicketFrom(['token', 300, grant], { md5Key: key.md5Key, bridge: 'ws://b/relay', now: 0 });
    assert.ok(kept);
    const claims = await checker.open(grant.ticket);
    assert.deepEqual(claims && { ...claims, secretKey: null }, {
      keyId: key.id,
      md5Key: key.md5Key,
      kind: 'client',
      expiresAt: 1_000_000 + 3600_000,
      secretKey: null,
    });
    assert.equal(await checker.proves(claims!, testString, await bridgeTicketProof(kept, testString)), true);
    assert.equal(await checker.proves(claims!, 'Zq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g', await bridgeTicketProof(kept, testString)), false, 'another test string');
  }
});

test('a ticket lasts at most 8 hours whatever is asked; a bridge without a usable join secret makes and takes none', async () => {
  const tickets = new SignInTickets(randomBytes(32), nodeHmac);
  assert.equal((await tickets.issue(key, 0, 24 * 3600))!.expires_in, 8 * 3600);
  assert.equal(await tickets.issue(key, 0, 0), null, 'lifetime 0: none');
  const weak = new SignInTickets(new Uint8Array(8));
  assert.equal(await weak.issue(key, 0, 3600), null);
  const grant = (await tickets.issue(key, 0, 3600))!;
  assert.equal(await weak.open(grant.ticket), null);
  assert.equal(await tickets.open(grant.ticket.replace('bst1.', 'bst2.')), null);
  assert.equal(await tickets.open(`${grant.ticket}.x`), null);
});

test('the client refuses to MAC a test string of another shape', async () => {
  const grant = (await new SignInTickets(randomBytes(32)).issue(key, 0, 3600))!;
  const kept = bridgeTicketFrom(['t', 300, grant], { md5Key: key.md5Key, bridge: 'ws://b/relay', now: 0 })!;
  await assert.rejects(bridgeTicketProof(kept, `hostadm-signin bridge v1\n${testString}`), /not 32 letters and digits/);
  assert.equal(
    bridgeTicketFrom(['t', 300, { ...grant, secret: 'AAAA' }], { md5Key: key.md5Key, bridge: '', now: 0 }),
    undefined,
    'a secret of the wrong size is no ticket',
  );
  assert.equal(bridgeTicketFrom(['t', 300], { md5Key: key.md5Key, bridge: '', now: 0 }), undefined);
  assert.equal(
    bridgeTicketFrom(['t', 300, { ...grant, expires_in: 30 * 3600 }], { md5Key: key.md5Key, bridge: '', now: 0 })!.expiresAt,
    8 * 3600_000,
    'kept 8 h at most',
  );
});
