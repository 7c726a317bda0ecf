/**
 * The browser's key: make one (non-extractable, saved once as a file for the CLI), or import a key
 * file; enroll it at the bridge with a client join token; export its public half.
 */
import { useState } from 'preact/hooks';
import { direct, listHosts } from '../hosts.ts';
import { createKey, download, forgetKey, importKeyFile, saveKey, type StoredKey } from '../keys.ts';
import { errorText, toast } from '../store.ts';
import { confirmAction } from '../ui/confirm.tsx';

export function KeyPage(props: { keyRecord: StoredKey | undefined; onKey: (key: StoredKey | undefined) => void }) {
  const key = props.keyRecord;
  const [privatePem, setPrivatePem] = useState<string | null>(null);
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  if (!key) {
    return (
      <section aria-labelledby="key-title">
        <h2 id="key-title">Your key</h2>
        <p>
          This browser has no key yet. Its private half will stay in this browser (non-extractable, in IndexedDB); the bridge and the hosts only ever see
          signatures.
        </p>
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={() =>
            run(async () => {
              const made = await createKey();
              setPrivatePem(made.privatePem);
              location.hash = '#/key';
              props.onKey(made.key);
              toast('success', 'Key created');
            })
          }
        >
          Create a key
        </button>
        <label class="file">
          Or import a key file (PEM, as hostadm writes it)
          <input
            type="file"
            accept=".key,.pem"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) run(async () => props.onKey(await importKeyFile(await file.text())));
            }}
          />
        </label>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </section>
    );
  }
  return (
    <section aria-labelledby="key-title">
      <h2 id="key-title">Your key</h2>
      <dl>
        <dt>md5_key</dt>
        <dd>
          <code id="key-md5">{key.md5}</code>
        </dd>
        <dt>Created</dt>
        <dd>{new Date(key.createdAt).toLocaleString()}</dd>
        <dt>Enrolled at the bridge</dt>
        <dd id="key-enrolled">{key.enrolledAt ? `yes, ${new Date(key.enrolledAt).toLocaleString()}` : 'not yet'}</dd>
      </dl>
      {privatePem && (
        <div class="notice" role="status">
          <p>For the command line, save the private key now: this is the only time it can be read.</p>
          <button type="button" onClick={() => download('console.key', privatePem)}>
            Save console.key
          </button>{' '}
          <button type="button" onClick={() => setPrivatePem(null)}>
            Done, forget it
          </button>
        </div>
      )}
      <p>
        <button type="button" onClick={() => download('console.crt', key.publicPem)}>
          Export the public key
        </button>{' '}
        <span class="hint">
          (for <code>hostadm agent keys authorize</code> on a host)
        </span>
      </p>
      {!direct.value && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              if (!token.trim()) throw new Error('join token: is required (ask the bridge operator: hostadm bridge token --kind client)');
              await listHosts(key, token.trim());
              const enrolled = { ...key, enrolledAt: new Date().toISOString() };
              await saveKey(enrolled);
              props.onKey(enrolled);
              setToken('');
              toast('success', 'Key enrolled at the bridge');
              location.hash = '#/hosts';
            });
          }}
        >
          <h3>Enroll at the bridge</h3>
          <label for="join-token">Client join token (once)</label>
          <input id="join-token" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} />
          <button type="submit" class="primary" disabled={busy}>
            Enroll
          </button>
        </form>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p>
        <button
          type="button"
          class="danger"
          onClick={async () => {
            if (
              await confirmAction('Forget this key?', 'The browser forgets the key; hosts and the bridge keep it registered until it is revoked there.', {
                confirm: 'Forget',
              })
            ) {
              await forgetKey();
              props.onKey(undefined);
            }
          }}
        >
          Forget this key
        </button>
      </p>
    </section>
  );
}
