import type { Filter } from 'mongodb';
import { withCause } from '../db/change-context';
import { COLLECTIONS, type MembershipDoc, type RuleDoc, type UserDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { Conflict, doesNotExist, fieldError } from '../errors';
import type { ApplyOutcome } from './event-time';
import { groupExists } from './groups';
import { syncUserGroups } from './list-facts';
import { insertMembershipIfAbsent, removeMembership } from './memberships';
import { isLateFirstActivation, isNewActivation, userTombstone } from './users';
import { deletedAfter } from './versioned-records';

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
  matches: readonly { user: Pick<UserDoc, 'id'>; rule: Pick<RuleDoc, 'group'>; rule_v?: string | undefined }[],
): Promise<MembershipDoc[]> {
  if (matches.length === 0) return [];
  const last = await tenant.claimIds('memberships', matches.length);
  const docs = matches.map((m, i) => ({
    _id: String(m.user.id),
    id: last - matches.length + 1 + i,
    user: m.user.id,
    group: m.rule.group,
    automatic: true,
    ...(m.rule_v === undefined ? {} : { rule_v: m.rule_v, born_v: m.rule_v }),
  }));
  const refused = await withCause('rule', () => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).insertMany(docs));
  return docs.filter((d) => !refused.has(d._id)).map((d) => ({ ...d, org: tenant.org }));
}

/**
 * Applies the organization's membership rules to one user (docs/events.md): an active user
 * whose email domain has a rule, and who has no membership yet, becomes an automatic member of
 * the rule's group. An existing membership is never changed; an inactive user gets none.
 * Returns the membership created, or null. `at`: the activation that applies them (recorded on
 * the membership as `rule_v`).
 */
export async function applyMembershipRules(
  tenant: Tenant,
  user: Pick<UserDoc, 'id' | 'email' | 'is_active' | 'event_time'>,
  at?: string,
): Promise<MembershipDoc | null> {
  if (!user.is_active) return null;
  const [match] = await matchRules(tenant, [user]);
  return match ? joinByRule(tenant, user, match.rule.group, at) : null;
}

/**
 * The activation a user event written as `written` claims (docs/events.md), or null: this event,
 * or the newest one the record already reflects (a deactivation older than it may have arrived
 * after it: in event time, it came first), when its rules are not applied yet and the write did
 * not claim it already (a record created by the event).
 */
export function activationToClaim(written: { outcome: ApplyOutcome; current: UserDoc; version: string }, activates: boolean): string | null {
  const user = written.current;
  const claimedOnInsert = user.act_v === written.version;
  const candidates = [activates && written.outcome !== 'duplicate' ? written.version : null, user.act_seen_v ?? null];
  const activation = candidates
    .filter((v): v is string => v !== null)
    .sort()
    .pop();
  return activation !== undefined && !claimedOnInsert && isNewActivation(user, activation) ? activation : null;
}

/** Whether settleActivation would write nothing for this written event: no activation to claim, none pending. */
export function activationSettled(written: { outcome: ApplyOutcome; current: UserDoc; version: string }, activates: boolean): boolean {
  return activationToClaim(written, activates) === null && written.current.act_done !== false;
}

/** The user event being settled: what it says (its email) and the organization it names. */
export interface SettledEvent {
  email: string;
  org: string;
}

/**
 * Membership rules once per activation (docs/events.md). After a user event was written
 * (`written`: its outcome, the record, the event's version), an activation-capable event
 * (`activation`: what it says, null for any other) that is not a duplicate claims the activation
 * when it is one whose rules are not applied yet: a write conditional on the bookkeeping it read,
 * so two deliveries cannot both claim. A record created by such an event claimed it in the same
 * write. A claim is pending (`act_done: false`) until the rules are applied, with the claimed
 * activation's email (`act_email`); whichever event of the user comes next (a redelivery too)
 * finishes a claim that a crash left pending. An activation older than the claimed one, arriving
 * later, is the first of its period instead (earlierActivation).
 */
