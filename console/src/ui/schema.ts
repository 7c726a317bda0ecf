/**
 * Reading a contract's zod schema to build a form: its fields with their descriptions, types and
 * whether they are required, and the schema's own verdict on the values (the same checks the SDK and
 * the agent run), reported per field.
 */
import type { z } from 'zod';

export type FieldKind = 'text' | 'password' | 'number' | 'boolean' | 'choice' | 'list' | 'json';

export interface FieldSpec {
  name: string;
  kind: FieldKind;
  required: boolean;
  description: string;
  choices?: string[];
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, string>;
  shape?: Record<string, z.ZodType>;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

function unwrap(schema: z.ZodType): { inner: z.ZodType; optional: boolean; description: string } {
  let inner = schema;
  let optional = false;
  let description = schema.description ?? '';
  for (;;) {
    const def = defOf(inner);
    if (def.type === 'optional' || def.type === 'default' || def.type === 'nullable') optional = true;
    const next = def.innerType ?? (def.type === 'pipe' ? def.in : undefined);
    if (!next) break;
    inner = next;
    description ||= inner.description ?? '';
  }
  return { inner, optional, description };
}

function kindOf(name: string, schema: z.ZodType): Pick<FieldSpec, 'kind' | 'choices'> {
  const def = defOf(schema);
  if (def.type === 'string') return { kind: /password/i.test(name) ? 'password' : 'text' };
  if (def.type === 'number' || def.type === 'int') return { kind: 'number' };
  if (def.type === 'boolean') return { kind: 'boolean' };
  if (def.type === 'enum' && def.entries) return { kind: 'choice', choices: Object.values(def.entries) };
  if (def.type === 'array') return { kind: 'list' };
  if (def.type === 'union' && def.options) {
    const kinds = def.options.map((o) => kindOf(name, unwrap(o).inner));
    if (kinds.some((k) => k.kind === 'boolean')) return { kind: 'boolean' };
    if (kinds.some((k) => k.kind === 'list')) return { kind: 'list' };
    return kinds.find((k) => k.kind !== 'json') ?? { kind: 'json' };
  }
  return { kind: 'json' };
}

/** The form fields of an action's argument schema, or undefined when it is not an object (a JSON editor then). */
export function fieldsOf(args: z.ZodType): FieldSpec[] | undefined {
  const shape = defOf(unwrap(args).inner).shape;
  if (!shape) return undefined;
  return Object.entries(shape).map(([name, schema]) => {
    const { inner, optional, description } = unwrap(schema);
    return { name, required: !optional, description, ...kindOf(name, inner) };
  });
}

/** Form values (strings, as typed) into the action's arguments: empty optional fields left out. */
export function argsFrom(fields: FieldSpec[], values: Record<string, string>): { args: Record<string, unknown>; errors: Record<string, string> } {
  const args: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const raw = (values[f.name] ?? '').trim();
    if (raw === '') {
      if (f.required) errors[f.name] = 'is required';
      continue;
    }
    if (f.kind === 'number') args[f.name] = Number(raw);
    else if (f.kind === 'boolean') args[f.name] = raw === 'true';
    else if (f.kind === 'list')
      args[f.name] = raw
        .split(/[\n,]/)
        .map((s) => s.trim())
        .filter(Boolean);
    else if (f.kind === 'json') {
      try {
        args[f.name] = JSON.parse(raw);
      } catch {
        errors[f.name] = 'is not valid JSON';
      }
    } else args[f.name] = f.kind === 'password' ? values[f.name] : raw;
  }
  return { args, errors };
}

/** The schema's verdict, keyed by the first path element (`_` for the whole object). */
export function validate(schema: z.ZodType, args: unknown): Record<string, string> {
  const result = schema.safeParse(args);
  if (result.success) return {};
  const errors: Record<string, string> = {};
  for (const issue of result.error.issues) {
    const field = issue.path.length > 0 ? String(issue.path[0]) : '_';
    errors[field] ??= issue.message;
  }
  return errors;
}

/** Actions whose effect cannot be taken back ask for a confirmation first. */
export function isDestructive(action: string): boolean {
  return /delete|remove|destroy|kill|halt|reboot|shutdown|stop|disable|rollback|rename|uninstall|wipe|reset|clear|close|revoke|unregister/i.test(action);
}
