import { relayUrl } from '@hostadm/client/sdk/src/browser.ts';

export function App() {
  return (
    <main>
      <h1>hostadm</h1>
      <p>Bridge: {relayUrl(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`)}</p>
    </main>
  );
}