export async function settleActivation(
  tenant: Tenant,
  written: { outcome: ApplyOutcome; current: UserDoc; version: string },
  activation: SettledEvent | null,
): Promise<void> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  let user = written.current;
  const activates = activation !== null;
  const claim = activationToClaim(written, activates);
  const late = activates && written.outcome !== 'duplicate' && activation.org === user.org;
  if (claim !== null) {
    const email = claim === written.version && activation ? activation.email : (user.act_seen_email ?? user.email);
    const asRead = (field: 'act_v' | 'deact_v') => (user[field] === undefined ? { $exists: false } : user[field]);
    const claimed = await users.updateBookkeeping({ _id: user._id, act_v: asRead('act_v'), deact_v: asRead('deact_v') } as Filter<UserDoc>, {
      $set: { act_v: claim, act_done: false, act_email: email, ...(claim > (user.act_seen_v ?? '') ? { act_seen_email: email } : {}) },
      $max: { act_seen_v: claim },
      $min: { act_min_v: claim },
    });
    if (claimed) user = { ...user, act_v: claim, act_done: false, act_email: email };
  } else if (late && isLateFirstActivation(user, written.version)) {
    await applyLateActivation(tenant, user, written.version, activation.email);
  } else if (late && isEarlierActivation(user, written.version)) {
    // It settles the claim it supersedes, pending or not.
    return applyEarlierActivation(tenant, user, written.version, activation.email);
  } else if (late && isEarlierFirstActivation(user, written.version)) {
    await applyEarlierFirstActivation(tenant, user, written.version, activation.email);
  }
  if (user.act_done !== false) return;
  // Whatever the learner is now: the claimed activation showed them active.
  const made = await applyMembershipRules(tenant, { ...user, email: user.act_email ?? user.email, is_active: true }, user.act_v);
  if (await users.updateBookkeeping({ _id: user._id, act_v: user.act_v, act_done: false } as Filter<UserDoc>, { $set: { act_done: true } })) return;
  // An older activation superseded this claim while its rules ran (another process): what they
  // made is not an activation's in event time.
  if (made && (await users.findById(user._id))?.act_v !== user.act_v)
    await withCause('rule', () => removeMembership(tenant, { _id: made._id, rule_v: user.act_v }));
}

/**
 * True when an activation of version `v` falls in the period of the claimed activation (after
 * the last deactivation) but before it: in event time it was that period's first, and the
 * claimed one was not an activation at all.
 */
export function isEarlierActivation(user: Pick<UserDoc, 'act_v' | 'deact_v'>, v: string): boolean {
  const deact = user.deact_v ?? '';
  return user.act_v !== undefined && user.act_v > deact && v > deact && olderTime(v, user.act_v);
}

/** The same in the learner's first period (before the first deactivation), whose activation claimed is `act_min_v`. */
export function isEarlierFirstActivation(user: Pick<UserDoc, 'act_min_v' | 'deact_min_v'>, v: string): boolean {
  const { act_min_v: first, deact_min_v: end } = user;
  return first !== undefined && end !== undefined && first < end && v < end && olderTime(v, first);
}

/**
 * True when version `a` is of an older time than `b`. Not merely a lower version: a stale event
 * (`time#0`) of `b`'s time is `b`'s own event delivered again, or one that came after it (among
 * equal times arrival decides); neither is older.
 */
const olderTime = (a: string, b: string) => a.slice(0, a.indexOf('#')) < b.slice(0, b.indexOf('#'));

/**
 * The rules of an activation `v` (email `email`) that in event time came before the one whose
 * rules made the learner's membership (its `rule_v`, newer than `v`, kept while no administrator
 * changed it): the membership becomes what `v`'s email matches. When that is nothing, it goes if
 * the activation `v` supersedes in its period made it (`superseded`: in event time no activation
 * at all), and stays otherwise (a later period's activation made it). A learner without a membership gets what `v` matches, unless an
 * administrator changed the membership since the claim (`act_admin`). Conditional on the
 * membership as read, so a concurrent change wins.
 */
async function reapplyRules(tenant: Tenant, user: UserDoc, v: string, email: string, superseded: string | null): Promise<void> {
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const [match] = await matchRules(tenant, [{ id: user.id, email }]);
  // An administrator's change placed after `v` in event time stands (read fresh: it is written before the change).
  const adminAfter = async () => {
    const admin = (await users.findById(user._id, { projection: { admin_v: 1 } }))?.admin_v;
    return admin !== undefined && v < admin;
  };
  // Each round that loops lost a race to a concurrent change of the membership, and reads it again.
  for (let round = 0; round < 8; round++) {
    if (await adminAfter()) return;
    const current = await memberships.findById(String(user.id));
    if (!current) {
      if (!match) return;
      const made = await joinByRule(tenant, user, match.rule.group, v);
      // An administrator who acted meanwhile wins: their mark is written before their change.
      if (made && (await adminAfter())) await withCause('rule', () => removeMembership(tenant, { _id: made._id, id: made.id }));
      // Not made: another came first (read it), or the learner left meanwhile (none to read).
      if (made || !(await memberships.has({ _id: String(user.id) }))) return;
      continue;
    }
    if (current.rule_v === undefined || !olderTime(v, current.rule_v)) return;
    const asRead = { _id: current._id, rule_v: current.rule_v } as Filter<MembershipDoc>;
    if (match) {
      const moved = await withCause('rule', () => memberships.findOneAndUpdate(asRead, { $set: { group: match.rule.group, rule_v: v, born_v: v } }));
      if (!moved) continue;
      await syncUserGroups(tenant, [user.id]);
    } else if (current.rule_v === superseded) {
      if (!(await withCause('rule', () => removeMembership(tenant, asRead)))) continue;
      await reapplyClaim(tenant, user.id, v, superseded);
    }
    return;
  }
  throw new Error(`membership of user ${user.id} kept changing while an earlier activation applied its rules`);
}

