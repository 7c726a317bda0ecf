import { toasts, useStore } from '../store.ts';

const dismiss = (id: number) => toasts.update((list) => list.filter((t) => t.id !== id));

/** Notifications, announced to screen readers (errors assertively). */
export function Toasts() {
  const list = useStore(toasts);
  return (
    <div class="toasts" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast ${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>
          {t.text}
          <button type="button" class="dismiss" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
