import type { Filter } from 'mongodb';
import { withCause } from '../db/change-context';
import { COLLECTIONS, type MembershipDoc, type RuleDoc, type UserDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import { ownerLookup } from '../db/owners';
import type { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { versionOf } from '../db/versioned-writes';
import { Conflict, doesNotExist, fieldError } from '../errors';
import { folded, isSettled, LOG_LIMIT, type MembershipPlan, membershipPlan, unmatched } from './activation-log';
import { groupExists } from './groups';
import { syncUserGroups } from './list-facts';
import { insertMembershipIfAbsent, removeMembership } from './memberships';
import { userTombstone } from './users';
import { deletedAfter, ROUNDS } from './versioned-records';

/**
 * Membership rules (docs/api.md, `membership-rules`): a learner whose email has `domain` joins
 * `group` (docs/events.md, activations). Everything about matching is here: how a domain is
 * compared, a rule's key, and the one matcher that events, "apply to existing learners" and
 * `cag import` use.
 */

/** Domains are compared and stored lowercase (docs/api.md). */
const ruleDomain = (domain: string) => domain.toLowerCase();

/** A rule's `_id`: one rule per domain per organization is the primary key. */
const ruleKey = (org: string, domain: string) => `${org}|${ruleDomain(domain)}`;

/** The domain a rule matches: what follows the last `@`, lowercased. */
export function emailDomain(email: string): string | null {
  const at = email.lastIndexOf('@');
  const domain = ruleDomain(email.slice(at + 1).trim());
  return at < 0 || domain === '' ? null : domain;
}

/**
 * The one matcher: each of `users` whose email's domain has a rule in the organization, with that
 * rule. One read, by the rules' keys (a primary-key lookup per domain, never a scan of the rules).
 */
export async function matchRules<U extends Pick<UserDoc, 'id' | 'email'>>(
  tenant: Tenant,
  users: readonly U[],
): Promise<{ user: U; rule: Pick<RuleDoc, 'domain' | 'group'> }[]> {
  const keyed = users.flatMap((user) => {
    const domain = emailDomain(user.email);
    return domain === null ? [] : [{ user, key: ruleKey(tenant.org, domain) }];
  });
  if (keyed.length === 0) return [];
  const rules = await tenant.collection<RuleDoc>(COLLECTIONS.rules).findByIds(
    keyed.map((k) => k.key),
    { projection: { domain: 1, group: 1 } },
  );
  return keyed.flatMap(({ user, key }) => {
    const rule = rules.get(key);
    return rule ? [{ user, rule }] : [];
  });
}

/**
 * Makes `user` an automatic member of `group` unless they have a membership (the rule's doing,
 * whoever's request or event ran it: change events and the audit say so). Returns the membership
 * created, or null. Safe to run any number of times, concurrently too: the membership's primary
 * key is the user id.
 */
async function joinByRule(tenant: Tenant, user: Pick<UserDoc, 'id' | 'event_time' | 'event_n'>, group: number, at?: string): Promise<MembershipDoc | null> {
  const rule_v = at === undefined ? {} : { rule_v: at, born_v: at };
  const created = await withCause('rule', () => insertMembershipIfAbsent(tenant, { user: user.id, group, automatic: true, ...rule_v }));
  if (!created) return null;
  // A retirement, or a move to another organization, that ran while we inserted must not leave
  // a membership of a user who is gone from here. Each writes its tombstone or removes the record
  // before it deletes the membership, so one of the two sees the other; take back only the
  // membership this call made. (Tombstones, unlike users, are few.)
  const gone = async () => (await tenant.collection<UserDoc>(COLLECTIONS.users).findById(String(user.id))) === null;
  if (deletedAfter(await tombstones(tenant.db).get(userTombstone(user.id)), user) || (await gone())) {
    await withCause('rule', () => removeMembership(tenant, { _id: created._id, id: created.id }));
    return null;
  }
  return created;
}

/**
 * Rule memberships for many users at once (the import's new learners, a page of "apply to
 * existing learners"), from their matches: the ids of all the memberships claimed in one `$inc`,
 * and the memberships inserted in one unordered insert (one outbox intent, the rule's doing). A
 * user who is already a member keeps their membership: the primary key (the user id) refuses the
 * new one, whose id is then unused (ids may have gaps). Returns those created.
 */
export async function insertRuleMemberships(
  tenant: Tenant,
  matches: readonly { user: Pick<UserDoc, 'id'>; rule: Pick<RuleDoc, 'group'>; rule_v?: string | undefined; born_v?: string | undefined }[],
): Promise<MembershipDoc[]> {
  if (matches.length === 0) return [];
  const last = await tenant.claimIds('memberships', matches.length);
  const docs = matches.map((m, i) => ({
    _id: String(m.user.id),
    id: last - matches.length + 1 + i,
    user: m.user.id,
    group: m.rule.group,
    automatic: true,
    ...(m.rule_v === undefined ? (m.born_v === undefined ? {} : { born_v: m.born_v }) : { rule_v: m.rule_v, born_v: m.rule_v }),
  }));
  const refused = await withCause('rule', () => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).insertMany(docs));
  return docs.filter((d) => !refused.has(d._id)).map((d) => ({ ...d, org: tenant.org }));
}

/**
 * Brings user `userId`'s membership in line with their activation log (docs/events.md,
 * "Activations"; activation-log.ts `membershipPlan`), after any user event (a duplicate too: a
 * crash may have left the last one unreconciled) or a change of the log. Nothing to do when the
 * membership already reflects the log (`settled_n` is `log_n`). Otherwise the rules are read for
 * the activations not matched yet (after the record was written, so a rule applied to existing
 * learners meanwhile sees the learner, or this read sees the rule), kept in the log, and the
 * membership changed: every write conditional on what was read (the log by `log_n`, the
 * membership by its `rule_v` and `born_v`), each lost race read again. Last, `settled_n` is
 * written on the condition that the log is still as read: a change since then goes round again,
 * and the process that made it reconciles too. `changedFor`: the log (`log_n`) for which the
 * caller changed the membership itself, so a log settled since by another process, which may
 * have read the membership before that change, is not taken as settled.
 */
export async function reconcileMembership(tenant: Tenant, userId: number, known?: UserDoc | null, changedFor?: number): Promise<void> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  // The membership is read before the user: an administrator marks the user (`admin_v`) before
  // changing the membership, so a user read without the mark comes with a membership read
  // before the change, and a write conditional on that membership loses to the change.
  if (known && isSettled(known)) return;
  let user: UserDoc | null = null;
  // Unknown (undefined) until read; then what this call last read or wrote.
  let membership: MembershipDoc | null | undefined;
  // The log (`log_n`) this call last changed the membership for: another process may have
  // settled a newer log before that write landed, so only that log counts as settled then.
  // `changedFor`: the caller changed the membership for that log (the batch path, import-users.ts).
  let wroteFor: number | undefined = changedFor;
  for (let round = 0; round < ROUNDS; round++) {
    membership ??= await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findById(String(userId));
    user ??= await users.findById(String(userId));
    if (!user) return;
    if (isSettled(user) && (wroteFor === undefined || wroteFor === (user.log_n ?? 0))) return;
    const log = await matchedLog(tenant, user);
    const n: number = (user.log_n ?? 0) + (log ? 1 : 0);
    const plan = await livePlan(tenant, { ...user, ...log }, membership);
    if (log || plan.do === 'keep') {
      // The rules read, and the membership settled when nothing is left to change: one write.
      const asRead = { _id: user._id, log_n: user.log_n ?? { $exists: false } } as Filter<UserDoc>;
      const settled = plan.do === 'keep' ? { settled_n: n } : {};
      if (!(await users.updateBookkeeping(asRead, { $set: { ...log, ...settled }, ...(log ? { $inc: { log_n: 1 } } : {}) }))) {
        [user, membership] = [null, undefined];
        continue;
      }
      if (plan.do === 'keep') return;
      user = { ...user, ...log, log_n: n };
    }
    membership = await changeMembership(tenant, user, membership, plan);
    wroteFor = user.log_n ?? 0;
    if (membership === undefined) user = null; // a lost race: both read again, the membership first
  }
  throw new Error(`membership of user ${userId} kept changing while its activation log was reconciled`);
}

