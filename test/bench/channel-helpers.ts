/**
 * The secure channel over the relay, for relay.bench.ts: the client's and the echo agent's sides of
 * the handshake through the bridge, and the link that seals every payload (relay-helpers.ts measures it).
 */
import { createCipheriv, createDecipheriv, createSecretKey } from 'node:crypto';
import type WebSocket from 'ws';
import {
  answerClientHandshake,
  ChannelSender,
  generateHostKey,
  openBinaryBody,
  startClientHandshake,
  type ChannelVersion,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { formatRatio, reportTarget, summarize } from './ab-pairs.ts';
import { median, tagged, type Cell, type Key, type Link } from './relay-helpers.ts';

const failed = (cause: unknown) => {
  console.error('secure channel failed:', cause);
  process.exit(1);
};

/**
 * The product's sender (what the SDK and the agent seal with), one per channel for the whole run, its
 * output as theirs over `ws`: the agent's link and the SDK's session in Node hand each sealed frame
 * back to the sender's pool in `ws`'s send callback. (A browser's SDK, whose WebSocket cannot say
 * when it is done with a frame, seals into new buffers: not what this Node bench runs.)
 */
const senders = new WeakMap<SecureChannel, ChannelSender>();
function senderFor(ws: WebSocket, head: Uint8Array, channel: SecureChannel): ChannelSender {
  let sender = senders.get(channel);
  if (!sender) {
    sender = new ChannelSender(channel, head, {
      text: () => failed(new Error('a text frame on a binary channel')),
      binary: (frame, release) => (release ? ws.send(frame, { binary: true }, () => release()) : ws.send(frame, { binary: true })),
      failed,
      releasesFrames: true,
    });
    senders.set(channel, sender);
  }
  return sender;
}

/**
 * Relay frames whose body is the payload (`size` bytes of plaintext) sealed with `channel`, as the
 * SDK sends them: sealed in call order and sent in that order; every echo opened in arrival order.
 * hsc2 channels send binary frames, sealed and opened inline (the SDK does so on node:crypto); hsc3
 * channels send through the product's ChannelSender, so what one tick sends (the echoes of one
 * record answered at once) leaves as one record, and each record's envelopes are handed on in order.
 */
export function secureLink(ws: WebSocket, dest: string, size: number, channel: SecureChannel): Link {
  const filler = 'x'.repeat(size);
  if (channel.version === 'hsc3') {
    const sender = senderFor(ws, Buffer.from(`${dest}\n`), channel);
    return {
      send: (s) => sender.send(tagged(s, filler)),
      listen(onEcho) {
        const onMessage = (data: Buffer, isBinary: boolean) => {
          if (!isBinary) return;
          try {
            for (const plain of openBinaryBody(channel, data.subarray(data.indexOf(10) + 1)) as string[]) onEcho(Number.parseInt(plain.slice(0, 12), 10));
          } catch (cause) {
            failed(cause);
          }
        };
        ws.on('message', onMessage);
        return () => ws.off('message', onMessage);
      },
    };
  }
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
export async function clientChannel(
  ws: WebSocket,
  dest: string,
  key: Key,
  hostPublicRaw: string,
  offer: readonly ChannelVersion[] = [],
): Promise<SecureChannel> {
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
      channels: offer,
    });
    ws.send(`${dest}\n${JSON.stringify({ c1: hs.c1Args })}`);
    const { a1 } = JSON.parse((await nextBody()).toString()) as { a1: unknown };
    const done = await hs.finish(a1, { pinnedHostKey: hostPublicRaw });
    const c2 = JSON.stringify({ c2: done.c2Args });
    const binary = done.channel.version !== 'hsc1';
    if (binary) senderFor(ws, Buffer.from(`${dest}\n`), done.channel).send(c2);
    else ws.send(`${dest}\n${await done.channel.seal(c2)}`);
    const reply = await nextBody();
    const opened = binary ? (await openBinaryBody(done.channel, reply))[0]! : await done.channel.open(reply.toString());
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
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    if (d[0] === 0x7b) return; // the bridge's own envelopes
    const nl = d.indexOf(10);
    if (isBinary && channel?.version === 'hsc3') {
      // hsc3: every envelope of the record resealed through the product's sender: one record back per record in.
      const ch = channel;
      const sender = senderFor(ws, Buffer.from(d.subarray(0, nl + 1)), ch);
      try {
        const envelopes = openBinaryBody(ch, d.subarray(nl + 1)) as string[];
        if (verifyC2) {
          const verify = verifyC2;
          verifyC2 = null;
          void verify((JSON.parse(envelopes[0]!) as { c2: unknown }).c2)
            .then((ok) => {
              if (!ok) throw new Error('C2 did not verify');
              sender.send(JSON.stringify({ ok: true }));
            })
            .catch(failed);
          return;
        }
        for (const plain of envelopes) sender.send(plain);
      } catch (cause) {
        failed(cause);
      }
      return;
    }
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

// ---------------------------------------------------------------- control: bare AES-GCM, no channel

/**
 * The floor under any AES-GCM channel on node:crypto: each frame's body encrypted (by its sender) and
 * decrypted (by its receiver) with one bare createCipheriv / createDecipheriv call, a fixed key and
 * nonce, no sequence, no checks, no text decoding: a cost control, not a channel (never use it so).
 */
const CONTROL_KEY = createSecretKey(Buffer.alloc(32, 7));
const CONTROL_IV = Buffer.alloc(12);
const CONTROL_AAD = Buffer.alloc(43, 1);

function controlSeal(head: Buffer, plain: string | Buffer): Buffer {
  const c = createCipheriv('aes-256-gcm', CONTROL_KEY, CONTROL_IV, { authTagLength: 16 });
  c.setAAD(CONTROL_AAD);
  const ct = typeof plain === 'string' ? c.update(plain, 'utf8') : c.update(plain);
  c.final();
  return Buffer.concat([head, ct, c.getAuthTag()]);
}

function controlOpen(sealed: Buffer): Buffer {
  const d = createDecipheriv('aes-256-gcm', CONTROL_KEY, CONTROL_IV, { authTagLength: 16 });
  d.setAAD(CONTROL_AAD);
  d.setAuthTag(sealed.subarray(sealed.length - 16));
  const plain = d.update(sealed.subarray(0, sealed.length - 16));
  d.final();
  return plain;
}

/** The control's load side: binary frames `<dest>\n` ‖ ciphertext ‖ tag, each echo decrypted. */
export function bareGcmLink(ws: WebSocket, dest: string, size: number): Link {
  const filler = 'x'.repeat(size);
  const head = Buffer.from(`${dest}\n`);
  return {
    send: (s) => ws.send(controlSeal(head, tagged(s, filler)), { binary: true }),
    listen(onEcho) {
      const onMessage = (data: Buffer, isBinary: boolean) => {
        if (!isBinary) return;
        onEcho(Number.parseInt(controlOpen(data.subarray(data.indexOf(10) + 1)).toString('latin1', 0, 12), 10));
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

/** The control's far end on a signed-in agent socket: decrypts each frame and sends it back encrypted. */
export function bareGcmEcho(ws: WebSocket): void {
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    if (!isBinary) return; // the bridge's own envelopes
    const nl = d.indexOf(10);
    ws.send(controlSeal(d.subarray(0, nl + 1), controlOpen(d.subarray(nl + 1))), { binary: true });
  });
}

// ---------------------------------------------------------------- the channel's cost in CPU

/**
 * The channel against the plain bridge in CPU: a round trip's CPU in all three processes (load
 * client, bridge, far end), per round; plain / secure is how many secure round trips a CPU-second
 * carries per plain one. The target compares hsc3 (what the SDK and the agent negotiate on this
 * bridge); hsc2 is printed beside it. On a shared 2-core machine other processes' load moves msg/s
 * far more than it moves CPU. The bare AES-GCM control (◊) shows the floor node:crypto sets under a
 * channel that seals each envelope on its own; the batch control (◊) coalesces like hsc3 without
 * encryption, so hsc3's gain from coalescing and its cost from encryption read apart. The target
 * counts `targetSeries`: the cells of a target's path by key, the main rounds' then the target
 * rounds' (relay.bench.ts).
 */
export function reportChannelCpu(results: Map<string, Cell[]>, sizes: number[], inflight: number, targetSeries: (key: string) => Cell[]): void {
  const roundTripCpu = (c: Cell) => c.cpuPerFrame * 2 + c.clientCpuPerMsg + c.farCpuPerMsg;
  const parts = (cells: Cell[]) =>
    [median(cells.map((c) => c.clientCpuPerMsg)), median(cells.map((c) => c.cpuPerFrame * 2)), median(cells.map((c) => c.farCpuPerMsg))]
      .map((x) => x.toFixed(1))
      .join(' + ');
  for (const size of sizes) {
    const label = size >= 1024 ? `${size / 1024} KiB` : `${size} B`;
    const [plain, hsc3, hsc2, control, batch] = ['bridge', 'bridge+hsc3‡', 'bridge+hsc2‡', 'bridge+gcm◊', 'bridge+batch◊'].map(
      (path) => results.get(`${path}|${size}|${inflight}`)!,
    ) as [Cell[], Cell[], Cell[], Cell[], Cell[]];
    const ratio = (a: Cell[], b: Cell[]) => summarize(a.map((cell, round) => roundTripCpu(cell) / roundTripCpu(b[round]!)));
    console.log(
      `CPU per round trip at ${label} × ${inflight} (client + bridge + far end, µs, medians): bridge ${parts(plain)}, bridge+hsc3 ${parts(hsc3)}, bridge+hsc2 ${parts(hsc2)}, control◊ ${parts(control)}`,
    );
    const target = ratio(targetSeries(`bridge|${size}|${inflight}`), targetSeries(`bridge+hsc3‡|${size}|${inflight}`));
    reportTarget(`Channel: bridge+hsc3 vs bridge, round trips per CPU-second at ${label} × ${inflight}`, target, 0.7, 'at-least');
    console.log(
      `  hsc2 (a frame per envelope) vs bridge ${formatRatio(ratio(plain, hsc2))}; ◊ control, bare AES-GCM per frame (4 node:crypto calls per round trip, no channel): vs bridge ${formatRatio(ratio(plain, control))}; bridge+hsc3 vs bridge+hsc2 ${formatRatio(ratio(hsc2, hsc3))}`,
    );
    console.log(
      `  ◊ batch control (hsc3's coalescing, no encryption): vs bridge ${formatRatio(ratio(plain, batch))}; bridge+hsc3 vs the batch control ${formatRatio(ratio(batch, hsc3))} (what the encryption costs once coalesced)`,
    );
  }
}
