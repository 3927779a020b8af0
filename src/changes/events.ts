import type { FromSchema } from 'json-schema-to-ts';
import type { Document } from 'mongodb';
import { type Actor, CAUSES } from '../db/change-context';
import { COLLECTIONS, type CollectionName, type OutboxDoc } from '../db/collections';
import { TRACKED_RESOURCES } from '../db/outbox';
import { strictValidator } from '../validation';

const resourceOf = (c: CollectionName) => TRACKED_RESOURCES.get(c)!;

/**
 * The change events the service publishes (docs/events-published.md): CloudEvents 1.0 in structured mode (the
 * JSON envelope is the Kafka value, `content-type: application/cloudevents+json`), one type per
 * kind of record, in the openedx-events naming style under our own prefix. Each event carries the
 * record as it is now (or null: it is gone), never a delta, and a version that grows with every
 * event published, so a consumer that sees a duplicate or misses one still ends right. No PII:
 * users appear by id only. docs/events-published.md is the consumer's guide.
 */
export const EVENT_TYPE_PREFIX = 'org.openedx.course_access_groups';
const SOURCE_PREFIX = '/course-access-groups/organizations/';

const actorSchema = {
  type: 'object',
  description: 'Who caused the change: an administrator (`user_id`, `role`), the `cag` program, the LMS (an event) or the service itself.',
  properties: {
    type: { enum: ['user', 'cag', 'lms', 'system'] },
    user_id: { type: 'integer' },
    role: { enum: ['staff', 'site_admin'] },
  },
  required: ['type'],
  additionalProperties: false,
} as const;

const commonProperties = {
  organization: { type: 'string', minLength: 1, description: 'The organization the record belongs to now (or last belonged to).' },
  version: {
    type: 'integer',
    minimum: 1,
    description: 'Grows with every event the service publishes: for one record, a higher version is a newer state.',
  },
  cause: { enum: CAUSES, description: 'admin, rule, event, import, cascade (or system).' },
  actor: actorSchema,
  request_id: { type: ['string', 'null'], description: 'The X-Request-Id of the admin request, the id of the LMS event, or the `cag` run.' },
} as const;

const idSchema = { type: 'integer', minimum: 1 } as const;

const membershipStateSchema = {
  type: 'object',
  properties: { id: idSchema, user_id: idSchema, group_id: idSchema, automatic: { type: 'boolean' } },
  required: ['id', 'user_id', 'group_id', 'automatic'],
  additionalProperties: false,
} as const;

const groupStateSchema = {
  type: 'object',
  properties: { id: idSchema, name: { type: 'string' }, description: { type: 'string' } },
  required: ['id', 'name', 'description'],
  additionalProperties: false,
} as const;

const groupCourseStateSchema = {
  type: 'object',
  properties: { id: idSchema, course_id: { type: 'string' }, group_id: idSchema },
  required: ['id', 'course_id', 'group_id'],
  additionalProperties: false,
} as const;

const publicCourseStateSchema = {
  type: 'object',
  properties: { id: idSchema, course_id: { type: 'string' } },
  required: ['id', 'course_id'],
  additionalProperties: false,
} as const;

const membershipRuleStateSchema = {
  type: 'object',
  properties: { id: idSchema, name: { type: 'string' }, domain: { type: 'string' }, group_id: idSchema },
  required: ['id', 'name', 'domain', 'group_id'],
  additionalProperties: false,
} as const;

const siteConfigurationStateSchema = {
  type: 'object',
  properties: { ENABLE_COURSE_ACCESS_GROUPS: { type: 'boolean' } },
  required: ['ENABLE_COURSE_ACCESS_GROUPS'],
  additionalProperties: false,
} as const;

/** The `data` of one change type: the common fields and the record under `field` (null: gone). */
function changeData<const F extends string, const S extends object>(field: F, state: S) {
  return {
    type: 'object',
    properties: { ...commonProperties, [field]: { anyOf: [state, { type: 'null' }] } } as typeof commonProperties & {
      [K in F]: { anyOf: readonly [S, { type: 'null' }] };
    },
    required: ['organization', 'version', 'cause', 'actor', 'request_id', field] as const,
    additionalProperties: false,
  } as const;
}

