/**
 * The hsc1 handshake (docs/bridge-protocol.md §3.1–4 and 7) between a client and an agent in one
 * process, with real RSA-2048 and Ed25519 keys, and with the tests playing a hostile bridge: it can
 * read and rewrite the plain C1/A1, knows every public key, and may answer in the agent's place.
 */
import assert from 'node:assert/strict';
import { constants, createHash, createPrivateKey, createPublicKey, generateKeyPairSync, privateDecrypt, publicEncrypt } from 'node:crypto';
import { test } from 'node:test';
import { ChannelError } from './channel.ts';
import { describeOnEachEngine } from './engines.test-support.ts';
import {
  answerClientHandshake,
  generateHostKey,
  HandshakeError,
  hostKeyFromPem,
  PIECE_BYTES,
  startClientHandshake,
  type A1Args,
  type HandshakeErrorReason,
} from './handshake.ts';
import { md5Key } from './keys.ts';
import { randomBytes, toBase64 } from './subtle.ts';

const rsaPair = (bits = 2048) =>
  generateKeyPairSync('rsa', { modulusLength: bits, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
const client = rsaPair();
const stranger = rsaPair();
const host = await generateHostKey();
const mitmHost = await generateHostKey();

const clientOpts = { clientKeyPem: client.privateKey, clientSpkiPem: client.publicKey };
const agentOpts = (c1Args: unknown, hostKeyPem = host.privatePkcs8Pem) => ({ c1Args, clientSpkiPem: client.publicKey, hostKeyPem });

async function rejectsWith(p: Promise<unknown>, reason: HandshakeErrorReason): Promise<HandshakeError> {
  let caught: unknown;
  await assert.rejects(p, (e: unknown) => {
    caught = e;
    return e instanceof HandshakeError && e.reason === reason;
  });
  return caught as HandshakeError;
}

// What a bridge holding the client's *private* key could see; the tests use it to build precise
// forgeries (a real bridge cannot even read A1, which only makes these attacks harder).
const oaep = { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' };
function readA1(a1: A1Args): { testString: string; body: Record<string, string> } {
  const dec = (b64: string) => privateDecrypt({ key: client.privateKey, ...oaep }, Buffer.from(b64, 'base64'));
  return { testString: dec(a1.test_string).toString(), body: JSON.parse(Buffer.concat(a1.new_ssl_key.map(dec)).toString()) as Record<string, string> };
}
function writeA1(testString: string, body: unknown, padding: 'oaep' | 'pkcs1' = 'oaep'): A1Args {
  const enc = (b: Buffer) =>
    publicEncrypt(padding === 'oaep' ? { key: client.publicKey, ...oaep } : { key: client.publicKey, padding: constants.RSA_PKCS1_PADDING }, b).toString(
      'base64',
    );
  const json = Buffer.from(JSON.stringify(body));
  const pieces: string[] = [];
  for (let i = 0; i < json.length; i += PIECE_BYTES) pieces.push(enc(json.subarray(i, i + PIECE_BYTES)));
  return { test_string: enc(Buffer.from(testString)), new_ssl_key: pieces };
}

describeOnEachEngine('hsc1 handshake', (engine) => {
  test('client and agent agree: C2 verifies, sealed envelopes flow both ways', async () => {
    const hs = await startClientHandshake(clientOpts);
    assert.equal(hs.c1Args.channel, 'hsc1');
    assert.equal(
      hs.c1Args.md5_key,
      createHash('md5')
        .update(createPublicKey(client.publicKey).export({ type: 'spki', format: 'pem' }))
        .digest('base64'),
    );
    const agent = await answerClientHandshake(agentOpts(hs.c1Args));
    assert.equal(agent.a1Args.new_ssl_key.length, 2);
    const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
    assert.equal(done.hostKey, host.publicRaw);
    assert.equal(done.hostKeyFingerprint, host.fingerprint);
    assert.match(done.testString, /^[A-Za-z0-9]{32}$/);

    // C2 travels sealed, as the first client→agent frame.
    const c2 = await done.channel.seal(JSON.stringify({ id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: done.c2Args }));
    const c2Env = JSON.parse(await agent.channel.open(c2)) as { args: unknown };
    assert.equal(await agent.verifyC2(c2Env.args), true);
    const reply = JSON.stringify({ id: 'c2', name: 'response', namespace: 'rpc', args: ['token', 300] });
    assert.equal(await done.channel.open(await agent.channel.seal(reply)), reply);
    for (let i = 0; i < 3; i++) {
      const req = JSON.stringify({ id: `r${i}`, name: 'identify', namespace: 'rpc', args: {} });
      assert.equal(await agent.channel.open(await done.channel.seal(req)), req);
    }
  });

  test('a loaded host key (hostKeyFromPem, also with hostPublicRaw) answers the same way', async () => {
    const loaded = await hostKeyFromPem(host.privatePkcs8Pem);
    assert.equal(loaded.publicRaw, host.publicRaw);
    assert.equal(loaded.fingerprint, host.fingerprint);
    assert.equal(loaded.privateKey.engine, engine, 'a key of the engine in use');
    const raw = Buffer.from(host.publicRaw, 'base64');
    assert.equal(host.fingerprint, `SHA256:${createHash('sha256').update(raw).digest('base64url')}`);
    await assert.rejects(hostKeyFromPem(host.privatePkcs8Pem, mitmHost.publicRaw), /does not belong/);
    for (const variant of [{ hostKey: loaded }, { hostKeyPem: host.privatePkcs8Pem, hostPublicRaw: host.publicRaw }]) {
      const hs = await startClientHandshake(clientOpts);
      const agent = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: client.publicKey, ...variant });
      const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
      assert.equal(await agent.verifyC2(done.c2Args), true);
    }
  });

  test('a client holding its key as WebCrypto keys (as a browser does) completes the handshake', async () => {
    const der = createPrivateKey(client.privateKey).export({ type: 'pkcs8', format: 'der' });
    const clientKeys = {
      decrypt: await crypto.subtle.importKey('pkcs8', der, { name: 'RSA-OAEP', hash: 'SHA-256' }, false, ['decrypt']),
      sign: await crypto.subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']),
    };
    const hs = await startClientHandshake({ clientKeys, clientSpkiPem: client.publicKey });
    const agent = await answerClientHandshake(agentOpts(hs.c1Args));
    const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
    assert.equal(await agent.verifyC2(done.c2Args), true);
    // Each key does the one thing it was made for: swapped, the handshake never completes.
    await assert.rejects(async () => {
      const swapped = await startClientHandshake({ clientKeys: { decrypt: clientKeys.sign, sign: clientKeys.decrypt }, clientSpkiPem: client.publicKey });
      await swapped.finish((await answerClientHandshake(agentOpts(swapped.c1Args))).a1Args);
    });
  });

  test('finish is single use', async () => {
    const hs = await startClientHandshake(clientOpts);
    const agent = await answerClientHandshake(agentOpts(hs.c1Args));
    await hs.finish(agent.a1Args);
    await rejectsWith(hs.finish(agent.a1Args), 'bad-reply');
  });

  test('a client key that is not RSA is refused on both sides (unsupported-key)', async () => {
    const ed = generateKeyPairSync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    await rejectsWith(startClientHandshake({ clientKeyPem: ed.privateKey, clientSpkiPem: ed.publicKey }), 'unsupported-key');
    const hs = await startClientHandshake(clientOpts);
    await rejectsWith(
      answerClientHandshake({ ...agentOpts({ ...hs.c1Args, md5_key: await md5Key(ed.publicKey) }), clientSpkiPem: ed.publicKey }),
      'unsupported-key',
    );
    const weak = rsaPair(1024);
    await rejectsWith(
      answerClientHandshake({ ...agentOpts({ ...hs.c1Args, md5_key: await md5Key(weak.publicKey) }), clientSpkiPem: weak.publicKey }),
      'unsupported-key',
    );
  });
});

describeOnEachEngine('the bridge as attacker: C1', () => {
  test('a C1 without channel:"hsc1" (the original unprotected form) is refused: downgrade', async () => {
    const hs = await startClientHandshake(clientOpts);
    await rejectsWith(answerClientHandshake(agentOpts({ action: 'auth_ssl', md5_key: hs.c1Args.md5_key })), 'downgrade');
    const { channel: _dropped, ...withoutChannel } = hs.c1Args;
    await rejectsWith(answerClientHandshake(agentOpts(withoutChannel)), 'downgrade');
    await rejectsWith(answerClientHandshake(agentOpts({ ...hs.c1Args, channel: 'hsc0' })), 'downgrade');
  });

  test('malformed C1 fields are refused: bad-request', async () => {
    const hs = await startClientHandshake(clientOpts);
    const c1 = hs.c1Args;
    const cases: unknown[] = [
      '',
      null,
      [c1],
      { ...c1, md5_key: await md5Key(stranger.publicKey) },
      { ...c1, client_eph: toBase64(randomBytes(31)) },
      { ...c1, client_eph: toBase64(randomBytes(33)) },
      { ...c1, client_nonce: toBase64(randomBytes(16)) },
      { ...c1, client_nonce: 'not base64!' },
      { ...c1, client_eph: undefined },
      // Low-order X25519 points give a secret the bridge would know.
      { ...c1, client_eph: toBase64(new Uint8Array(32)) },
      { ...c1, client_eph: toBase64(Uint8Array.of(1, ...new Uint8Array(31))) },
    ];
    for (const c of cases) await rejectsWith(answerClientHandshake(agentOpts(c)), 'bad-request');
  });
});

describeOnEachEngine('the bridge as attacker: A1', () => {
  test('a bridge answering with its own X25519 and host key: host-key-mismatch naming both fingerprints', async () => {
    const hs = await startClientHandshake(clientOpts);
    // The bridge knows the client's public key (it is registered there), so it can build a whole A1.
    const mitm = await answerClientHandshake(agentOpts(hs.c1Args, mitmHost.privatePkcs8Pem));
    const err = await rejectsWith(hs.finish(mitm.a1Args, { pinnedHostKey: host.publicRaw }), 'host-key-mismatch');
    assert.ok(err.message.includes(host.fingerprint) && err.message.includes(mitmHost.fingerprint), err.message);
    assert.deepEqual(err.fingerprints, { pinned: host.fingerprint, presented: mitmHost.fingerprint });
  });

  test('without a pin (first use) the substituted key is what the client is shown, and C2 is useless to the real agent', async () => {
    const hs = await startClientHandshake(clientOpts);
    const real = await answerClientHandshake(agentOpts(hs.c1Args));
    const mitm = await answerClientHandshake(agentOpts(hs.c1Args, mitmHost.privatePkcs8Pem));
    const done = await hs.finish(mitm.a1Args);
    assert.equal(done.hostKeyFingerprint, mitmHost.fingerprint);
    assert.notEqual(done.hostKeyFingerprint, host.fingerprint);
    assert.equal(await real.verifyC2(done.c2Args), false);
  });

  test('re-using the real host_sig with a substituted agent_eph, nonce or host key: bad-signature', async () => {
    for (const field of ['agent_eph', 'agent_nonce', 'host_key'] as const) {
      const hs = await startClientHandshake(clientOpts);
      const real = await answerClientHandshake(agentOpts(hs.c1Args));
      const { testString, body } = readA1(real.a1Args);
      const replacement = field === 'host_key' ? mitmHost.publicRaw : toBase64(randomBytes(32));
      await rejectsWith(hs.finish(writeA1(testString, { ...body, [field]: replacement }), { pinnedHostKey: host.publicRaw }), 'bad-signature');
    }
  });

  test('an A1 from another handshake (replayed) fails: bad-signature', async () => {
    const old = await startClientHandshake(clientOpts);
    const oldA1 = (await answerClientHandshake(agentOpts(old.c1Args))).a1Args;
    const hs = await startClientHandshake(clientOpts);
    await rejectsWith(hs.finish(oldA1, { pinnedHostKey: host.publicRaw }), 'bad-signature');
  });

  test('pieces that decrypt to something other than hsc1: downgrade', async () => {
    const hs = await startClientHandshake(clientOpts);
    const real = await answerClientHandshake(agentOpts(hs.c1Args));
    const { testString, body } = readA1(real.a1Args);
    for (const fake of [{ ...body, v: 'hsc0' }, { key: toBase64(randomBytes(32)), iv: toBase64(randomBytes(16)) }, ['not', 'an', 'object']]) {
      const again = await startClientHandshake(clientOpts);
      await rejectsWith(again.finish(writeA1(testString, fake)), 'downgrade');
    }
  });

  test('plaintext, garbled, truncated or PKCS#1-v1.5 pieces: bad-reply', async () => {
    const hs0 = await startClientHandshake(clientOpts);
    const real = await answerClientHandshake(agentOpts(hs0.c1Args));
    const { testString, body } = readA1(real.a1Args);
    const plainPieces: A1Args = { test_string: real.a1Args.test_string, new_ssl_key: [Buffer.from(JSON.stringify(body)).toString('base64')] };
    const garbled: A1Args = { ...real.a1Args, new_ssl_key: real.a1Args.new_ssl_key.map(() => toBase64(randomBytes(256))) };
    const truncated: A1Args = { ...real.a1Args, new_ssl_key: real.a1Args.new_ssl_key.slice(0, 1) };
    const cases: unknown[] = [
      plainPieces,
      garbled,
      truncated,
      writeA1(testString, body, 'pkcs1'),
      { ...real.a1Args, test_string: Buffer.from(testString).toString('base64') },
      writeA1('short', body),
      { test_string: real.a1Args.test_string },
      { test_string: real.a1Args.test_string, new_ssl_key: [] },
      { test_string: real.a1Args.test_string, new_ssl_key: 'one string' },
      writeA1(testString, { ...body, host_sig: toBase64(randomBytes(63)) }),
      writeA1(testString, { ...body, agent_eph: 'AAAA' }),
      'plain text',
      null,
    ];
    for (const c of cases) {
      const hs = await startClientHandshake(clientOpts);
      await rejectsWith(hs.finish(c), 'bad-reply');
    }
  });

  test('a test_string replaced by the bridge: the client finishes, but the agent refuses C2', async () => {
    const hs = await startClientHandshake(clientOpts);
    const real = await answerClientHandshake(agentOpts(hs.c1Args));
    const { body } = readA1(real.a1Args);
    const done = await hs.finish(writeA1('A'.repeat(32), body), { pinnedHostKey: host.publicRaw });
    assert.equal(await real.verifyC2(done.c2Args), false);
  });
});

describeOnEachEngine('the bridge as attacker: C2 and after', () => {
  test('a C2 signed by another RSA key, garbled, or from another handshake: verifyC2 is false', async () => {
    const hs = await startClientHandshake(clientOpts);
    const agent = await answerClientHandshake(agentOpts(hs.c1Args));
    const done = await hs.finish(agent.a1Args);
    const other = await startClientHandshake({ clientKeyPem: stranger.privateKey, clientSpkiPem: stranger.publicKey });
    const otherAgent = await answerClientHandshake({ ...agentOpts(other.c1Args), clientSpkiPem: stranger.publicKey });
    const otherDone = await other.finish(otherAgent.a1Args);
    assert.equal(await agent.verifyC2(otherDone.c2Args), false);
    const hs2 = await startClientHandshake(clientOpts);
    const agent2 = await answerClientHandshake(agentOpts(hs2.c1Args));
    assert.equal(await agent2.verifyC2(done.c2Args), false);
    for (const bad of [{}, { signature: '' }, { signature: 'zz' }, { signature: toBase64(randomBytes(256)) }, null, 'x'])
      assert.equal(await agent.verifyC2(bad), false);
    assert.equal(await agent.verifyC2(done.c2Args), true);
  });

  test('an altered sealed reply after the handshake kills the client channel: tampered', async () => {
    const hs = await startClientHandshake(clientOpts);
    const agent = await answerClientHandshake(agentOpts(hs.c1Args));
    const done = await hs.finish(agent.a1Args);
    const frame = await agent.channel.seal(JSON.stringify({ id: '1', name: 'response', namespace: 'rpc', args: ['token', 300] }));
    const bytes = Buffer.from(frame.slice(5), 'base64');
    bytes[20] = (bytes[20] ?? 0) ^ 0x80;
    await assert.rejects(done.channel.open(`hsc1.${bytes.toString('base64')}`), (e: unknown) => e instanceof ChannelError && e.reason === 'tampered');
  });
});
