import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import { type FieldErrors, Invalid } from './errors';

/**
 * The one ajv instance. Schemas are the single source of truth: they validate request bodies,
 * query strings, event payloads and the environment, give TypeScript their types (`FromSchema`)
 * and make the OpenAPI document. `x-message` is a schema annotation carrying the human message for a
 * `pattern`, `format`, `enum` or `const` failure. Unknown fields are dropped, as DRF ignores them
 * (strictValidator below reports them instead); `default`s fill what the environment leaves unset.
 */
export const ajv = new Ajv({ allErrors: true, verbose: true, removeAdditional: 'all', useDefaults: true, strict: true });
addFormats(ajv);
ajv.addVocabulary(['x-message', 'example']);

type AnySchema = { type?: unknown; properties?: Record<string, AnySchema> };

/**
 * Environment values are strings: those a schema's property declares integer, number or boolean
 * are converted first (as ajv's `coerceTypes` would, which would also coerce request bodies), so
 * that the schema checks the value. A string that is no such value is left for the schema to refuse.
 */
export function fromEnvironmentStrings(schema: AnySchema, raw: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(raw)) {
    const type = schema.properties?.[key]?.type;
    if (typeof value !== 'string') continue;
    if ((type === 'integer' || type === 'number') && value.trim() !== '' && !Number.isNaN(Number(value))) raw[key] = Number(value);
    else if (type === 'boolean' && (value === 'true' || value === 'false')) raw[key] = value === 'true';
  }
}

/**
 * A checker that refuses unknown fields instead of dropping them (the change events a consumer
 * may rely on): the shared instance validates a copy, and a field it dropped is reported.
 */
export function strictValidator(schema: object): (data: unknown) => string[] {
  const validate = ajv.compile(schema);
  return (data) => {
    const copy: unknown = structuredClone(data);
    if (!validate(copy)) return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    return droppedFields(data, copy);
  };
}

/** The places where `copy` lacks a field `original` has: `<path> must NOT have additional properties`, as ajv says it. */
function droppedFields(original: unknown, copy: unknown, path = ''): string[] {
  if (original === null || typeof original !== 'object' || copy === null || typeof copy !== 'object') return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(original)) {
    if (!(key in copy)) out.push(`${path || '/'} must NOT have additional properties`);
    else out.push(...droppedFields(value, (copy as Record<string, unknown>)[key], `${path}/${key}`));
  }
  return [...new Set(out)];
}

export type Infer<S extends JSONSchema> = FromSchema<S>;

function messageFor(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const own = (e.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
  if (e.keyword === 'required') return 'This field is required.';
  // A schema's own message says what a value outside its pattern or set is
  // (e.g. "Must be a valid boolean." for a query string outside its enum).
  if (typeof own === 'string' && ['pattern', 'format', 'enum', 'const'].includes(e.keyword)) return own;
  switch (e.keyword) {
    case 'type':
      if (e.data === null) return 'This field may not be null.';
      // A nullable field's type is reported as "integer,null": name the non-null one.
      switch (
        String(p.type)
          .split(',')
          .find((t) => t !== 'null')
      ) {
        case 'integer':
          return 'A valid integer is required.';
        case 'boolean':
          return 'Must be a valid boolean.';
        case 'array':
          return `Expected a list of items but got type "${typeof e.data}".`;
        case 'object':
          return 'Expected a dictionary of items.';
        default:
          return 'Not a valid string.';
      }
    case 'maxLength':
      return `Ensure this field has no more than ${String(p.limit)} characters.`;
    case 'minLength':
      return p.limit === 1 ? 'This field may not be blank.' : `Ensure this field has at least ${String(p.limit)} characters.`;
    case 'minimum':
      return `Ensure this value is greater than or equal to ${String(p.limit)}.`;
    case 'maximum':
      return `Ensure this value is less than or equal to ${String(p.limit)}.`;
    case 'maxItems':
      return `Ensure this field has no more than ${String(p.limit)} elements.`;
    case 'enum':
      return `"${String(e.data).slice(0, 100)}" is not a valid choice.`;
    default:
      return 'Enter a valid value.';
  }
}

/** ajv errors in DRF's shape, keyed by the top-level field. */
function toFieldErrors(errors: ErrorObject[]): FieldErrors {
  const out: FieldErrors = {};
  for (const e of errors) {
    const segments = e.instancePath.split('/').filter(Boolean);
    const field = segments[0] ?? (e.keyword === 'required' ? String((e.params as { missingProperty: string }).missingProperty) : 'non_field_errors');
    const message = messageFor(e);
    const list = out[field] ?? [];
    out[field] = list;
    if (!list.includes(message)) list.push(message);
  }
  return out;
}

/** A validator that returns the typed value or throws Invalid with DRF's field messages (a 400 over HTTP). */
export function validator<const S extends JSONSchema>(schema: S): (data: unknown) => FromSchema<S> {
  const validate = ajv.compile(schema as object);
  return (data) => {
    if (!validate(data)) throw new Invalid(toFieldErrors(validate.errors ?? []));
    return data as FromSchema<S>;
  };
}

/** A query string's boolean, in a spelling its schema accepted (src/http/query.ts, booleanParam). */
export const toBoolean = (raw: string | undefined): boolean | undefined => (raw === undefined ? undefined : raw === 'true' || raw === 'True' || raw === '1');

/** A query string's integer, as its schema accepted it (digits only). */
export const toInteger = (raw: string | undefined): number | undefined => (raw === undefined ? undefined : Number(raw));

/** One line naming what failed, for logs and dead-letter reasons. */
export function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; ');
}
