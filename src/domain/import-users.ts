import { randomUUID } from 'node:crypto';
import { withCause } from '../db/change-context';
import { recordAfterWrite } from '../db/change-log';
import { COLLECTIONS, type LearnerRecordDoc, type MembershipDoc } from '../db/collections';
import { indexNewUsers } from '../db/search-index';
import type { Tenant } from '../db/tenant';
import { learnerRecords } from '../db/user-records';
import { entryOf, isLegacyDuplicate } from './arrivals';
import { type ApplyOutcome, asStamp, type EventStamp } from './event-time';
import type { LearnerEntry } from './learner-fold';
import {
  afterProjection,
  completeArrivalRule,
  firstRecord,
  isProjected,
  learnerHistory,
  newMark,
  Projection,
  project,
  type UserFacts,
  userEntry,
} from './learners';
import { syncUserGroups, userGroupFacts } from './list-facts';
import { type Arriving, arrive } from './record-history';
import { matchRules } from './rule-match';

/**
 * What the batch did with one user: the outcome applying it as an event would have had, or
 * `per-event` when the batch left it alone and the caller must apply it as an event (one by one).
 */
export type BatchOutcome = ApplyOutcome | 'per-event';

/**
 * One user as an activation-capable event brings it (a registration, an activation, an import
 * line): the user, and the event's time and identity.
 */
export interface UserLine {
  facts: UserFacts;
  at: EventStamp;
}

/** The users as lines of one time, as `cag import` reads them (every line of a run has the run's time). */
export const linesAt = (users: readonly UserFacts[], time: string): UserLine[] => users.map((facts) => ({ facts, at: asStamp(time) }));

/**
 * Applies many registrations or activations of one organization at once, with the same fold as
 * one by one (learners.ts): each line's entry arrives in its learner's history and the record is
 * what `learnerRecordOf` makes of it. Only the storage is batched: the records read with one `$in`,
 * the rules with another, new learners' records inserted in one command, their memberships in
 * one more, their grams and list facts in a few. Two kinds of line are decided here:
 * - **a duplicate** whose record's projection is complete (`projected`): nothing to write;
 * - **a new learner** (no record): inserted, then projected in bulk.
 * Every other line (a learner with a record, whose compare-and-set one by one is the same write;
 * a second line for the same id) is answered `per-event`. A record written by someone else after
 * the insert (a retirement, a move, an administrator) is projected again from what it is then,
 * exactly as that writer's own projection would: the last projection is of the newest record.
 * New records are inserted already marked projected, each with the batch's token, so that no
 * second write of each is needed: the batch's intent, written before them and deleted after all
 * that follows from them, is what says they are not yet (a process that dies in between leaves
 * it to a redelivery, or to the sweep: learners.ts `finishAbandonedProjections`).
 */
export async function importUserBatch(tenant: Tenant, batch: readonly UserLine[]): Promise<BatchOutcome[]> {
  const outcomes: BatchOutcome[] = batch.map(() => 'per-event');
  const firsts = firstLineOfEachId(batch);
  const lines = [...firsts.keys()];
  const records = learnerRecords(tenant.db);
  const [stored, matches] = await Promise.all([
    records.readMany(lines.map((l) => l.facts.id)),
    matchRules(
      tenant,
      lines.filter((l) => l.facts.is_active).map((l) => l.facts),
    ),
  ]);
  const ruleOf = new Map(matches.map((m) => [m.user, m.rule.group]));
  const pending = await records.pendingBatches([...stored.values()]);
  const token = randomUUID();
  const mark = newMark(token, tenant.org);
  const fresh: { line: UserLine; doc: LearnerRecordDoc }[] = [];
  for (const line of lines) {
    const doc = stored.get(line.facts.id) ?? null;
    if (doc) {
      const { stamp, base } = entryOf(line.at);
      const entry = { ...base, ...userEntry(line.facts, tenant.org, true, ruleOf.get(line.facts) ?? null) } as Arriving<LearnerEntry>;
      // A duplicate whose projection is complete writes nothing; anything else is the learner's compare-and-set, one by one.
      const duplicate = isLegacyDuplicate(doc, stamp) || arrive(learnerHistory(doc), entry).arrival === 'duplicate';
      if (duplicate && isProjected(doc, pending)) outcomes[firsts.get(line)!] = 'duplicate';
      continue;
    }
    const record = firstRecord(line.facts, tenant.org, line.at, true, ruleOf.get(line.facts) ?? null);
    // Inserted as projected, its list facts those of the membership it is about to get: the
    // batch's intent (opened first, closed when all is written) is what says it is not yet.
    fresh.push({ line, doc: { ...record, ...userGroupFacts(record.m ?? undefined), projected: record.rev, batch: token } });
    outcomes[firsts.get(line)!] = 'applied';
  }
  if (fresh.length === 0) return outcomes;
  await records.openIntent(
    token,
    mark,
    fresh.map((f) => f.doc._id),
  );
  const refused = await records.insertNew(fresh.map((f) => f.doc));
  const inserted = fresh.filter((f) => !refused.has(f.doc._id));
  for (const f of fresh) if (refused.has(f.doc._id)) outcomes[firsts.get(f.line)!] = 'per-event';
  await projectNew(tenant, inserted, mark);
  await records.closeBatch(token);
  return outcomes;
}

