import type { KafkaMessage } from 'kafkajs';
import type { Db } from 'mongodb';
import { runInChangeContext } from '../src/db/change-context';
import { Tenant } from '../src/db/tenant';
import { importUserBatch, type UserLine } from '../src/domain/import-users';
import { eventOrganization } from '../src/domain/organization';
import { type UserEventData, type UserEventKind, userFacts } from '../src/domain/user-event-data';
import type { Logger } from '../src/log';
import type { Metrics } from '../src/metrics';
import { type AvroDecoder, createMessageDecoder } from './avro';
import { type CloudEvent, InvalidMessage } from './cloudevents';
import { HANDLERS } from './handlers';
import { accountActivated } from './handlers/account-activated';
import { registrationCompleted } from './handlers/registration-completed';

/**
 * What the consumer does first with a run of one partition's messages: applies together those
 * it can, and returns their offsets. Every other message of the run is then handled alone, in
 * offset order, by the message handler (consumers/dispatch.ts), with its retries and DLQ.
 */
export type BatchHandler = (run: { topic: string; partition: number; messages: readonly KafkaMessage[] }) => Promise<Set<string>>;

/** The events applied together, and how each counts for activations (user-event-data.ts). */
const TOGETHER = new Map<string, UserEventKind>([
  [registrationCompleted.type, 'registration'],
  [accountActivated.type, 'activation'],
]);

interface Candidate {
  message: KafkaMessage;
  type: string;
  org: string;
  line: UserLine;
}

/**
 * The batch path of the event door. Onboarding is the case it is for: thousands of
 * registrations and activations of learners the service has never seen, each its own record.
 *
 * A run's registrations and activations that carry `time` go to importUserBatch (the import's
 * batch path: every record the run touches read with one `$in` per collection, new users
 * inserted in one command, their rule memberships in another, every write conditional on what
 * was read), organization by organization. importUserBatch itself takes only what it decides
 * exactly as the per-event path would (new users, and events their record already reflects);
 * everything else it answers `per-event`. A learner with more than one message in the run, or
 * with any message the batch does not take (an update, a retirement, a message it cannot read
 * yet), is left whole to the per-event path, so one learner's events are never split between
 * the two. Different learners' records are independent, so applying some of a run before the
 * rest changes no outcome (docs/events.md: only equal times of one record depend on arrival
 * order).
 *
 * The batch stops at the first message it cannot decode for a reason that may pass (the schema
 * registry away): that one, and what follows it, go per message. A failure of the batch's
 * writes is thrown; the consumer then handles the whole run per message, where each write is
 * a duplicate of what the batch did or finishes it (a claim left pending is finished by the
 * next event of its learner), so the run is applied once in effect either way.
 */
export function createBatchHandler(deps: {
  db: Db;
  log: Logger;
  metrics: Metrics;
  defaultOrganization?: string | null;
  avro?: AvroDecoder | null;
}): BatchHandler {
  const { db, log, metrics } = deps;
  const defaultOrganization = deps.defaultOrganization ?? null;
  const decode = createMessageDecoder(deps.avro ?? null);

  /** The run's candidates, and every user id some message of the run names (decoded, of a handled type). */
  async function read(messages: readonly KafkaMessage[]): Promise<{ candidates: Candidate[]; named: Map<string, number> }> {
    const candidates: Candidate[] = [];
    const named = new Map<string, number>();
    for (const message of messages) {
      let event: CloudEvent;
      try {
        event = await decode(message);
      } catch (err) {
        if (err instanceof InvalidMessage) continue; // never applied: the per-message path dead-letters it
        break;
      }
      const handler = HANDLERS.get(event.type);
      if (!handler) continue;
      let parsed: ReturnType<typeof handler.parse>;
      try {
        parsed = handler.parse(event.data);
      } catch {
        continue; // invalid: never applied
      }
      if (!('user_id' in parsed.subject)) continue;
      const user = parsed.subject.user_id;
      named.set(user, (named.get(user) ?? 0) + 1);
      const kind = TOGETHER.get(event.type);
      if (kind === undefined || event.time === undefined) continue;
      const data = parsed.data as UserEventData;
      let org: string;
      try {
        org = eventOrganization(data.organization, { defaultOrganization });
      } catch {
        continue; // no organization: refused per message
      }
      candidates.push({ message, type: event.type, org, line: { facts: userFacts(data, kind), at: event.stamp } });
    }
    return { candidates, named };
  }

  return async ({ topic, partition, messages }) => {
    const started = performance.now();
    const { candidates, named } = await read(messages);
    const alone = candidates.filter((c) => named.get(String(c.line.facts.id)) === 1);
    const done = new Set<string>();
    if (alone.length < 2) return done; // nothing to gain: per message
    const byOrg = new Map<string, Candidate[]>();
    for (const c of alone) {
      const ofOrg = byOrg.get(c.org);
      if (ofOrg) ofOrg.push(c);
      else byOrg.set(c.org, [c]);
    }
    // What the events change is the LMS's doing; the changes of a batch name no single event (request_id null).
    const context = { cause: 'event', actor: { type: 'lms' }, requestId: null, audit: false } as const;
    const outcomes = new Map<string, number>();
    for (const [org, ofOrg] of byOrg) {
      const results = await runInChangeContext(context, () =>
        importUserBatch(
          new Tenant(db, org),
          ofOrg.map((c) => c.line),
        ),
      );
      results.forEach((outcome, i) => {
        if (outcome === 'per-event') return;
        const c = ofOrg[i]!;
        done.add(c.message.offset);
        metrics.eventsHandled.inc({ type: c.type, outcome });
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      });
    }
    if (done.size > 0) {
      // The batch's time shared by its events: the handler-duration histogram keeps one observation per event.
      const each = (performance.now() - started) / 1000 / done.size;
      for (const c of alone) if (done.has(c.message.offset)) metrics.eventDuration.observe({ type: c.type }, each);
    }
    log.debug({ topic, partition, first_offset: messages[0]?.offset, together: done.size, outcomes: Object.fromEntries(outcomes) }, 'events applied together');
    return done;
  };
}