const membershipChangedDataSchema = changeData('membership', membershipStateSchema);
const groupChangedDataSchema = changeData('group', groupStateSchema);
const groupCourseChangedDataSchema = changeData('group_course', groupCourseStateSchema);
const publicCourseChangedDataSchema = changeData('public_course', publicCourseStateSchema);
const membershipRuleChangedDataSchema = changeData('membership_rule', membershipRuleStateSchema);
const siteConfigurationChangedDataSchema = changeData('site_configuration', siteConfigurationStateSchema);

type MembershipState = FromSchema<typeof membershipStateSchema>;
type GroupState = FromSchema<typeof groupStateSchema>;
type GroupCourseState = FromSchema<typeof groupCourseStateSchema>;
type PublicCourseState = FromSchema<typeof publicCourseStateSchema>;
type MembershipRuleState = FromSchema<typeof membershipRuleStateSchema>;
type SiteConfigurationState = FromSchema<typeof siteConfigurationStateSchema>;

/** One kind of published record: its event type, the API's name for it, and its state from a stored document. */
interface ChangeKind<S> {
  type: string;
  /** The API resource (also the first part of `subject`, and the audit log's `resource`). */
  resource: string;
  /** The key of the record in `data`. */
  field: string;
  dataSchema: object;
  state(doc: Document): S;
}

function kind<S>(k: ChangeKind<S>): ChangeKind<S> {
  return k;
}

/** Every tracked collection's kind of change (src/db/outbox.ts lists the same collections). */
export const CHANGE_KINDS: Record<string, ChangeKind<unknown>> = {
  [COLLECTIONS.memberships]: kind<MembershipState>({
    type: `${EVENT_TYPE_PREFIX}.membership.changed.v1`,
    resource: resourceOf(COLLECTIONS.memberships),
    field: 'membership',
    dataSchema: membershipChangedDataSchema,
    state: (d) => ({ id: d.id, user_id: d.user, group_id: d.group, automatic: d.automatic === true }),
  }),
  [COLLECTIONS.groups]: kind<GroupState>({
    type: `${EVENT_TYPE_PREFIX}.group.changed.v1`,
    resource: resourceOf(COLLECTIONS.groups),
    field: 'group',
    dataSchema: groupChangedDataSchema,
    state: (d) => ({ id: d.id, name: d.name, description: d.description }),
  }),
  [COLLECTIONS.groupCourses]: kind<GroupCourseState>({
    type: `${EVENT_TYPE_PREFIX}.group_course.changed.v1`,
    resource: resourceOf(COLLECTIONS.groupCourses),
    field: 'group_course',
    dataSchema: groupCourseChangedDataSchema,
    state: (d) => ({ id: d.id, course_id: d.course, group_id: d.group }),
  }),
  [COLLECTIONS.publicCourses]: kind<PublicCourseState>({
    type: `${EVENT_TYPE_PREFIX}.public_course.changed.v1`,
    resource: resourceOf(COLLECTIONS.publicCourses),
    field: 'public_course',
    dataSchema: publicCourseChangedDataSchema,
    state: (d) => ({ id: d.id, course_id: d.course }),
  }),
  [COLLECTIONS.rules]: kind<MembershipRuleState>({
    type: `${EVENT_TYPE_PREFIX}.membership_rule.changed.v1`,
    resource: resourceOf(COLLECTIONS.rules),
    field: 'membership_rule',
    dataSchema: membershipRuleChangedDataSchema,
    state: (d) => ({ id: d.id, name: d.name, domain: d.domain, group_id: d.group }),
  }),
  [COLLECTIONS.siteConfigurations]: kind<SiteConfigurationState>({
    type: `${EVENT_TYPE_PREFIX}.site_configuration.changed.v1`,
    resource: resourceOf(COLLECTIONS.siteConfigurations),
    field: 'site_configuration',
    dataSchema: siteConfigurationChangedDataSchema,
    state: (d) => ({ ENABLE_COURSE_ACCESS_GROUPS: d.ENABLE_COURSE_ACCESS_GROUPS === true }),
  }),
};