/**
 * The log with its unmatched activations matched against the rules now (each keeps the group its
 * rule names, or none) and folded to its bound; null when neither changes it.
 */
async function matchedLog(tenant: Tenant, user: UserDoc): Promise<Partial<UserDoc> | null> {
  const pending = unmatched(user);
  // A log under its bound keeps its repeats until then (an applied event appends without reading it).
  if (pending.length === 0 && (user.act_log ?? []).length <= LOG_LIMIT) return null;
  const matches = await matchRules(
    tenant,
    pending.map((entry) => ({ id: user.id, email: entry.e!, entry })),
  );
  const groups = new Map(matches.map((m) => [m.user.entry, m.rule.group]));
  const act_log = (user.act_log ?? []).map((entry) => {
    if (entry.e === undefined) return entry;
    const g = groups.get(entry);
    return { v: entry.v, k: entry.k, ...(entry.i ? { i: entry.i } : {}), ...(g === undefined ? {} : { g }), ...(entry.u ? { u: entry.u } : {}) };
  });
  return folded({ ...user, act_log });
}

/**
 * The plan for the log, where an activation whose rule named a group deleted since matches
 * nothing (that group's memberships went with it): each group a plan would set is checked, and
 * a deleted one's activations are passed over.
 */
async function livePlan(tenant: Tenant, state: UserDoc, membership: MembershipDoc | null): Promise<MembershipPlan> {
  let log = state.act_log ?? [];
  for (;;) {
    const plan = membershipPlan({ ...state, act_log: log }, membership);
    if (plan.do !== 'set' || (await groupExists(tenant, plan.g))) return plan;
    log = log.map(({ g, ...entry }) => (g === plan.g ? entry : { ...entry, ...(g === undefined ? {} : { g }) }));
  }
}

