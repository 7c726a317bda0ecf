// Reach a host behind NAT through a bridge, end to end encrypted (run: node bridge.ts).
// HOSTADM_BRIDGE=ws://bridge:12160  HOSTADM_HOST=web1  HOSTADM_KEY=~/.config/hostadm/keys/default.key
// HOSTADM_HOST_KEY=<base64 host key, once pinned>  HOSTADM_JOIN_TOKEN=<client token, first time only>
// HOSTADM_USER / HOSTADM_PASSWORD: only while the host does not know the key yet (it is then registered).
import { readFileSync } from 'node:fs';
import { bridgeTransport, connect, NodeWebSocket } from '../src/node.ts';

const env = process.env;
const keyFile = env.HOSTADM_KEY!;
const key = { privatePem: readFileSync(keyFile, 'utf8'), certPem: readFileSync(keyFile.replace(/\.key$/, '.crt'), 'utf8') };

const client = await connect({
  transport: bridgeTransport({
    bridgeUrl: env.HOSTADM_BRIDGE!,
    host: { name: env.HOSTADM_HOST! },
    key,
    // A pinned host key, or a decision on first use: compare the fingerprint with the one the agent printed.
    ...(env.HOSTADM_HOST_KEY
      ? { pinnedHostKey: env.HOSTADM_HOST_KEY }
      : {
          onHostKey: (fingerprint: string, hostKey: string) => {
            console.log(`pin ${fingerprint}: HOSTADM_HOST_KEY=${hostKey}`);
            return fingerprint === env.HOSTADM_ACCEPT_HOST_KEY;
          },
        }),
    ...(env.HOSTADM_JOIN_TOKEN ? { joinToken: env.HOSTADM_JOIN_TOKEN } : {}),
    webSocket: NodeWebSocket,
  }),
  // Used only when the host does not know the key yet: checked by the host inside the channel.
  ...(env.HOSTADM_USER && env.HOSTADM_PASSWORD ? { auth: { username: env.HOSTADM_USER, password: env.HOSTADM_PASSWORD } } : {}),
  reconnect: false,
});
if (client.session?.method === 'password') {
  await client.registerKey({ ...key, nickname: 'sdk example' });
  console.log('key registered: next time it signs in alone');
}
const { memorystats } = await client.admin.systemmanager.memorystats();
console.log(`signed in by ${client.session?.method}; free memory ${memorystats.free}`);
await client.close();
