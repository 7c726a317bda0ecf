/**
 * Data read from a host, refreshed on an interval while the connection is open. When the connection
 * is not open the last data stays visible but is marked as stale with its time, never as current.
 */
import type { HostadmClient } from '@hostadm/client/sdk/src/browser.ts';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { LinkState } from '../hosts.ts';
import { errorText } from '../store.ts';

export interface HostData<T> {
  data: T | undefined;
  error: string | undefined;
  updatedAt: Date | undefined;
  stale: boolean;
  reload: () => void;
}

export function useHostData<T>(client: HostadmClient, state: LinkState, read: (c: HostadmClient) => Promise<T>, intervalMs = 0): HostData<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [updatedAt, setUpdatedAt] = useState<Date | undefined>(undefined);
  const readRef = useRef(read);
  readRef.current = read;
  const reload = useCallback(() => {
    readRef
      .current(client)
      .then((value) => {
        setData(value);
        setError(undefined);
        setUpdatedAt(new Date());
      })
      .catch((err: unknown) => setError(errorText(err)));
  }, [client]);
  useEffect(() => {
    if (state !== 'open') return;
    reload();
    if (intervalMs <= 0) return;
    const timer = setInterval(reload, intervalMs);
    return () => clearInterval(timer);
  }, [client, state, intervalMs, reload]);
  return { data, error, updatedAt, stale: state !== 'open', reload };
}

export function Freshness(props: { data: HostData<unknown> }) {
  const { updatedAt, stale, error } = props.data;
  return (
    <p class={`freshness${stale ? ' stale' : ''}`} role="status">
      {error ? <span class="error">{error}</span> : null}
      {stale
        ? ` Not current: connection lost${updatedAt ? `; last read ${updatedAt.toLocaleTimeString()}` : ''}.`
        : updatedAt
          ? `Updated ${updatedAt.toLocaleTimeString()}`
          : 'Loading…'}
    </p>
  );
}
