/** One modal question at a time (a native <dialog>: focus is trapped and Escape cancels). */
import { useEffect, useRef } from 'preact/hooks';
import { Store, useStore } from '../store.ts';

interface Question {
  title: string;
  text: string;
  confirm: string;
  danger: boolean;
  answer: (ok: boolean) => void;
}

const question = new Store<Question | null>(null);

export function confirmAction(title: string, text: string, options: { confirm?: string; danger?: boolean } = {}): Promise<boolean> {
  return new Promise((answer) => question.set({ title, text, confirm: options.confirm ?? 'Confirm', danger: options.danger ?? true, answer }));
}

export function ConfirmDialog() {
  const q = useStore(question);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (q && ref.current && !ref.current.open) ref.current.showModal();
  }, [q]);
  if (!q) return null;
  const close = (ok: boolean) => {
    ref.current?.close();
    question.set(null);
    q.answer(ok);
  };
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" aria-describedby="confirm-text" onCancel={() => close(false)}>
      <h2 id="confirm-title">{q.title}</h2>
      <p id="confirm-text">{q.text}</p>
      <div class="buttons">
        <button type="button" onClick={() => close(false)}>
          Cancel
        </button>
        <button type="button" class={q.danger ? 'danger' : 'primary'} onClick={() => close(true)}>
          {q.confirm}
        </button>
      </div>
    </dialog>
  );
}