/**
 * Carries out a plan on the membership as read: returns the membership as it then stands, or
 * undefined when a concurrent change won (the caller reads again).
 */
async function changeMembership(
  tenant: Tenant,
  user: UserDoc,
  membership: MembershipDoc | null,
  plan: MembershipPlan,
): Promise<MembershipDoc | null | undefined> {
  if (plan.do === 'keep') return membership;
  if (!membership) return plan.do === 'set' ? ((await joinByRule(tenant, user, plan.g, plan.v)) ?? undefined) : null;
  const asRead = { _id: membership._id, id: membership.id, rule_v: membership.rule_v ?? { $exists: false } } as Filter<MembershipDoc>;
  if (plan.do === 'delete') return (await withCause('rule', () => removeMembership(tenant, asRead))) ? null : undefined;
  const moved = await withCause('rule', () =>
    tenant
      .collection<MembershipDoc>(COLLECTIONS.memberships)
      .findOneAndUpdate(asRead, { $set: { group: plan.g, rule_v: plan.v, born_v: plan.v, automatic: true } }),
  );
  if (moved) await syncUserGroups(tenant, [user.id]);
  return moved ?? undefined;
}

/**
 * Applies one rule to the learners already registered: every active user of the organization
 * whose email domain is the rule's and who has no membership becomes an automatic member of the
 * rule's group. Returns how many memberships were created (0 when run again). Users are read a
 * page at a time by public id, never all at once, and matched as an event matches them; a page's
 * memberships are read in one query and written in one insert (insertRuleMemberships), and the
 * primary key (the user id) refuses a membership a concurrent event or admin made meanwhile.
 */
