/**
 * A hostile bridge tries to make the agent's host key sign a channel handshake for it (issue 12,
 * item 1). The host key signs both the bridge sign-in challenge and hsc1's "hostadm-hsc1 host" ‖ T;
 * a bridge that plays the host towards a client grinds its agent_nonce until the transcript hash T is
 * valid UTF-8, sends "hostadm-hsc1 host" ‖ T as its sign-in test string, and replays the signature it
 * gets as the host's A1 signature: the client's check (`verify(hostKey, sig, hostSignedMessage(T))`
 * in handshake.ts) then passes and the client talks to the bridge as if it were the pinned host.
 *
 * The grind (about 4·10^7 SHA-256 runs, two minutes) was done once for the fixed host key and
 * transcript inputs below; the test replays it.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { hostSignedMessage, LABEL_HOST_SIG, transcriptHash } from '@hostadm/shared/crypto/transcript.ts';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { BridgeLink } from '@hostadm/agent/bridge-link/link.ts';
import { startTestAgent } from '../helpers/agent.ts';

/** Ed25519 seed 07×32 → the host key; PKCS#8 DER = fixed prefix ‖ seed. */
const HOST_PKCS8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, 7)]);
/** Transcript inputs the bridge controls or sees, with the agent_nonce found by grinding. */
const GROUND = {
  md5Key: 'AAAAAAAAAAAAAAAAAAAAAA==',
  clientEph: Buffer.alloc(32, 1),
  clientNonce: Buffer.alloc(32, 2),
  agentEph: Buffer.alloc(32, 3),
  agentNonceCounter: 43086095n,
  transcriptHex: '6f4b10067d563d69726b0d3e5f542d7b4e1fd59719544cefb09ecaa1d89f7173',
};

interface SignInAttempt {
  /** The agent's stage-2 signature, if it sent one. */
  signature?: Buffer;
  /** The close code, if the agent hung up instead. */
  closeCode?: number;
  /** Whether the agent asked for a test string (stage 1). */
  askedStage1?: boolean;
}

/**
 * A bridge of the attacker's own: answers identify, then offers each test string in turn (at stage 1;
 * with `greet`, also as its greeting before identify, docs/bridge-protocol.md §2.3).
 */
function hostileBridge(t: TestContext, testStrings: string[], greet = false): { url: Promise<string>; attempts: Promise<SignInAttempt[]> } {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 }); // the agent dials its host room, /relay/host/<fingerprint>
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = new Promise<string>((resolve) => server.once('listening', () => resolve(`ws://127.0.0.1:${(server.address() as { port: number }).port}`)));
  const results: SignInAttempt[] = [];
  const attempts = new Promise<SignInAttempt[]>((resolve) => {
    server.on('connection', (ws: WebSocket) => {
      const testString = testStrings[results.length];
      if (testString === undefined) return ws.close();
      const attempt: SignInAttempt = {};
      const settle = () => {
        if (results.includes(attempt)) return;
        results.push(attempt);
        ws.close();
        if (results.length === testStrings.length) resolve(results);
      };
      ws.on('message', (data) => {
        const env = JSON.parse(data.toString()) as { id: string; name: string; args: unknown };
        if (env.id === 'agent-auth-1') attempt.askedStage1 = true;
        if (env.id === 'agent-auth-1') ws.send(JSON.stringify({ id: env.id, name: 'response', namespace: 'rpc', args: { test_string: testString } }));
        if (env.id === 'agent-auth-2') {
          attempt.signature = Buffer.from((env.args as { signature: string }).signature, 'base64');
          settle();
        }
      });
      ws.on('close', (code) => {
        attempt.closeCode ??= code;
        settle();
      });
      if (greet) ws.send(JSON.stringify({ id: '', name: 'event', namespace: 'events', args: { name: 'bridge_greeting', args: { test_string: testString } } }));
      ws.send(JSON.stringify({ id: 'bridge_request_ident', name: 'identify', namespace: 'rpc', args: {} }));
    });
  });
  return { url, attempts };
}

