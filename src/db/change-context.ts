import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who and what caused the writes running now. Each door sets it around its work (HTTP
 * middleware for admin requests, the consumer around a handler, the `cag` program around a
 * command) and src/db reads it when a write opens its outbox intent; domain functions only say
 * when a write is a consequence (a rule, a cascade). So the domain never learns about HTTP,
 * and no function signature carries an actor.
 */
export type Cause =
  /** an administrator's request (admin API) */
  | 'admin'
  /** a membership rule (on an event, an import line or "apply") */
  | 'rule'
  /** an LMS event */
  | 'event'
  /** the `cag` program (import, import-config) */
  | 'import'
  /** the consequence of deleting or moving another record */
  | 'cascade'
  /** a write outside any door (maintenance scripts, tests) */
  | 'system';

export const CAUSES: readonly Cause[] = ['admin', 'rule', 'event', 'import', 'cascade', 'system'];

export type Actor =
  /** the token's `user_id`, as platform staff or a site administrator */
  | { type: 'user'; user_id: number; role: 'staff' | 'site_admin' }
  /** `cag`, run by the operator named by CAG_OPERATOR (else USER) */
  | { type: 'cag'; operator: string }
  /** the LMS, through its event stream */
  | { type: 'lms' }
  | { type: 'system' };

export interface ChangeContext {
  cause: Cause;
  actor: Actor;
  /** The request id (HTTP), the event id (consumer) or the run id (`cag`). */
  requestId: string | null;
  /** Whether writes in this context go to the audit trail (admin API and `cag`). */
  audit: boolean;
}

const SYSTEM: ChangeContext = Object.freeze({ cause: 'system', actor: Object.freeze({ type: 'system' }), requestId: null, audit: false });

const storage = new AsyncLocalStorage<ChangeContext>();

export function currentChangeContext(): ChangeContext {
  return storage.getStore() ?? SYSTEM;
}

/** Runs `fn` with every write it makes attributed to `context`. */
export function runInChangeContext<T>(context: ChangeContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** Runs `fn` with the current context's cause replaced: a domain function saying "this is a rule's (a cascade's) doing". */
export function withCause<T>(cause: Cause, fn: () => T): T {
  return storage.run({ ...currentChangeContext(), cause }, fn);
}

/** The actor as a string the audit log filters by: the user id, or `cag:<operator>`. */
export function actorId(actor: Actor): string {
  switch (actor.type) {
    case 'user':
      return String(actor.user_id);
    case 'cag':
      return `cag:${actor.operator}`;
    default:
      return actor.type;
  }
}
