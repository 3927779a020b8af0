import type { JSONSchema } from 'json-schema-to-ts';
import type { Db } from 'mongodb';
import type { ApplyOutcome } from '../../src/domain/event-time';
import { ajv, describeErrors, type Infer } from '../../src/validation';
import { type CloudEvent, InvalidMessage } from '../cloudevents';

/** What an event is about, as log fields: never an email. */
export type Subject = { user_id: string } | { course_key: string };

export interface HandlerContext<D> {
  db: Db;
  event: CloudEvent;
  data: D;
  /** DEFAULT_ORGANIZATION: the organization of an event that names none (src/domain/organization.ts). */
  defaultOrganization: string | null;
}

/** One event type: the schema of its `data` and what applying it means. */
export interface EventHandler {
  type: string;
  /** Validates `data` (throws InvalidMessage) and returns what logs may name it by: `{user_id}` or `{course_key}`. */
  parse(data: unknown): { data: unknown; subject: Subject };
  apply(ctx: HandlerContext<unknown>): Promise<ApplyOutcome>;
}

/**
 * Ties a `data` schema to its handler, with the type derived from the schema. The shared ajv
 * instance drops properties the schema does not declare, so a handler sees exactly the fields
 * its schema names (and stores nothing else).
 */
export function defineHandler<const S extends JSONSchema, D = Infer<S>>(def: {
  type: string;
  schema: S;
  subject(data: D): Subject;
  apply(ctx: HandlerContext<D>): Promise<ApplyOutcome>;
}): EventHandler {
  const validate = ajv.compile(def.schema as object);
  return {
    type: def.type,
    parse(data) {
      // ajv removes undeclared properties in place: validate a copy, never the decoded event.
      const copy: unknown = data === undefined ? undefined : structuredClone(data);
      if (!validate(copy)) throw new InvalidMessage(`data does not match the ${def.type} schema: ${describeErrors(validate.errors)}`);
      return { data: copy, subject: def.subject(copy as D) };
    },
    apply: (ctx) => def.apply(ctx as HandlerContext<D>),
  };
}
