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
  /**
   * The type's records keep their history (docs/event-core.md): an event without `time` is
   * applied at its record's Kafka timestamp, and its history keeps the earliest one; no
   * `replace` is needed.
   */
  ordersItself?: boolean;
  /**
   * Places the event (one without `time`) again at its `stamp.time`, an earlier Kafka timestamp
   * than `from`, which it may have been applied at (docs/events.md). Absent: the type's effects
   * are not placed again (deletions: docs/decisions.md).
   */
  replace?(ctx: HandlerContext<unknown>, from: string): Promise<void>;
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
  ordersItself?: boolean;
  replace?(ctx: HandlerContext<D>, from: string): Promise<void>;
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
    ...(def.ordersItself ? { ordersItself: true } : {}),
    ...(def.replace ? { replace: (ctx, from) => def.replace!(ctx as HandlerContext<D>, from) } : {}),
  };
}
