/**
 * The secure channel over the relay, for relay.bench.ts: the client's and the echo agent's sides of
 * the handshake through the bridge, and the link that seals every payload (relay-helpers.ts measures it).
 */
import type WebSocket from 'ws';
import { answerClientHandshake, generateHostKey, startClientHandshake, type SecureChannel } from '@hostadm/shared/crypto/index.ts';
import { tagged, type Key, type Link } from './relay-helpers.ts';

/**
 * Relay frames whose body is the payload (`size` bytes of plaintext) sealed with `channel`, as the
 * SDK sends them: sealed in call order and sent in that order; every echo opened in arrival order.
 * hsc2 channels send binary frames, sealed and opened inline (the SDK does so on node:crypto).
 */
export function secureLink(ws: WebSocket, dest: string, size: number, channel: SecureChannel): Link {
  const filler = 'x'.repeat(size);
  const failed = (cause: unknown) => {
    console.error('secure link failed:', cause);
    process.exit(1);
  };
  if (channel.version === 'hsc2') {
    const head = Buffer.from(`${dest}\n`);
    return {
      send: (s) => ws.send(channel.sealBinarySync(tagged(s, filler), head), { binary: true }),
      listen(onEcho) {
        const onMessage = (data: Buffer, isBinary: boolean) => {
          if (!isBinary) return;
          try {
            onEcho(Number.parseInt(channel.openBinarySync(data.subarray(data.indexOf(10) + 1)).slice(0, 12), 10));
          } catch (cause) {
            failed(cause);
          }
        };
        ws.on('message', onMessage);
        return () => ws.off('message', onMessage);
      },
    };
  }
  return {
    send: (s) => void channel.seal(tagged(s, filler)).then((frame) => ws.send(`${dest}\n${frame}`), failed),
    listen(onEcho) {
      const onMessage = (data: Buffer) => {
        const nl = data.indexOf(10);
        channel.open(data.toString('latin1', nl + 1)).then((plain) => onEcho(Number.parseInt(plain.slice(0, 12), 10)), failed);
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

/**
 * The bench's handshake envelopes (the real SDK wraps the same args in auth_ssl requests): the client
 * sends `{"c1":…}` in clear, the agent answers `{"a1":…}`, the client sends `{"c2":…}` sealed (the
 * first sealed frame, seq 0) and the agent answers `{"ok":true}` sealed.
 */
export async function clientChannel(ws: WebSocket, dest: string, key: Key, hostPublicRaw: string, offerHsc2 = false): Promise<SecureChannel> {
  const frames: Buffer[] = [];
  let wake: () => void = () => {};
  const onMessage = (data: Buffer) => {
    frames.push(data.subarray(data.indexOf(10) + 1));
    wake();
  };
  const nextBody = async () => {
    while (frames.length === 0) await new Promise<void>((r) => (wake = r));
    return frames.shift()!;
  };
  ws.on('message', onMessage);
  try {
    const hs = await startClientHandshake({
      clientKeyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      clientSpkiPem: key.pem,
      offerHsc2,
    });
    ws.send(`${dest}\n${JSON.stringify({ c1: hs.c1Args })}`);
    const { a1 } = JSON.parse((await nextBody()).toString()) as { a1: unknown };
    const done = await hs.finish(a1, { pinnedHostKey: hostPublicRaw });
    const c2 = JSON.stringify({ c2: done.c2Args });
    if (done.channel.version === 'hsc2') ws.send(await done.channel.sealBinary(c2, Buffer.from(`${dest}\n`)), { binary: true });
    else ws.send(`${dest}\n${await done.channel.seal(c2)}`);
    const reply = await nextBody();
    const opened = done.channel.version === 'hsc2' ? await done.channel.openBinary(reply) : await done.channel.open(reply.toString());
    const ok = JSON.parse(opened) as { ok?: boolean };
    if (ok.ok !== true) throw new Error('the echo agent refused C2');
    return done.channel;
  } finally {
    ws.off('message', onMessage);
  }
}

/**
 * The agent side on an already signed-in socket: answers the handshake, then opens every sealed frame
 * and sends its plaintext back sealed (opened in arrival order, resealed and sent in that order).
 */
export async function echoAgentChannel(ws: WebSocket, clientSpkiPem: string): Promise<string> {
  const host = await generateHostKey();
  let channel: SecureChannel | null = null;
  let verifyC2: ((args: unknown) => Promise<boolean>) | null = null;
  const failed = (cause: unknown) => {
    console.error('secure echo agent failed:', cause);
    process.exit(1);
  };
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    if (d[0] === 0x7b) return; // the bridge's own envelopes
    const nl = d.indexOf(10);
    if (isBinary) {
      // hsc2: opened and resealed inline, the reply one buffer with the client's line in front.
      const ch = channel!;
      try {
        const plain = ch.openBinarySync(d.subarray(nl + 1));
        if (verifyC2) {
          const verify = verifyC2;
          verifyC2 = null;
          void verify((JSON.parse(plain) as { c2: unknown }).c2)
            .then((ok) => {
              if (!ok) throw new Error('C2 did not verify');
              ws.send(ch.sealBinarySync(JSON.stringify({ ok: true }), d.subarray(0, nl + 1)), { binary: true });
            })
            .catch(failed);
          return;
        }
        ws.send(ch.sealBinarySync(plain, d.subarray(0, nl + 1)), { binary: true });
      } catch (cause) {
        failed(cause);
      }
      return;
    }
    const head = d.toString('latin1', 0, nl + 1);
    const body = d.toString('latin1', nl + 1);
    if (body[0] === '{') {
      const { c1 } = JSON.parse(body) as { c1: unknown };
      void answerClientHandshake({ c1Args: c1, clientSpkiPem, hostKeyPem: host.privatePkcs8Pem, hostPublicRaw: host.publicRaw }).then((answer) => {
        channel = answer.channel;
        verifyC2 = answer.verifyC2;
        ws.send(`${head}${JSON.stringify({ a1: answer.a1Args })}`);
      }, failed);
      return;
    }
    const ch = channel!;
    const opened = ch.open(body);
    if (verifyC2) {
      const verify = verifyC2;
      verifyC2 = null;
      void opened
        .then(async (plain) => {
          if (!(await verify((JSON.parse(plain) as { c2: unknown }).c2))) throw new Error('C2 did not verify');
          ws.send(`${head}${await ch.seal(JSON.stringify({ ok: true }))}`);
        })
        .catch(failed);
      return;
    }
    void opened.then((plain) => ch.seal(plain)).then((frame) => ws.send(head + frame), failed);
  });
  return host.publicRaw;
}
