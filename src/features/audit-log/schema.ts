/** JSON Schemas of the read-only `audit-log` resource: validation, types and OpenAPI. */
import { CAUSES } from '../../db/change-context';
import { TRACKED_RESOURCES } from '../../db/outbox';
import { organizationProperties, pageProperties } from '../../http/query';

const AUDITED_RESOURCES = [...TRACKED_RESOURCES.values()];

const recordFields = {
  type: ['object', 'null'],
  description: "The record's stored fields (`id`, and e.g. `user`, `group` and `automatic` for a membership); null: it did not exist.",
} as const;

export const auditRecordSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'Unique; records of one change share its prefix.' },
    time: { type: 'string', format: 'date-time', description: 'When the change was made.' },
    organization: { type: 'string' },
    actor: {
      type: 'object',
      description: "An administrator (`type: user`, the token's `user_id` and `role`), or `cag` with its operator (`type: cag`, `operator`).",
      properties: {
        type: { enum: ['user', 'cag', 'lms', 'system'] },
        user_id: { type: 'integer' },
        role: { enum: ['staff', 'site_admin'] },
        operator: { type: 'string' },
      },
      required: ['type'],
      additionalProperties: false,
    },
    action: { enum: ['create', 'update', 'delete'] },
    resource: { enum: AUDITED_RESOURCES },
    resource_id: { type: 'string', description: "The record's id (the organization, for the site configuration)." },
    cause: { enum: CAUSES, description: 'admin (the request itself), rule (a membership a rule made), cascade (a group deletion), import (`cag`).' },
    request_id: { type: ['string', 'null'], description: "The request's X-Request-Id (for `cag`, its run id)." },
    before: recordFields,
    after: recordFields,
  },
  required: ['id', 'time', 'organization', 'actor', 'action', 'resource', 'resource_id', 'cause', 'request_id', 'before', 'after'],
  additionalProperties: false,
} as const;

export const auditListQuerySchema = {
  type: 'object',
  properties: {
    ...pageProperties,
    ...organizationProperties,
    resource: { type: 'string', enum: AUDITED_RESOURCES, 'x-message': 'Must be one of the audited resources.', description: 'Only changes of this resource.' },
    resource_id: { type: 'string', minLength: 1, maxLength: 255, description: 'Only changes of the record with this id (with `resource`, of that resource).' },
    actor: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Only changes by this actor: a user id (`42`), or `cag:<operator>`.',
    },
    since: {
      type: 'string',
      format: 'date-time',
      'x-message': 'Enter a valid date/time (RFC 3339, with a time zone).',
      description: 'Only changes at or after this time.',
    },
    until: {
      type: 'string',
      format: 'date-time',
      'x-message': 'Enter a valid date/time (RFC 3339, with a time zone).',
      description: 'Only changes before this time.',
    },
  },
  additionalProperties: false,
} as const;
