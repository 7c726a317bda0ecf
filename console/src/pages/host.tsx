/** One host: connects with the key (pinned host key), then its pages; the classes `query` grants decide the menu. */
import { useEffect } from 'preact/hooks';
import { bridgeUrl, links, openHost } from '../hosts.ts';
import { forgetPin, pinId, type StoredKey } from '../keys.ts';
import { confirmAction } from '../ui/confirm.tsx';
import { useStore } from '../store.ts';
import { Dashboard } from './dashboard.tsx';
import { ClassPage } from './generic.tsx';
import { Jobs } from './jobs.tsx';
import { Files, Network, Processes, Services, Sysctls, Users } from './lists.tsx';

const PAGES: { page: string; label: string; needs: string }[] = [
  { page: 'dashboard', label: 'Dashboard', needs: 'admin/systemmanager' },
  { page: 'processes', label: 'Processes', needs: 'admin/systemmanager' },
  { page: 'services', label: 'Services', needs: 'admin/services' },
  { page: 'users', label: 'Users', needs: 'admin/users' },
  { page: 'network', label: 'Network', needs: 'admin/network' },
  { page: 'files', label: 'Files', needs: 'admin/fs' },
  { page: 'sysctls', label: 'Sysctls', needs: 'admin/systemmanager' },
  { page: 'jobs', label: 'Jobs', needs: 'rpc/dispatcher' },
];
const COVERED = new Set(PAGES.map((p) => p.needs));

export function HostPage(props: { keyRecord: StoredKey; nickname: string; page: string }) {
  const link = useStore(links)[props.nickname];
  useEffect(() => {
    openHost(props.keyRecord, props.nickname);
  }, [props.nickname, props.keyRecord]);
  const base = `#/host/${encodeURIComponent(props.nickname)}`;
  if (!link || (!link.client && link.state === 'connecting')) return <p role="status">Connecting to {props.nickname}…</p>;
  if (!link.client) {
    return (
      <section class={link.state === 'refused' ? 'refusal' : ''} role="alert" aria-labelledby="host-error">
        <h2 id="host-error">{link.state === 'refused' ? `REFUSED: the host key of ${props.nickname} changed` : `Cannot reach ${props.nickname}`}</h2>
        {link.state === 'refused' && (
          <p>
            The host presented another key than the one pinned the first time. Someone may be impersonating it. Do not continue unless its administrator
            confirms the new key's fingerprint (then forget the pin).
          </p>
        )}
        <p class="error">{link.error}</p>
        <button type="button" onClick={() => openHost(props.keyRecord, props.nickname)}>
          Try again
        </button>
        {link.state === 'refused' && (
          <button
            type="button"
            class="danger"
            onClick={async () => {
              const ok = await confirmAction(
                `Forget the pinned key of ${props.nickname}?`,
                "Only when the host's administrator confirmed that its key changed. The next connection shows the new fingerprint for comparison.",
                { confirm: 'Forget the pin' },
              );
              if (ok) {
                await forgetPin(pinId(bridgeUrl.value, props.nickname));
                await openHost(props.keyRecord, props.nickname);
              }
            }}
          >
            Forget the pinned key…
          </button>
        )}
      </section>
    );
  }
  const grants = link.grants ?? {};
  const others = Object.keys(grants)
    .filter((k) => !COVERED.has(k) && k !== 'admin/settings' && k !== 'rpc/settings')
    .sort();
  const { client, state } = link;
  const [ns, cls] = props.page.startsWith('class:') ? (props.page.slice(6).split('/') as ['admin' | 'rpc', string]) : [null, null];
  return (
    <div class="host">
      <nav aria-label={`${props.nickname} pages`} class="host-nav">
        <strong>{props.nickname}</strong>
        {link.fingerprint && <small title="pinned host key">{link.fingerprint}</small>}
        <ul>
          {PAGES.filter((p) => grants[p.needs]).map((p) => (
            <li key={p.page}>
              <a href={`${base}/${p.page}`} aria-current={props.page === p.page ? 'page' : undefined}>
                {p.label}
              </a>
            </li>
          ))}
          {others.map((k) => (
            <li key={k}>
              <a href={`${base}/class:${k}`} aria-current={props.page === `class:${k}` ? 'page' : undefined}>
                {k.split('/')[1]}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="host-page">
        {state !== 'open' && (
          <p class="offline" role="alert">
            Connection to {props.nickname} lost: reconnecting. What is shown is not current.
          </p>
        )}
        {props.page === 'dashboard' && <Dashboard client={client} state={state} />}
        {props.page === 'processes' && <Processes client={client} state={state} />}
        {props.page === 'services' && <Services client={client} state={state} />}
        {props.page === 'users' && <Users client={client} state={state} />}
        {props.page === 'network' && <Network client={client} state={state} />}
        {props.page === 'files' && <Files client={client} state={state} />}
        {props.page === 'sysctls' && <Sysctls client={client} state={state} />}
        {props.page === 'jobs' && <Jobs client={client} state={state} />}
        {ns && cls && <ClassPage key={cls} client={client} state={state} namespace={ns} name={cls} />}
      </div>
    </div>
  );
}