/**
 * What `project` (learners.ts) does for each new learner, for all of them at once: memberships,
 * list facts, grams, the change log; then each record read again, and one written since (or one
 * whose membership could not be made as planned) projected one by one from what it is now. Last,
 * the rules read again: a rule created (and applied to existing learners) between the first read
 * and the insert saw none of them, so a learner activated here with no group joins its group.
 */
async function projectNew(tenant: Tenant, inserted: readonly { line: UserLine; doc: LearnerRecordDoc }[], batchMark: string): Promise<void> {
  if (inserted.length === 0) return;
  const docs = inserted.map((f) => f.doc);
  const members = docs.filter((d) => d.m);
  const last = members.length > 0 ? await tenant.claimIds('memberships', members.length) : 0;
  const memberships: Omit<MembershipDoc, 'org'>[] = members.map((d, i) => ({
    _id: d._id,
    id: last - members.length + 1 + i,
    user: d.id,
    group: d.m!.group,
    automatic: d.m!.auto,
    born: d.m!.born,
    rev: d.rev!,
  }));
  const notMade = await withCause('rule', () => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).insertMany(memberships));
  await indexNewUsers(tenant, docs as never);
  await syncUserGroups(
    tenant,
    docs.map((d) => d.id),
  );
  await recordAfterWrite(
    tenant.db,
    COLLECTIONS.users,
    docs.map((d) => ({ k: d._id, o: tenant.org })),
  );
  const groups = new Set(members.map((d) => String(d.m!.group)));
  const liveGroups = new Set(
    groups.size === 0
      ? []
      : (
          await tenant.db
            .collection<{ _id: string }>(COLLECTIONS.groups)
            .find({ _id: { $in: [...groups] } }, { projection: { _id: 1 } })
            .toArray()
        ).map((g) => g._id),
  );
  const now = await learnerRecords(tenant.db).readMany(docs.map((d) => d.id));
  for (const doc of docs) {
    const current = now.get(doc.id);
    if (!current) continue; // records are never deleted: not reached
    // Written since, or its membership not made as planned: projected again from what it is now,
    // as its own projection that also cleans where the batch wrote (if the learner left).
    if (current.rev !== doc.rev) await afterProjection(tenant.db, doc, new Projection([batchMark]));
    else if (notMade.has(doc._id) || (doc.m && !liveGroups.has(String(doc.m.group))))
      await project(tenant.db, { ...current, projected: 0 }, new Projection([batchMark]));
  }
  const late = await matchRules(
    tenant,
    inserted.filter((f) => f.line.facts.is_active && !f.doc.m).map((f) => f.line.facts),
  );
  // Each completes its activation, the record's first arrival.
  for (const m of late) await completeArrivalRule(tenant.db, m.user.id, 1, m.rule.group);
}

/** The first line of each user id, with its index: a repeat of an id is applied per event, after the first. */
function firstLineOfEachId(batch: readonly UserLine[]): Map<UserLine, number> {
  const seen = new Set<number>();
  const firsts = new Map<UserLine, number>();
  batch.forEach((l, i) => {
    if (seen.has(l.facts.id)) return;
    seen.add(l.facts.id);
    firsts.set(l, i);
  });
  return firsts;
}
