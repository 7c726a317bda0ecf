/**
 * Channel version negotiation (docs/bridge-protocol.md §3.9) between a client and an agent in one
 * process, with the tests playing the bridge that carries the plain C1 and A1: it may strip or add
 * the hsc2 offer. Older peers (an agent that answers hsc1 only, a client that offers nothing) keep hsc1.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { answerClientHandshake, generateHostKey, HandshakeError, startClientHandshake, type AgentHandshake, type ClientHandshakeResult } from './handshake.ts';
import type { SecureChannel } from './channel.ts';
import { BINARY_CHANNEL_VERSIONS, type ChannelVersion } from './transcript.ts';

const client = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const host = await generateHostKey();

async function handshake(
  offer: boolean | readonly ChannelVersion[],
  options: { acceptHsc2?: boolean; versions?: readonly ChannelVersion[]; rewriteC1?: (c1: Record<string, unknown>) => void } = {},
): Promise<{ done: ClientHandshakeResult; agent: AgentHandshake }> {
  const offered = typeof offer === 'boolean' ? { offerHsc2: offer } : { channels: offer };
  const hs = await startClientHandshake({ clientKeyPem: client.privateKey, clientSpkiPem: client.publicKey, ...offered });
  const c1: Record<string, unknown> = JSON.parse(JSON.stringify(hs.c1Args));
  options.rewriteC1?.(c1);
  const agent = await answerClientHandshake({
    c1Args: c1,
    clientSpkiPem: client.publicKey,
    hostKeyPem: host.privatePkcs8Pem,
    hostPublicRaw: host.publicRaw,
    ...(options.acceptHsc2 === undefined ? {} : { acceptHsc2: options.acceptHsc2 }),
    ...(options.versions === undefined ? {} : { versions: options.versions }),
  });
  const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
  return { done, agent };
}

async function works(a: SecureChannel, b: SecureChannel): Promise<void> {
  const text = '{"id":"1","name":"query","namespace":"rpc","args":{}}';
  if (a.version === 'hsc3') assert.deepEqual(await b.openRecord(await a.sealRecord(new Uint8Array([0, 0, 0, text.length, ...Buffer.from(text)]))), [text]);
  else if (a.version === 'hsc2') assert.equal(await b.openBinary(await a.sealBinary(text)), text);
  else assert.equal(await b.open(await a.seal(text)), text);
}

test('a client that offers hsc2 gets it from an agent that speaks it; C1 still asks for hsc1, for older agents', async () => {
  const hs = await startClientHandshake({ clientKeyPem: client.privateKey, clientSpkiPem: client.publicKey, offerHsc2: true });
  assert.equal(hs.c1Args.channel, 'hsc1');
  assert.deepEqual(hs.c1Args.channels, ['hsc2']);
  const { done, agent } = await handshake(true);
  assert.equal(agent.version, 'hsc2');
  assert.equal(done.channel.version, 'hsc2');
  assert.deepEqual(done.c2Args.offered, ['hsc2']);
  assert.equal(await agent.verifyC2(done.c2Args), true);
  await works(done.channel, agent.channel);
});

test('older peers keep hsc1: an agent that knows only hsc1, and a client that offers nothing', async () => {
  const oldAgent = await handshake(true, { acceptHsc2: false });
  assert.equal(oldAgent.done.channel.version, 'hsc1');
  assert.equal(await oldAgent.agent.verifyC2(oldAgent.done.c2Args), true);
  await works(oldAgent.done.channel, oldAgent.agent.channel);
  const oldClient = await handshake(false);
  assert.equal(oldClient.agent.version, 'hsc1');
  assert.equal(oldClient.done.c2Args.offered, undefined);
  assert.equal(await oldClient.agent.verifyC2(oldClient.done.c2Args), true);
  await works(oldClient.done.channel, oldClient.agent.channel);
});

test('a bridge that strips the hsc2 offer from C1 is caught at C2: the agent refuses it as a downgrade', async () => {
  const { done, agent } = await handshake(true, { rewriteC1: (c1) => delete c1.channels });
  assert.equal(done.channel.version, 'hsc1', 'the client cannot tell from A1 alone');
  await assert.rejects(agent.verifyC2(done.c2Args), (e: unknown) => e instanceof HandshakeError && e.reason === 'downgrade');
  // Nor can the bridge remove the repeated offer: C2 is sealed, and a changed frame fails to open.
  const frame = await done.channel.seal(JSON.stringify({ signature: done.c2Args.signature }));
  const bytes = Buffer.from(frame.slice(5), 'base64');
  bytes[bytes.length - 1]! ^= 1;
  await assert.rejects(agent.channel.open(`hsc1.${bytes.toString('base64')}`));
});

test('an offer added to an older client’s C1 is refused by the client; a malformed offer by the agent', async () => {
  await assert.rejects(
    handshake(false, { rewriteC1: (c1) => (c1.channels = ['hsc2']) }),
    (e: unknown) => e instanceof HandshakeError && e.reason === 'downgrade',
  );
  for (const bad of ['hsc2', [1], Array.from({ length: 9 }, () => 'hsc2')]) {
    await assert.rejects(
      handshake(true, { rewriteC1: (c1) => (c1.channels = bad) }),
      (e: unknown) => e instanceof HandshakeError && e.reason === 'bad-request',
    );
  }
  // Unknown version names are ignored (a newer client may offer more): hsc1.
  assert.equal((await handshake(false, { rewriteC1: (c1) => (c1.channels = ['hsc9']) })).done.channel.version, 'hsc1');
});

test('a client that offers hsc3 and hsc2 gets hsc3 from a current agent and hsc2 from an agent before hsc3', async () => {
  const current = await handshake(BINARY_CHANNEL_VERSIONS);
  assert.deepEqual(current.done.c2Args.offered, ['hsc3', 'hsc2']);
  assert.equal(current.agent.version, 'hsc3');
  assert.equal(current.done.channel.version, 'hsc3');
  assert.equal(await current.agent.verifyC2(current.done.c2Args), true);
  await works(current.done.channel, current.agent.channel);
  await works(current.agent.channel, current.done.channel);

  // An hsc2-only agent: what it reads of C1's list is hsc2 alone, in C1 and in C2 alike: no false alarm.
  const older = await handshake(BINARY_CHANNEL_VERSIONS, { versions: ['hsc2'] });
  assert.equal(older.done.channel.version, 'hsc2');
  assert.equal(await older.agent.verifyC2(older.done.c2Args), true);
  await works(older.done.channel, older.agent.channel);

  // A client before hsc3 (it offers hsc2 only) keeps hsc2 with a current agent.
  const oldClient = await handshake(true);
  assert.equal(oldClient.agent.version, 'hsc2');
  assert.equal(await oldClient.agent.verifyC2(oldClient.done.c2Args), true);
});

test('a bridge that strips hsc3 from the offer (leaving hsc2) is caught at C2 as a downgrade', async () => {
  const { done, agent } = await handshake(BINARY_CHANNEL_VERSIONS, { rewriteC1: (c1) => (c1.channels = ['hsc2']) });
  assert.equal(done.channel.version, 'hsc2', 'the client cannot tell from A1 alone');
  await assert.rejects(agent.verifyC2(done.c2Args), (e: unknown) => e instanceof HandshakeError && e.reason === 'downgrade');
  // Nor can it answer hsc3 to a client that did not offer it.
  await assert.rejects(
    handshake(['hsc2'], { rewriteC1: (c1) => (c1.channels = ['hsc3', 'hsc2']) }),
    (e: unknown) => e instanceof HandshakeError && e.reason === 'downgrade',
  );
});

test('a bridge that reorders, repeats, pads or re-cases the C1 offer: order and repeats change nothing, anything that hides hsc3 is caught at C2', async () => {
  const kept: [string, unknown[]][] = [
    ['reordered', ['hsc2', 'hsc3']],
    ['repeated', ['hsc3', 'hsc3', 'hsc2', 'hsc2']],
    ['padded with unknown names', ['hsc9', 'x', 'hsc3', 'hsc2']],
  ];
  for (const [what, channels] of kept) {
    const { done, agent } = await handshake(BINARY_CHANNEL_VERSIONS, { rewriteC1: (c1) => (c1.channels = channels) });
    assert.equal(agent.version, 'hsc3', `${what}: the agent still answers its best version`);
    assert.equal(await agent.verifyC2(done.c2Args), true, what);
  }
  const hidden: [string, unknown[]][] = [
    ['re-cased', ['HSC3', 'hsc2']],
    ['with a space', ['hsc3 ', 'hsc2']],
    ['stripped and replaced by an unknown name', ['hsc4', 'hsc2']],
  ];
  for (const [what, channels] of hidden) {
    const { done, agent } = await handshake(BINARY_CHANNEL_VERSIONS, { rewriteC1: (c1) => (c1.channels = channels) });
    assert.equal(agent.version, 'hsc2', what);
    await assert.rejects(agent.verifyC2(done.c2Args), (e: unknown) => e instanceof HandshakeError && e.reason === 'downgrade', what);
  }
  // A list the agent cannot read is refused at C1 (the bridge can only deny service, as it always can).
  await assert.rejects(
    handshake(BINARY_CHANNEL_VERSIONS, { rewriteC1: (c1) => (c1.channels = Array.from({ length: 9 }, () => 'hsc3')) }),
    (e: unknown) => e instanceof HandshakeError && e.reason === 'bad-request',
  );
});