export async function applyRuleToExistingUsers(tenant: Tenant, rule: Pick<RuleDoc, 'domain' | 'group'>, pageSize = 500): Promise<number> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  let created = 0;
  let after = 0;
  for (;;) {
    const page = await users
      .find({ id: { $gt: after }, is_active: true }, { projection: { id: 1, email: 1, is_active: 1, event_time: 1, event_n: 1 } })
      .sort({ id: 1 })
      .limit(pageSize)
      .toArray();
    if (page.length === 0) return created;
    after = page[page.length - 1]!.id;
    // joinByRule for the page at once: members left out first (one read), the rest inserted
    // together, their list facts derived, then the retirements that ran meanwhile undone.
    const matching = (await matchRules(tenant, page)).filter((m) => m.rule.domain === ruleDomain(rule.domain));
    const members = await memberships.findByIds(
      matching.map((m) => String(m.user.id)),
      { projection: { _id: 1 } },
    );
    // Each begins at the learner's version now, as an administrator's does (born_v).
    const made = await insertRuleMemberships(
      tenant,
      matching.filter((m) => !members.has(String(m.user.id))).map((m) => ({ ...m, born_v: versionOf(m.user) })),
    );
    await syncUserGroups(
      tenant,
      made.map((m) => m.user),
    );
    const byId = new Map(page.map((u) => [u.id, u]));
    // A retirement (its tombstone) or a move to another organization (the record gone from here)
    // that ran meanwhile: each writes before it deletes the membership, so either it deleted the
    // one made here or these reads see it. One left would carry the learner's id as its `_id`
    // and refuse them every membership where they are now.
    const [stones, owners] = await Promise.all([
      tombstones(tenant.db).getMany(made.map((m) => userTombstone(m.user))),
      ownerLookup(tenant.db).userOrgs(made.map((m) => m.user)),
    ]);
    for (const m of made) {
      const gone = deletedAfter(stones.get(userTombstone(m.user)), byId.get(m.user)!) || owners.get(m.user) !== tenant.org;
      if (gone) await withCause('rule', () => removeMembership(tenant, { _id: m._id, id: m.id }));
      else created++;
    }
  }
}

const domainTaken = () => new Conflict({ domain: ['A membership rule for this domain already exists.'] });
const rules = (tenant: Tenant) => tenant.collection<RuleDoc>(COLLECTIONS.rules);

async function checkGroup(tenant: Tenant, group: number | undefined) {
  if (group !== undefined && !(await groupExists(tenant, group))) throw fieldError('group', doesNotExist(group));
}

/** Inserts a rule, refusing a domain that has one (Invalid on `domain`). */
async function insert(tenant: Tenant, doc: Omit<RuleDoc, 'org' | '_id'>): Promise<RuleDoc> {
  try {
    return await rules(tenant).insertOne({ _id: ruleKey(tenant.org, doc.domain), ...doc });
  } catch (err) {
    if (isDuplicateKey(err)) throw domainTaken();
    throw err;
  }
}

const taken = (tenant: Tenant, domain: string) => rules(tenant).has({ _id: ruleKey(tenant.org, domain) });

export async function createRule(tenant: Tenant, input: { name: string; domain: string; group: number }): Promise<RuleDoc> {
  await checkGroup(tenant, input.group);
  const domain = ruleDomain(input.domain);
  // Checked first so that a refused request claims no id.
  if (await taken(tenant, domain)) throw domainTaken();
  const id = await tenant.nextId('membership_rules');
  return insert(tenant, { id, name: input.name, domain, group: input.group });
}

/**
 * A new domain is a new `_id`: the new document is inserted (refused when the domain has a
 * rule) and then the old one deleted; a crash in between leaves both, with one id, until the
 * next PATCH or DELETE of that id. Null: no rule `id` here.
 */
export async function updateRule(tenant: Tenant, id: number, patch: { name?: string; domain?: string; group?: number }): Promise<RuleDoc | null> {
  await checkGroup(tenant, patch.group);
  const old = await rules(tenant).findOne({ id });
  if (!old) return null;
  const domain = patch.domain === undefined ? old.domain : ruleDomain(patch.domain);
  const changes = { name: patch.name ?? old.name, group: patch.group ?? old.group };
  if (domain === old.domain) return rules(tenant).findOneAndUpdate({ _id: old._id }, { $set: changes });
  if (await taken(tenant, domain)) throw domainTaken();
  const doc = await insert(tenant, { id, domain, ...changes });
  await rules(tenant).deleteMany({ id, _id: { $ne: doc._id } });
  return doc;
}

/** Deletes every document of the id (normally one; two after an interrupted PATCH). */
export async function deleteRule(tenant: Tenant, id: number): Promise<boolean> {
  return (await rules(tenant).deleteMany({ id })).deletedCount > 0;
}

/** Applies rule `id` to the organization's existing users: the memberships created, or null for an unknown id. */
export async function applyRule(tenant: Tenant, id: number): Promise<number | null> {
  const rule = await rules(tenant).findOne({ id });
  return rule && applyRuleToExistingUsers(tenant, rule);
}
