/**
 * Every primitive of primitives.ts on both engines (node:crypto and WebCrypto) against published vectors
 * (FIPS 180-2, RFC 4231, RFC 5869, RFC 7748, RFC 8032) or node:crypto's own answer: the same bytes from
 * each engine, the checks refusing the same things, and a key of one engine refused by the other.
 */
import assert from 'node:assert/strict';
import { constants, createPrivateKey, generateKeyPairSync, privateDecrypt, sign } from 'node:crypto';
import { test } from 'node:test';
import { engineLabel, ENGINES, selectEngine } from './engines.test-support.ts';
import { pkcs8DerFromPem, spkiDerFromPem } from './keys.ts';
import { primitives, type EngineName } from './primitives.ts';
import { fromHex, randomBytes, toHex, utf8Encode } from './subtle.ts';
import { x25519 } from './transcript.ts';

const rsa = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

const HKDF_CASES = [
  {
    name: 'RFC 5869 A.1',
    ikm: '0b'.repeat(22),
    salt: '000102030405060708090a0b0c',
    info: 'f0f1f2f3f4f5f6f7f8f9',
    okm: '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865',
  },
  {
    name: 'RFC 5869 A.3 (no salt, no info)',
    ikm: '0b'.repeat(22),
    salt: '',
    info: '',
    okm: '8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8',
  },
];

const ED25519 = {
  seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  publicRaw: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  emptyMessageSig: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
};
const ED25519_PKCS8 = fromHex(`302e020100300506032b657004220420${ED25519.seed}`);

async function onEngine<T>(engine: EngineName, run: () => Promise<T>): Promise<T> {
  const restore = selectEngine(engine);
  try {
    return await run();
  } finally {
    restore();
  }
}

