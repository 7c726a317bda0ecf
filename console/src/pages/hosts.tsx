/** The hosts this key may reach through the bridge, each with its state; and a first sign-in to a host. */
import type { BridgeHost } from '@hostadm/client/sdk/src/browser.ts';
import { useEffect, useState } from 'preact/hooks';
import { DIRECT_HOST, direct, links, listHosts, registerOnHost } from '../hosts.ts';
import type { StoredKey } from '../keys.ts';
import { errorText, toast, useStore } from '../store.ts';

export function HostsPage(props: { keyRecord: StoredKey }) {
  const [hosts, setHosts] = useState<BridgeHost[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [updatedAt, setUpdatedAt] = useState<Date | null>(null);
  const all = useStore(links);
  const refresh = () =>
    listHosts(props.keyRecord)
      .then((h) => {
        setHosts(h);
        setError(null);
        setUpdatedAt(new Date());
      })
      .catch((err: unknown) => setError(errorText(err)));
  useEffect(() => {
    refresh();
    const timer = setInterval(refresh, 10_000);
    return () => clearInterval(timer);
  }, [props.keyRecord]);

  return (
    <section aria-labelledby="hosts-title">
      <h2 id="hosts-title">Hosts</h2>
      <p class={`freshness${error ? ' stale' : ''}`} role="status">
        {error ? `Not current: ${error}` : updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}` : 'Loading…'}{' '}
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </p>
      {hosts && hosts.length === 0 && <p>No host lists this key yet: sign in to one below to register it.</p>}
      <ul class="hosts">
        {hosts?.map((h) => (
          <li key={h.id}>
            <a href={`#/host/${encodeURIComponent(h.nickname)}/dashboard`}>{h.nickname || h.hostname}</a>{' '}
            <span class="badge online">online since {h.onlineSince ? new Date(h.onlineSince).toLocaleString() : '?'}</span>{' '}
            <span class="badge">{h.access === 'key' ? 'key sign-in' : 'password only'}</span>{' '}
            <span class="badge">{all[h.nickname]?.state ?? 'not connected'}</span>
            <br />
            <small>host key {h.hostKeyFingerprint ?? 'unknown'}</small>
          </li>
        ))}
      </ul>
      <RegisterForm keyRecord={props.keyRecord} onDone={refresh} />
    </section>
  );
}

function RegisterForm(props: { keyRecord: StoredKey; onDone: () => void }) {
  const [values, setValues] = useState({ host: direct.value ? DIRECT_HOST : '', user: 'admin', password: '' });
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof values) => (e: { currentTarget: { value: string } }) => setValues({ ...values, [k]: e.currentTarget.value });
  return (
    <form
      class="action-form"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        if (!values.host.trim() || !values.user.trim() || !values.password) {
          setError('host, user and password are required');
          return;
        }
        setBusy(true);
        try {
          await registerOnHost(props.keyRecord, values.host.trim(), values.user.trim(), values.password);
          setValues({ ...values, password: '' });
          toast('success', `Key registered on ${values.host} for ${values.user}: key sign-in from now on`);
          props.onDone();
        } catch (err) {
          setError(errorText(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h3>Register this key on a host</h3>
      <p class="hint">Signs in once with a password inside the end-to-end channel (the bridge sees none of it), then registers the key.</p>
      <label for="reg-host">Host nickname</label>
      <input id="reg-host" value={values.host} onInput={set('host')} autocomplete="off" />
      <label for="reg-user">User</label>
      <input id="reg-user" value={values.user} onInput={set('user')} autocomplete="username" />
      <label for="reg-password">Password</label>
      <input id="reg-password" type="password" value={values.password} onInput={set('password')} autocomplete="current-password" />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in and register'}
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