/**
 * After a late event removed a membership rules made (its activation was none in event time, or
 * a retirement or move at `v` deleted it), the claimed activation newer than `v` (not the one
 * `superseded`) found that membership and made none: in event time it applied the rules to no
 * membership, so it applies them now, unless an administrator acted after it.
 */
async function reapplyClaim(tenant: Tenant, userId: number, v: string, superseded: string | null): Promise<void> {
  const user = await tenant.collection<UserDoc>(COLLECTIONS.users).findById(String(userId));
  const claim = user?.act_v;
  if (!user || claim === undefined || claim === superseded || user.act_done === false || !olderTime(v, claim)) return;
  if (user.admin_v !== undefined && claim < user.admin_v) return;
  const [match] = await matchRules(tenant, [{ id: user.id, email: user.act_email ?? user.email }]);
  if (match) await joinByRule(tenant, user, match.rule.group, claim);
}

/**
 * Deletes user `userId`'s membership when it began before `v` in event time (`born_v`: made by a
 * rule at an older activation, or by an administrator after an older event): a retirement or a
 * move at `v`, arriving after a newer event of the learner, deleted it in event time. The
 * activation after `v` then claims (settleActivation), or applies again (reapplyClaim).
 */
export async function takeBackMembershipBefore(tenant: Tenant, userId: number, v: string): Promise<void> {
  if (await removeMembership(tenant, { _id: String(userId), born_v: { $lt: v } } as Filter<MembershipDoc>)) await reapplyClaim(tenant, userId, v, null);
}

/**
 * An activation older than the claimed one of its period (isEarlierActivation): its rules are
 * applied again (reapplyRules) before the claim moves to it, done (a claim left pending by a crash
 * is this one's now), so a crash between the two leaves an activation a redelivery applies again,
 * to the same end.
 */
async function applyEarlierActivation(tenant: Tenant, user: UserDoc, v: string, email: string): Promise<void> {
  await reapplyRules(tenant, user, v, email, user.act_v!);
  await tenant
    .collection<UserDoc>(COLLECTIONS.users)
    .updateBookkeeping({ _id: user._id, act_v: { $gt: v }, deact_v: user.deact_v ?? { $exists: false } } as Filter<UserDoc>, {
      $set: { act_v: v, act_email: email, act_done: true },
      $min: { act_min_v: v },
    });
}

/** The same for the first period (isEarlierFirstActivation). */
async function applyEarlierFirstActivation(tenant: Tenant, user: UserDoc, v: string, email: string): Promise<void> {
  await reapplyRules(tenant, user, v, email, user.act_min_v!);
  await tenant.collection<UserDoc>(COLLECTIONS.users).updateBookkeeping({ _id: user._id } as Filter<UserDoc>, { $min: { act_min_v: v } });
}

/**
 * An activation that arrived after the deactivation that ended its period (isLateFirstActivation):
 * in event time it applied the rules while the learner was active, and the membership it made
 * outlived the deactivation, as memberships do; so it makes it now, whatever the learner is now,
 * and it replaces one a later period's activation made (reapplyRules).
 * The rules are applied before the claim (`act_min_v`) is written, so a crash between the two
 * leaves an activation a redelivery applies again (never a second membership: the user id is the
 * membership's key); once claimed, neither a redelivery nor another activation of that period
 * applies them again, so an administrator's later change stands.
 */
async function applyLateActivation(tenant: Tenant, user: UserDoc, v: string, email: string): Promise<void> {
  await reapplyRules(tenant, user, v, email, null);
  const asRead = (field: 'act_min_v' | 'deact_min_v') => (user[field] === undefined ? { $exists: false } : user[field]);
  await tenant
    .collection<UserDoc>(COLLECTIONS.users)
    .updateBookkeeping({ _id: user._id, act_min_v: asRead('act_min_v'), deact_min_v: asRead('deact_min_v') } as Filter<UserDoc>, {
      $min: { act_min_v: v },
    });
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
    const made = await insertRuleMemberships(
      tenant,
      matching.filter((m) => !members.has(String(m.user.id))),
    );
    await syncUserGroups(
      tenant,
      made.map((m) => m.user),
    );
    const byId = new Map(page.map((u) => [u.id, u]));
    const stones = await tombstones(tenant.db).getMany(made.map((m) => userTombstone(m.user)));
    for (const m of made) {
      if (deletedAfter(stones.get(userTombstone(m.user)), byId.get(m.user)!)) await withCause('rule', () => removeMembership(tenant, { _id: m._id, id: m.id }));
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
