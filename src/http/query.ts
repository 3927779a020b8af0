import type { ParsedUrlQuery } from 'node:querystring';
import type { JSONSchema } from 'json-schema-to-ts';
import { validator } from '../validation';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination';

/**
 * Query strings, in one place. Every list's query string has a JSON Schema (properties are the
 * parameters, each a string schema, as a query string carries strings); the same schema
 * validates the request, types the parsed result and becomes the OpenAPI `parameters`. Unknown
 * parameters are ignored; a repeated parameter counts with its last value, as Django's
 * `QueryDict.get` reads it.
 */

/** A non-negative integer written in decimal. */
const nonNegativeInteger = (message: string) => ({ type: 'string', pattern: '^[0-9]{1,15}$', 'x-message': message }) as const;

/** The spellings of a boolean the contract accepts (docs/api.md, lists); toBoolean (src/validation.ts) reads them. */
export const booleanParam = {
  type: 'string',
  enum: ['true', 'false', 'True', 'False', '1', '0'],
  'x-message': 'Must be a valid boolean.',
} as const;

export const integerParam = nonNegativeInteger('A valid integer is required.');

export const searchParam = {
  type: 'string',
  maxLength: 1000,
  description:
    'Case-insensitive substring search. Terms are split on spaces and commas; each must match one of the fields. ' + 'Characters are literal, never a pattern.',
} as const;

/** Parameters every endpoint under the prefix accepts. */
export const organizationProperties = {
  organization_uuid: {
    type: 'string',
    description: 'Platform staff only: act on this organization (anyone else who passes it gets 403).',
  },
} as const;

/** DRF LimitOffsetPagination's parameters, with the contract's strictness. */
export const pageProperties = {
  limit: {
    ...nonNegativeInteger('A valid non-negative integer is required.'),
    description: `Page size: default ${DEFAULT_LIMIT} (also for 0), at most ${MAX_LIMIT} (larger values are capped).`,
  },
  offset: { ...nonNegativeInteger('A valid non-negative integer is required.'), description: 'Items to skip.' },
} as const;

/** The query string of a plain list: pagination and the organization. */
export const listQuerySchema = {
  type: 'object',
  properties: { ...pageProperties, ...organizationProperties },
  additionalProperties: false,
} as const;

/** The query string of an endpoint that is not a list. */
export const plainQuerySchema = {
  type: 'object',
  properties: organizationProperties,
  additionalProperties: false,
} as const;

interface QuerySchema {
  type: 'object';
  properties: Record<string, object>;
  additionalProperties: false;
}

/** One value per parameter: the last one given. */
export function lastValues(query: ParsedUrlQuery | Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    const last: unknown = Array.isArray(value) ? value[value.length - 1] : value;
    if (typeof last === 'string') out[name] = last;
  }
  return out;
}

/** A parser for one query schema: validates (400 in DRF's shape naming the parameter) and types. */
export function queryParser<const S extends JSONSchema & QuerySchema>(schema: S) {
  const validate = validator(schema);
  return (query: ParsedUrlQuery) => validate(lastValues(query));
}

/** OpenAPI 3.1 query parameters made from a query schema. */
export function queryParameters(schema: QuerySchema) {
  return Object.entries(schema.properties).map(([name, property]) => {
    const { description, ...rest } = property as Record<string, unknown>;
    return { name, in: 'query', required: false, ...(description ? { description } : {}), schema: rest };
  });
}
