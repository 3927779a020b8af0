// docs/api.md: the seven access rules, first match wins, as a pure function of the facts.
import { type AccessFacts, decide, needsLink, needsUser, type UserFacts } from '../../src/domain/access-decisions';

const learner: UserFacts = { isActive: true, isStaff: false, isSiteAdmin: false, org: 'org-a' };
/** A private course of an organization with the flag on, asked about by an ordinary active learner who is no member. */
const base: AccessFacts = { courseOrg: 'org-a', featureEnabled: true, isPublic: false, user: learner, memberOfLinkedGroup: false };
const facts = (over: Partial<AccessFacts>, user: Partial<UserFacts> | null = {}): AccessFacts => ({
  ...base,
  user: user && { ...learner, ...user },
  ...over,
});

test('rule 1: flag off allows with feature_disabled, whatever else holds (even no user)', () => {
  expect(decide(facts({ featureEnabled: false }, null))).toEqual({ allowed: true, reason: 'feature_disabled' });
  expect(decide(facts({ featureEnabled: false }, { isActive: false }))).toEqual({ allowed: true, reason: 'feature_disabled' });
  expect(decide(facts({ featureEnabled: false, isPublic: true, memberOfLinkedGroup: true }, { isStaff: true }))).toEqual({
    allowed: true,
    reason: 'feature_disabled',
  });
});

test('rule 2: a public course allows with public, before looking at the user (no user, inactive user)', () => {
  expect(decide(facts({ isPublic: true }, null))).toEqual({ allowed: true, reason: 'public' });
  expect(decide(facts({ isPublic: true }, { isActive: false }))).toEqual({ allowed: true, reason: 'public' });
  expect(decide(facts({ isPublic: true }, { isStaff: true }))).toEqual({ allowed: true, reason: 'public' });
});

test('rule 3: no user or an inactive user is denied with no_access, even staff, admin or member', () => {
  expect(decide(facts({}, null))).toEqual({ allowed: false, reason: 'no_access' });
  expect(decide(facts({ memberOfLinkedGroup: true }, { isActive: false }))).toEqual({ allowed: false, reason: 'no_access' });
  expect(decide(facts({}, { isActive: false, isStaff: true, isSiteAdmin: true }))).toEqual({ allowed: false, reason: 'no_access' });
});

test('rule 4: platform staff is allowed with staff on a private course, before site_admin and group', () => {
  expect(decide(facts({}, { isStaff: true }))).toEqual({ allowed: true, reason: 'staff' });
  expect(decide(facts({ memberOfLinkedGroup: true }, { isStaff: true, isSiteAdmin: true }))).toEqual({ allowed: true, reason: 'staff' });
});

test("rule 5: a site administrator of the course's organization is allowed with site_admin, before group", () => {
  expect(decide(facts({}, { isSiteAdmin: true }))).toEqual({ allowed: true, reason: 'site_admin' });
  expect(decide(facts({ memberOfLinkedGroup: true }, { isSiteAdmin: true }))).toEqual({ allowed: true, reason: 'site_admin' });
});

test('rule 5 needs the same organization: an administrator of another is an ordinary learner', () => {
  expect(decide(facts({}, { isSiteAdmin: true, org: 'org-b' }))).toEqual({ allowed: false, reason: 'no_access' });
  expect(decide(facts({ memberOfLinkedGroup: true }, { isSiteAdmin: true, org: 'org-b' }))).toEqual({ allowed: true, reason: 'group' });
});

test('rule 6: a member of a group linked to the course is allowed with group', () => {
  expect(decide(facts({ memberOfLinkedGroup: true }))).toEqual({ allowed: true, reason: 'group' });
});

test('rule 7: anyone else is denied with no_access', () => {
  expect(decide(facts({}))).toEqual({ allowed: false, reason: 'no_access' });
});

test('needsUser and needsLink ask for a fact exactly when a later rule would look at it', () => {
  expect(needsUser(facts({ featureEnabled: false }))).toBe(false);
  expect(needsUser(facts({ isPublic: true }))).toBe(false);
  expect(needsUser(facts({}))).toBe(true);
  expect(needsLink(facts({}, null))).toBe(false);
  expect(needsLink(facts({}, { isActive: false }))).toBe(false);
  expect(needsLink(facts({}, { isStaff: true }))).toBe(false);
  expect(needsLink(facts({}, { isSiteAdmin: true }))).toBe(false);
  expect(needsLink(facts({}, { isSiteAdmin: true, org: 'org-b' }))).toBe(true);
  expect(needsLink(facts({}))).toBe(true);
});
