/** The console's frame: header with the connection state, hash routes, the host-key question, dialogs and toasts. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { bridgeUrl, detectMode, direct, hostKeyQuestion, links } from './hosts.ts';
import { loadKey, type StoredKey } from './keys.ts';
import { HostPage } from './pages/host.tsx';
import { HostsPage } from './pages/hosts.tsx';
import { KeyPage } from './pages/key.tsx';
import { useStore } from './store.ts';
import { ConfirmDialog } from './ui/confirm.tsx';
import { Toasts } from './ui/toasts.tsx';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function useOnline(): boolean {
  const [online, setOnline] = useState(navigator.onLine);
  useEffect(() => {
    const on = () => setOnline(navigator.onLine);
    addEventListener('online', on);
    addEventListener('offline', on);
    return () => {
      removeEventListener('online', on);
      removeEventListener('offline', on);
    };
  }, []);
  return online;
}

export function App() {
  const [key, setKey] = useState<StoredKey | undefined | null>(null);
  const hash = useHash();
  const online = useOnline();
  const all = useStore(links);
  const isDirect = useStore(direct);
  useEffect(() => {
    detectMode().then(() => loadKey().then((k) => setKey(k ?? undefined)));
  }, []);
  const reconnecting = Object.values(all)
    .filter((l) => l.state === 'reconnecting')
    .map((l) => l.nickname);
  const [, route, nickname, page] = /^#\/([a-z]+)(?:\/([^/]+)(?:\/(.+))?)?/.exec(hash) ?? [];
  let body: ComponentChildren;
  if (!window.isSecureContext || !crypto.subtle) body = <p class="error">This page needs a secure context (https:// or localhost) for WebCrypto.</p>;
  else if (key === null) body = <p role="status">Loading…</p>;
  else if (!key || route === 'key' || (!route && !key.enrolledAt && !isDirect)) body = <KeyPage keyRecord={key} onKey={setKey} />;
  else if (route === 'host' && nickname) body = <HostPage keyRecord={key} nickname={decodeURIComponent(nickname)} page={page ?? 'dashboard'} />;
  else body = <HostsPage keyRecord={key} />;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <h1>hostadm</h1>
        <nav aria-label="Console">
          <a href="#/hosts">Hosts</a> <a href="#/key">Key</a>
        </nav>
        <span class={`net ${online && reconnecting.length === 0 ? 'ok' : 'down'}`} role="status" id="net-state">
          {!online ? 'Offline' : reconnecting.length > 0 ? `Reconnecting to ${reconnecting.join(', ')}…` : 'Online'}
        </span>
        <small class="bridge" title="bridge">
          {isDirect ? `agent ${location.host} (direct)` : bridgeUrl.value}
        </small>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
      <HostKeyDialog />
      <ConfirmDialog />
      <Toasts />
    </>
  );
}

function HostKeyDialog() {
  const q = useStore(hostKeyQuestion);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (q && ref.current && !ref.current.open) ref.current.showModal();
  }, [q]);
  if (!q) return null;
  const answer = (ok: boolean) => {
    ref.current?.close();
    hostKeyQuestion.set(null);
    q.answer(ok);
  };
  return (
    <dialog ref={ref} aria-labelledby="hk-title" onCancel={() => answer(false)}>
      <h2 id="hk-title">First connection to {q.nickname}</h2>
      <p>Compare this host key fingerprint with the one the host shows (its agent prints it at start):</p>
      <p>
        <code id="hk-fingerprint">{q.fingerprint}</code>
      </p>
      <p>Once trusted it is pinned: a different key later is refused.</p>
      <div class="buttons">
        <button type="button" onClick={() => answer(false)}>
          Reject
        </button>
        <button type="button" class="primary" onClick={() => answer(true)}>
          Trust and pin
        </button>
      </div>
    </dialog>
  );
}