for (const engine of ENGINES) {
  const on = engineLabel(engine);

  test(`SHA-256 and HMAC-SHA256 (${on})`, () =>
    onEngine(engine, async () => {
      const p = primitives();
      assert.equal(toHex(await p.sha256(utf8Encode('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
      assert.equal(toHex(await p.sha256(new Uint8Array(0))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      // RFC 4231 test case 2.
      const key = await p.importHmacKey(utf8Encode('Jefe'));
      const data = utf8Encode('what do ya want for nothing?');
      const mac = await p.hmacSha256(key, data);
      assert.equal(toHex(mac), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
      assert.equal(await p.verifyHmacSha256(key, mac, data), true);
      const flipped = mac.slice();
      flipped[31]! ^= 1;
      assert.equal(await p.verifyHmacSha256(key, flipped, data), false, 'one bit off');
      assert.equal(await p.verifyHmacSha256(key, mac.subarray(0, 16), data), false, 'a truncated MAC');
      assert.equal(await p.verifyHmacSha256(key, mac, utf8Encode('what do ya want for nothing!')), false, 'another message');
    }));

  test(`HKDF-SHA256, several outputs from one input key (${on})`, () =>
    onEngine(engine, async () => {
      for (const c of HKDF_CASES) {
        const [okm, prefix] = await primitives().hkdfSha256(fromHex(c.ikm), fromHex(c.salt), [
          { info: fromHex(c.info), length: 42 },
          { info: fromHex(c.info), length: 16 },
        ]);
        assert.equal(toHex(okm ?? new Uint8Array(0)), c.okm, c.name);
        assert.equal(toHex(prefix ?? new Uint8Array(0)), c.okm.slice(0, 32), `${c.name}: a shorter output is its prefix`);
      }
    }));

  test(`X25519: RFC 7748 §6.1, fresh keys agree, low-order peer keys refused (${on})`, () =>
    onEngine(engine, async () => {
      const p = primitives();
      const alice = await p.x25519FromPrivateRaw(fromHex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a'));
      assert.equal(toHex(alice.publicRaw), '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a');
      const bobPublic = fromHex('de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
      assert.equal(toHex(await x25519(alice.privateKey, bobPublic)), '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742');
      const [a, b] = [await p.generateX25519(), await p.generateX25519()];
      assert.equal(a.publicRaw.length, 32);
      assert.deepEqual(await x25519(a.privateKey, b.publicRaw), await x25519(b.privateKey, a.publicRaw));
      for (const lowOrder of [new Uint8Array(32), Uint8Array.of(1, ...new Uint8Array(31))]) {
        await assert.rejects(x25519(a.privateKey, lowOrder), RangeError);
      }
    }));

  test(`Ed25519: RFC 8032 §7.1 test 1, generated keys, refusals (${on})`, () =>
    onEngine(engine, async () => {
      const p = primitives();
      assert.equal(toHex(await p.ed25519PublicRawFromPkcs8(ED25519_PKCS8)), ED25519.publicRaw);
      const signer = await p.importEd25519Private(ED25519_PKCS8);
      const sig = await p.ed25519Sign(signer, new Uint8Array(0));
      assert.equal(toHex(sig), ED25519.emptyMessageSig);
      const verifier = await p.importEd25519Public(fromHex(ED25519.publicRaw));
      assert.equal(await p.ed25519Verify(verifier, sig, new Uint8Array(0)), true);
      assert.equal(await p.ed25519Verify(verifier, sig, Uint8Array.of(0)), false, 'another message');
      assert.equal(await p.ed25519Verify(verifier, sig.subarray(0, 63), new Uint8Array(0)).catch(() => false), false, 'a short signature');
      await assert.rejects(p.ed25519Sign(verifier, new Uint8Array(0)), 'a public key does not sign');

      const made = await p.generateEd25519();
      assert.deepEqual(await p.ed25519PublicRawFromPkcs8(made.pkcs8), made.publicRaw);
      const message = utf8Encode('hostadm-hsr1 host');
      const madeSig = await p.ed25519Sign(await p.importEd25519Private(made.pkcs8), message);
      const nodeKey = createPrivateKey({ key: Buffer.from(made.pkcs8), format: 'der', type: 'pkcs8' });
      assert.equal(toHex(madeSig), sign(null, message, nodeKey).toString('hex'), 'what node:crypto signs with the same key');
      assert.equal(await p.ed25519Verify(await p.importEd25519Public(made.publicRaw), madeSig, message), true);
    }));

  test(`RSA: PKCS #1 v1.5 signatures byte for byte, OAEP both ways (${on})`, () =>
    onEngine(engine, async () => {
      const p = primitives();
      const message = utf8Encode('hostadm-hsc1 client');
      const signature = await p.rsaSign(await p.importRsaPrivate(pkcs8DerFromPem(rsa.privateKey), 'sign'), message);
      assert.equal(toHex(signature), sign('sha256', message, rsa.privateKey).toString('hex'));
      const verifier = await p.importRsaPublic(spkiDerFromPem(rsa.publicKey), 'verify');
      assert.equal(await p.rsaVerify(verifier, signature, message), true);
      assert.equal(await p.rsaVerify(verifier, signature, utf8Encode('hostadm-hsc2 client')), false);
      const encrypter = await p.importRsaPublic(spkiDerFromPem(rsa.publicKey), 'encrypt');
      assert.equal(p.rsaModulusBits(encrypter), 2048);
      const sealed = await p.rsaOaepEncrypt(encrypter, message);
      assert.deepEqual(privateDecrypt({ key: rsa.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, sealed), Buffer.from(message));
      const decrypter = await p.importRsaPrivate(pkcs8DerFromPem(rsa.privateKey), 'decrypt');
      assert.deepEqual(await p.rsaOaepDecrypt(decrypter, sealed), message);
      await assert.rejects(p.rsaOaepDecrypt(decrypter, sealed.subarray(1)), 'a truncated block');
    }));

  test(`random bytes differ call to call (${on})`, () =>
    onEngine(engine, async () => {
      const [a, b] = [randomBytes(70_000), randomBytes(70_000)];
      assert.equal(a.length, 70_000);
      assert.notDeepEqual(a.subarray(0, 32), b.subarray(0, 32));
      assert.notDeepEqual(a.subarray(-32), new Uint8Array(32), 'filled past 65536 bytes');
    }));
}

test('a key made by one engine is refused by the other, whichever way (a process never mixes them)', async () => {
  const [nodeKey, webKey] = [
    await onEngine('node', () => primitives().importHmacKey(utf8Encode('Jefe'))),
    await onEngine('webcrypto', () => primitives().importHmacKey(utf8Encode('Jefe'))),
  ];
  await onEngine('webcrypto', () => assert.rejects(primitives().hmacSha256(nodeKey, new Uint8Array(1)), /node key was handed to the WebCrypto engine/));
  await onEngine('node', () => assert.rejects(primitives().hmacSha256(webKey, new Uint8Array(1)), /webcrypto key was handed to the node:crypto engine/));
});

test('the engines exchange raw bytes freely: X25519 publics and OAEP ciphertext made by one are used by the other', async () => {
  const [n, w] = [await onEngine('node', () => primitives().generateX25519()), await onEngine('webcrypto', () => primitives().generateX25519())];
  const fromNode = await onEngine('node', () => x25519(n.privateKey, w.publicRaw));
  const fromWeb = await onEngine('webcrypto', () => x25519(w.privateKey, n.publicRaw));
  assert.deepEqual(fromNode, fromWeb);
  const sealed = await onEngine('webcrypto', async () =>
    primitives().rsaOaepEncrypt(await primitives().importRsaPublic(spkiDerFromPem(rsa.publicKey), 'encrypt'), fromWeb),
  );
  const opened = await onEngine('node', async () =>
    primitives().rsaOaepDecrypt(await primitives().importRsaPrivate(pkcs8DerFromPem(rsa.privateKey), 'decrypt'), sealed),
  );
  assert.deepEqual(opened, fromWeb);
});