async function agentWithFixedHostKey(t: TestContext) {
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-hostile-bridge-'));
  writeFileSync(join(dataDir, 'host-key.pem'), createPrivateKey({ key: HOST_PKCS8, format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  const agent = await startTestAgent({}, dataDir);
  t.after(async () => {
    await agent.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return agent;
}

function linkTo(t: TestContext, url: string, agent: Awaited<ReturnType<typeof agentWithFixedHostKey>>): void {
  const link = new BridgeLink({ url, pipeline: agent.pipeline, dataDir: agent.dataDir, minDelayMs: 10, maxDelayMs: 50 });
  link.start();
  t.after(() => link.stop());
}

test('a bridge that grinds T and asks the host key to sign "hostadm-hsc1 host" ‖ T gets nothing it can replay as a host signature', async (t) => {
  const agent = await agentWithFixedHostKey(t);
  const hostPublic = createPublicKey(createPrivateKey({ key: HOST_PKCS8, format: 'der', type: 'pkcs8' }));
  const hostRaw = Buffer.from(agent.services.hostKey.publicRaw, 'base64');

  // The ground transcript is the one a client would compute for this host key.
  const agentNonce = Buffer.alloc(32);
  agentNonce.writeBigUInt64LE(GROUND.agentNonceCounter, 0);
  const transcript = Buffer.from(
    await transcriptHash({
      md5Key: GROUND.md5Key,
      clientEph: GROUND.clientEph,
      clientNonce: GROUND.clientNonce,
      agentEph: GROUND.agentEph,
      agentNonce,
      hostKey: hostRaw,
    }),
  );
  assert.equal(transcript.toString('hex'), GROUND.transcriptHex);
  // Valid UTF-8, so it survives as a JSON string and the agent's UTF-8 encoding gives the bytes back.
  const forgedTestString = LABEL_HOST_SIG + new TextDecoder('utf-8', { fatal: true }).decode(transcript);
  assert.deepEqual(Buffer.from(forgedTestString), Buffer.from(hostSignedMessage(transcript)));

  const bridge = hostileBridge(t, [forgedTestString]);
  linkTo(t, await bridge.url, agent);
  const [attempt] = await bridge.attempts;

  const replayable = attempt!.signature !== undefined && verify(null, hostSignedMessage(transcript), hostPublic, attempt!.signature);
  assert.equal(replayable, false, "the agent signed the bridge's bytes: the signature passes as the host's A1 signature over T");
  assert.equal(attempt!.signature, undefined, 'a malformed challenge is refused, not signed');
  assert.equal(attempt!.closeCode, 1008);
});

test('the host key signs only "hostadm-signin bridge v1\\n" ‖ a 32-character alphanumeric test string', async (t) => {
  const agent = await agentWithFixedHostKey(t);
  const hostPublic = createPublicKey(createPrivateKey({ key: HOST_PKCS8, format: 'der', type: 'pkcs8' }));
  const good = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';
  const malformed = ['', good.slice(1), `${good}A`, `${good.slice(0, 31)}\n`, `${good.slice(0, 31)}é`, 'hostadm-hsc1 host', `${'A'.repeat(31)} `];
  const bridge = hostileBridge(t, [...malformed, good]);
  linkTo(t, await bridge.url, agent);
  const attempts = await bridge.attempts;

  for (const [i, attempt] of attempts.slice(0, malformed.length).entries()) {
    assert.equal(attempt.signature, undefined, `test string ${JSON.stringify(malformed[i])} was signed`);
  }
  const signature = attempts.at(-1)!.signature;
  assert.ok(signature, 'a well-formed test string is signed');
  assert.equal(verify(null, Buffer.from(signedMessage('bridge-signin', good)), hostPublic, signature), true);
  // Not the bare string (what the agent used to sign), nor any other purpose's message.
  assert.equal(verify(null, Buffer.from(good), hostPublic, signature), false);
  assert.equal(verify(null, Buffer.from(signedMessage('agent-signin', good)), hostPublic, signature), false);
});

test("a greeting's test string is held to the same rule: a malformed one is never signed, a well-formed one needs no stage 1", async (t) => {
  const agent = await agentWithFixedHostKey(t);
  const hostPublic = createPublicKey(createPrivateKey({ key: HOST_PKCS8, format: 'der', type: 'pkcs8' }));
  const good = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';
  const malformed = [good.slice(1), `${good.slice(0, 31)}\n`, 'hostadm-hsc1 host'];
  const bridge = hostileBridge(t, [...malformed, good], true);
  linkTo(t, await bridge.url, agent);
  const attempts = await bridge.attempts;
  for (const [i, attempt] of attempts.slice(0, malformed.length).entries()) {
    // The greeting ignored, the agent asks for a test string, and refuses the same one there.
    assert.deepEqual([attempt.signature, attempt.askedStage1, attempt.closeCode], [undefined, true, 1008], JSON.stringify(malformed[i]));
  }
  const last = attempts.at(-1)!;
  assert.equal(last.askedStage1, undefined, 'signed in over the greeting: no stage 1');
  assert.ok(last.signature);
  assert.equal(verify(null, Buffer.from(signedMessage('bridge-signin', good)), hostPublic, last.signature), true);
});