export function changeKind(collection: CollectionName): ChangeKind<unknown> {
  const k = CHANGE_KINDS[collection];
  if (!k) throw new Error(`no change events for collection ${collection}`);
  return k;
}

/** The CloudEvents envelope as published (structured mode). */
const changeEventSchema = {
  type: 'object',
  properties: {
    specversion: { const: '1.0' },
    id: { type: 'string', minLength: 1, description: 'The same for a re-publication of the same change: a consumer may drop an id it has seen.' },
    source: { type: 'string', pattern: `^${SOURCE_PREFIX}` },
    type: { type: 'string', pattern: `^${EVENT_TYPE_PREFIX.replace(/\./g, '\\.')}\\.` },
    subject: { type: 'string', minLength: 1, description: '`<resource>/<record key>`, also the Kafka message key.' },
    time: { type: 'string', format: 'date-time', description: 'When the change was made.' },
    datacontenttype: { const: 'application/json' },
    data: { type: 'object' },
  },
  required: ['specversion', 'id', 'source', 'type', 'subject', 'time', 'datacontenttype', 'data'],
  additionalProperties: false,
} as const;

export type ChangeEvent = FromSchema<typeof changeEventSchema> & { data: Record<string, unknown> };

/** Events carry no names of operators: who ran `cag` is for the audit log only. */
function publicActor(actor: Actor): Record<string, unknown> {
  switch (actor.type) {
    case 'user':
      return { type: 'user', user_id: actor.user_id, role: actor.role };
    case 'cag':
      return { type: 'cag' };
    default:
      return { type: actor.type };
  }
}

export interface Change {
  entry: OutboxDoc;
  /** The record's index in `entry.k`. */
  index: number;
  /** The record as read at publication time (null: gone). */
  doc: Document | null;
  version: number;
}

/**
 * The event of one record of one outbox entry. `subject` (and the message key) is
 * `<resource>/<record key>`, the same for every change of the record, wherever it is, so one
 * partition keeps them in order. A site configuration that has no document is its defaults.
 */
export function buildChangeEvent({ entry, index, doc, version }: Change): { key: string; event: ChangeEvent } {
  const k = changeKind(entry.c);
  const recordKey = entry.k[index]!;
  const isSite = entry.c === COLLECTIONS.siteConfigurations;
  const state = doc ? k.state(doc) : isSite ? k.state({}) : null;
  const organization = (doc?.org as string | undefined) ?? entry.o;
  const subject = `${k.resource}/${recordKey}`;
  const event: ChangeEvent = {
    specversion: '1.0',
    id: `${entry._id}.${index}`,
    source: `${SOURCE_PREFIX}${encodeURIComponent(organization)}`,
    type: k.type,
    subject,
    time: entry.t.toISOString(),
    datacontenttype: 'application/json',
    data: {
      organization,
      version,
      cause: entry.cause,
      actor: publicActor(entry.actor),
      request_id: entry.rid,
      [k.field]: state,
    },
  };
  return { key: subject, event };
}

/** The Kafka message of an event: the JSON envelope, keyed by subject. */
export function toMessage({ key, event }: { key: string; event: ChangeEvent }) {
  return { key, value: JSON.stringify(event), headers: { 'content-type': 'application/cloudevents+json' } };
}

/**
 * Validates a built event against its envelope and its type's `data` schema (tests, and a
 * consumer's reference), refusing unknown fields.
 */
const envelopeErrors = strictValidator(changeEventSchema);
const dataErrors = new Map(Object.values(CHANGE_KINDS).map((k) => [k.type, strictValidator(k.dataSchema)]));

export function changeEventErrors(event: unknown): string[] {
  const envelope = envelopeErrors(event);
  if (envelope.length > 0) return envelope;
  const e = event as ChangeEvent;
  const errors = dataErrors.get(e.type);
  if (!errors) return [`unknown type ${e.type}`];
  return errors(e.data).map((x) => `/data${x.startsWith('/ ') ? x.slice(1) : x}`);
}
