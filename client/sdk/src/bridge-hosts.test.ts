import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseHost, type AnnouncedPeer } from './bridge-hosts.ts';
import { HandshakeError } from '@hostadm/shared/crypto/handshake.ts';
import { ConnectionError } from './errors.ts';

const real: AnnouncedPeer = { id: 'agent-1', nickname: 'web1', hostname: 'web1.example', host_key_fingerprint: 'SHA256:real' };
const rogue: AnnouncedPeer = { id: 'agent-2', nickname: 'web1', hostname: 'web1.example', host_key_fingerprint: 'SHA256:rogue' };
const impostor: AnnouncedPeer = { id: 'agent-3', nickname: 'other', hostname: 'web1', host_key_fingerprint: 'SHA256:impostor' };

test('a pinned host is chosen by its key, whatever order and names the announcements have', () => {
  assert.equal(chooseHost({ name: 'web1' }, [rogue, real], 'SHA256:real'), real);
  assert.equal(chooseHost({ name: 'web1' }, [], 'SHA256:real'), undefined, 'nothing announced yet: wait');
  assert.throws(
    () => chooseHost({ name: 'web1' }, [rogue], 'SHA256:real'),
    (e: unknown) =>
      e instanceof HandshakeError &&
      e.reason === 'host-key-mismatch' &&
      e.fingerprints?.pinned === 'SHA256:real' &&
      e.fingerprints.presented === 'SHA256:rogue',
    'only another key answers to the name: refused loudly, never taken, never a silent timeout',
  );
});

test('without a pin, a name that matches several hosts is refused, listing them by key', () => {
  assert.throws(
    () => chooseHost({ name: 'web1' }, [real, rogue]),
    (e: unknown) => e instanceof ConnectionError && /2 hosts answer to web1: .*SHA256:real.*SHA256:rogue/.test((e as Error).message),
  );
  assert.equal(chooseHost({ name: 'web1' }, [real]), real);
});

test('a name matches the bound nickname only, never a self-reported hostname', () => {
  assert.equal(chooseHost({ name: 'web1' }, [impostor]), undefined);
  assert.equal(chooseHost({ hostname: 'web1' }, [impostor]), impostor);
});
