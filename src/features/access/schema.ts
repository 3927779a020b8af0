/** JSON Schemas of the access-decision API (docs/api.md, access decisions): validation, types and OpenAPI. */
import { DECISION_REASONS } from '../../domain/access-decisions';

const ACCESS_ACTIONS = ['course.enroll', 'course.see_in_catalog', 'course.see_about_page', 'course.see_exists'] as const;

/** The most course ids one batch may ask about. */
const MAX_BATCH = 1000;

const action = { type: 'string', enum: ACCESS_ACTIONS, description: 'What the learner wants to do.' } as const;
const courseId = { type: 'string', minLength: 1, maxLength: 255, example: 'course-v1:ORG+NUM+RUN' } as const;
const userId = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;

/** `GET access/`: the query string (user_id arrives as text; the route turns digits into a number first). */
export const accessQuerySchema = {
  type: 'object',
  properties: {
    course_id: courseId,
    action,
    user_id: { ...userId, description: 'The learner; absent for an anonymous visitor.' },
  },
  required: ['course_id', 'action'],
  additionalProperties: false,
} as const;

export const batchRequestSchema = {
  type: 'object',
  properties: {
    action,
    user_id: { ...userId, type: ['integer', 'null'], description: 'The learner; null or absent for an anonymous visitor.' },
    course_ids: { type: 'array', items: courseId, maxItems: MAX_BATCH },
  },
  required: ['action', 'course_ids'],
  additionalProperties: false,
} as const;

const batchResultSchema = {
  type: 'object',
  properties: {
    course_id: { type: 'string' },
    allowed: { type: 'boolean' },
    reason: { type: 'string', enum: [...DECISION_REASONS, 'unknown_course'] },
  },
  required: ['course_id', 'allowed', 'reason'],
  additionalProperties: false,
} as const;

export const batchResponseSchema = {
  type: 'object',
  properties: {
    results: { type: 'array', items: batchResultSchema, description: 'One per requested id, in request order.' },
  },
  required: ['results'],
  additionalProperties: false,
} as const;
