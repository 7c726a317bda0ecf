/**
 * A form for one action of a class contract: a labelled input per argument with the contract's
 * description, type and required mark; the contract's schema checks the values before anything is
 * sent (the same checks the host runs), and the host's own refusal is shown with its message and the
 * fields it names. Destructive actions ask first. The reply is shown as a table or as JSON.
 */
import { HostadmRequestError, type HostadmClient } from '@hostadm/client/sdk/src/browser.ts';
import type { ActionContract } from '@hostadm/shared/protocol/define.ts';
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { errorText, toast } from '../store.ts';
import { confirmAction } from './confirm.tsx';
import { argsFrom, fieldsOf, isDestructive, validate, type FieldSpec } from './schema.ts';
import { DataTable, recordColumns, rowsOf } from './table.tsx';

export interface ActionFormProps {
  client: HostadmClient;
  namespace: 'admin' | 'rpc';
  className: string;
  action: string;
  contract: ActionContract;
  title?: string;
  /** Called with the reply after success (a page refreshes its list). */
  onDone?: (reply: unknown) => void;
  showReply?: boolean;
  initial?: Record<string, string>;
}

export function ActionForm(props: ActionFormProps) {
  const fields = useMemo(() => fieldsOf(props.contract.args), [props.contract]);
  const [values, setValues] = useState<Record<string, string>>(props.initial ?? {});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [reply, setReply] = useState<unknown>(undefined);
  const [asJson, setAsJson] = useState(false);
  const id = `${props.className}-${props.action}`;

  async function submit(event: Event) {
    event.preventDefault();
    let args: unknown;
    let found: Record<string, string>;
    if (fields) {
      const parsed = argsFrom(fields, values);
      args = parsed.args;
      found = { ...validate(props.contract.args, args), ...parsed.errors };
    } else {
      try {
        args = JSON.parse(values._json || '{}');
        found = validate(props.contract.args, args);
      } catch {
        found = { _json: 'is not valid JSON' };
      }
    }
    setErrors(found);
    if (Object.keys(found).length > 0) {
      document.getElementById(`${id}-${Object.keys(found)[0] === '_' ? 'form' : Object.keys(found)[0]}`)?.focus();
      return;
    }
    if (
      isDestructive(props.action) &&
      !(await confirmAction(`${props.action}?`, `Run ${props.className} ${props.action} with ${JSON.stringify(args)}? This cannot be undone.`, {
        confirm: props.action,
      }))
    )
      return;
    setBusy(true);
    try {
      const result = props.contract.queued
        ? (await props.client.start(props.namespace, props.className, props.action, args)).ack
        : await props.client.call(props.namespace, props.className, props.action, args);
      setReply(result);
      toast('success', `${props.className} ${props.action}: ${props.contract.queued ? 'queued' : 'done'}`);
      props.onDone?.(result);
    } catch (err) {
      if (err instanceof HostadmRequestError && err.fieldErrors.length > 0) {
        const byField: Record<string, string> = {};
        for (const f of err.fieldErrors) byField[f.field.split('.')[0] || '_'] ??= f.message;
        setErrors(byField);
      } else setErrors({ _: errorText(err) });
      toast('error', `${props.className} ${props.action} failed: ${errorText(err)}`);
    } finally {
      setBusy(false);
    }
  }

  const set = (name: string, value: string) => setValues((v) => ({ ...v, [name]: value }));
  const rows = reply === undefined ? undefined : rowsOf(reply);
  return (
    <form class="action-form" id={`${id}-form`} tabIndex={-1} onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{props.title ?? props.action}</h3>
      <p class="hint">{props.contract.description}</p>
      {fields ? (
        fields.map((f) => <Field key={f.name} id={id} field={f} value={values[f.name] ?? ''} error={errors[f.name]} onChange={set} />)
      ) : (
        <Field
          id={id}
          field={{ name: '_json', kind: 'json', required: true, description: props.contract.args.description ?? 'Arguments as JSON' }}
          value={values._json ?? ''}
          error={errors._json}
          onChange={set}
        />
      )}
      {errors._ && (
        <p class="error" role="alert">
          {errors._}
        </p>
      )}
      <button type="submit" class={isDestructive(props.action) ? 'danger' : 'primary'} disabled={busy}>
        {busy ? 'Working…' : (props.title ?? props.action)}
      </button>
      {props.showReply !== false && reply !== undefined && (
        <section class="reply" aria-label="Reply">
          {rows && (
            <button type="button" onClick={() => setAsJson(!asJson)}>
              {asJson ? 'Show as table' : 'Show as JSON'}
            </button>
          )}
          {rows && !asJson ? <DataTable caption="Reply" rows={rows} columns={recordColumns(rows)} /> : <pre>{JSON.stringify(reply, null, 2)}</pre>}
        </section>
      )}
    </form>
  );
}

function Field(props: { id: string; field: FieldSpec; value: string; error: string | undefined; onChange: (name: string, value: string) => void }) {
  const { field } = props;
  const inputId = `${props.id}-${field.name}`;
  const common = {
    id: inputId,
    name: field.name,
    'aria-invalid': props.error ? true : undefined,
    'aria-describedby': `${inputId}-help${props.error ? ` ${inputId}-error` : ''}`,
    'aria-required': field.required,
  };
  const onInput = (e: { currentTarget: { value: string } }) => props.onChange(field.name, e.currentTarget.value);
  let input: ComponentChildren;
  if (field.kind === 'choice' || field.kind === 'boolean') {
    const choices = field.kind === 'boolean' ? ['true', 'false'] : (field.choices ?? []);
    input = (
      <select {...common} value={props.value} onChange={onInput}>
        <option value="">{field.required ? 'choose…' : '(not set)'}</option>
        {choices.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
    );
  } else if (field.kind === 'json' || field.kind === 'list') {
    input = <textarea {...common} rows={field.kind === 'json' ? 4 : 2} value={props.value} onInput={onInput} />;
  } else {
    input =
      field.kind === 'password' ? (
        <input {...common} type="password" autocomplete="new-password" value={props.value} onInput={onInput} />
      ) : field.kind === 'number' ? (
        <input {...common} type="number" autocomplete="off" value={props.value} onInput={onInput} />
      ) : (
        <input {...common} type="text" autocomplete="off" value={props.value} onInput={onInput} />
      );
  }
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={inputId}>
        {field.name === '_json' ? 'Arguments (JSON)' : field.name}
        {field.required && (
          <abbr class="required" title="required">
            *
          </abbr>
        )}
        <span class="type">{field.kind === 'list' ? 'list (one per line or comma-separated)' : field.kind}</span>
      </label>
      {input}
      <small id={`${inputId}-help`}>{field.description}</small>
      {props.error && (
        <p id={`${inputId}-error`} class="error" role="alert">
          {field.name === '_json' ? '' : `${field.name}: `}
          {props.error}
        </p>
      )}
    </div>
  );
}
