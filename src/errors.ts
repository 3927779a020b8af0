/**
 * The service's own errors, thrown by storage, domain rules and validation, and known by no
 * door; every error class of the service extends ServiceError. Each door says what they mean to its users in one place: the HTTP error
 * middleware (src/http/error-responses.ts: the contract's status and DRF-shaped body) and `cag`
 * (src/cli: an item skipped, or an exit code and a message); the consumer dead-letters an event
 * a domain rule refuses (consumers/dispatch.ts).
 */

/**
 * The one error base. `retriable` says whether the same operation may succeed later unchanged
 * (kafkajs's notion): the consumer retries a retriable failure until it succeeds and gives any
 * other a bounded number of attempts before the dead-letter topic.
 */
export abstract class ServiceError extends Error {
  abstract readonly retriable: boolean;
}

/** A dependency (the database, the schema registry, the broker) cannot be reached now. */
export class DependencyUnavailable extends ServiceError {
  override readonly name: string = 'DependencyUnavailable';
  readonly retriable = true;
  constructor(
    readonly dependency: string,
    override readonly cause?: unknown,
  ) {
    super(`${dependency} unavailable${cause instanceof Error ? `: ${cause.message}` : ''}`);
  }
}

/** Messages per field, in DRF's validation shape: `{"field": ["message"]}` or `{"non_field_errors": [...]}`. */
export type FieldErrors = Record<string, string[]>;

/** One line naming every message (fields other than `non_field_errors` by name), for logs and reasons. */
function summary(fields: FieldErrors): string {
  return Object.entries(fields)
    .map(([field, messages]) => (field === 'non_field_errors' ? messages.join(' ') : `${field}: ${messages.join(' ')}`))
    .join('; ');
}

/** Input the rules refuse, with a message per field (the API answers 400 with `fields` as its body). */
export class Invalid extends ServiceError {
  override readonly name: string = 'Invalid';
  readonly retriable = false;
  constructor(readonly fields: FieldErrors) {
    super(summary(fields));
  }
}

/** Refused because the record, or the one the change would make, already exists: DRF answers it as invalid input (400). */
export class Conflict extends Invalid {
  override readonly name: string = 'Conflict';
}

/** No such record (in the organization asked about): the API answers 404. */
export class NotFound extends ServiceError {
  override readonly name: string = 'NotFound';
  readonly retriable = false;
  constructor() {
    super('Not found.');
  }
}

/** Input refused on one field. */
export const fieldError = (field: string, message: string) => new Invalid({ [field]: [message] });

/** DRF's message for a reference to a record that does not exist (in the request's organization). */
export const doesNotExist = (value: unknown) => `Invalid pk "${String(value)}" - object does not exist.`;
