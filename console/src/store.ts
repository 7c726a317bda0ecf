/** A small observable value and its Preact hook: enough state management for this console. */
import { useEffect, useState } from 'preact/hooks';

export class Store<T> {
  private listeners = new Set<(value: T) => void>();
  private current: T;
  constructor(initial: T) {
    this.current = initial;
  }
  get value(): T {
    return this.current;
  }
  set(value: T): void {
    this.current = value;
    for (const listener of this.listeners) listener(value);
  }
  update(change: (value: T) => T): void {
    this.set(change(this.current));
  }
  subscribe(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export function useStore<T>(store: Store<T>): T {
  const [value, setValue] = useState(store.value);
  useEffect(() => {
    setValue(store.value);
    return store.subscribe(setValue);
  }, [store]);
  return value;
}

export interface Toast {
  id: number;
  kind: 'info' | 'success' | 'error';
  text: string;
}

export const toasts = new Store<Toast[]>([]);
let toastSeq = 0;

export function toast(kind: Toast['kind'], text: string): void {
  const id = ++toastSeq;
  toasts.update((list) => [...list.slice(-4), { id, kind, text }]);
  setTimeout(() => toasts.update((list) => list.filter((t) => t.id !== id)), kind === 'error' ? 12_000 : 6_000);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
