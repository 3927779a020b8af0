// docs/events-published.md (change events) and docs/audit-log.md (audit records), the pure parts: what the relay builds from an
// outbox entry and the record as it reads it.
import { buildAuditRecords } from '../../src/changes/audit-records';
import { buildChangeEvent, CHANGE_KINDS, changeEventErrors, EVENT_TYPE_PREFIX, toMessage } from '../../src/changes/events';
import { COLLECTIONS, type CollectionName, type OutboxDoc } from '../../src/db/collections';

const entry = (c: CollectionName, k: string[], extra: Partial<OutboxDoc> = {}): OutboxDoc => ({
  _id: '0001767225600000.000000001.abcd1234',
  c,
  o: 'org-a',
  k,
  t: new Date('2026-01-01T00:00:00Z'),
  cause: 'admin',
  actor: { type: 'user', user_id: 7, role: 'site_admin' },
  rid: 'req-1',
  audit: false,
  ...extra,
});

const docs: Record<string, { key: string; doc: Record<string, unknown>; field: string; state: unknown }> = {
  [COLLECTIONS.memberships]: {
    key: '42',
    doc: { _id: '42', org: 'org-a', id: 5, user: 42, group: 3, automatic: true },
    field: 'membership',
    state: { id: 5, user_id: 42, group_id: 3, automatic: true },
  },
  [COLLECTIONS.groups]: {
    key: '3',
    doc: { _id: '3', org: 'org-a', id: 3, name: 'Group', description: 'd' },
    field: 'group',
    state: { id: 3, name: 'Group', description: 'd' },
  },
  [COLLECTIONS.groupCourses]: {
    key: '9',
    doc: { _id: '9', org: 'org-a', id: 9, course: 'course-v1:A+B+C', group: 3 },
    field: 'group_course',
    state: { id: 9, course_id: 'course-v1:A+B+C', group_id: 3 },
  },
  [COLLECTIONS.publicCourses]: {
    key: 'course-v1:A+B+C',
    doc: { _id: 'course-v1:A+B+C', org: 'org-a', id: 2, course: 'course-v1:A+B+C' },
    field: 'public_course',
    state: { id: 2, course_id: 'course-v1:A+B+C' },
  },
  [COLLECTIONS.rules]: {
    key: '4',
    doc: { _id: '4', org: 'org-a', id: 4, name: 'Rule', domain: 'example.com', group: 3 },
    field: 'membership_rule',
    state: { id: 4, name: 'Rule', domain: 'example.com', group_id: 3 },
  },
  [COLLECTIONS.siteConfigurations]: {
    key: 'org-a',
    doc: { _id: 'org-a', org: 'org-a', ENABLE_COURSE_ACCESS_GROUPS: true },
    field: 'site_configuration',
    state: { ENABLE_COURSE_ACCESS_GROUPS: true },
  },
};

describe('change events', () => {
  test.each(Object.keys(docs))('a %s change is a valid CloudEvent carrying the record as it is, keyed and subjected by record', (collection) => {
    const { key, doc, field, state } = docs[collection]!;
    const kind = CHANGE_KINDS[collection]!;
    const { key: messageKey, event } = buildChangeEvent({ entry: entry(collection as CollectionName, [key]), index: 0, doc, version: 17 });
    expect(changeEventErrors(event)).toEqual([]);
    expect(event.type).toBe(kind.type);
    expect(event.type.startsWith(`${EVENT_TYPE_PREFIX}.`)).toBe(true);
    expect(event.subject).toBe(`${kind.resource}/${key}`);
    expect(messageKey).toBe(event.subject);
    expect(event.source).toBe('/course-access-groups/organizations/org-a');
    expect(event.id).toBe('0001767225600000.000000001.abcd1234.0');
    expect(event.time).toBe('2026-01-01T00:00:00.000Z');
    expect(event.data).toEqual({
      organization: 'org-a',
      version: 17,
      cause: 'admin',
      actor: { type: 'user', user_id: 7, role: 'site_admin' },
      request_id: 'req-1',
      [field]: state,
    });
  });

  test('a record that is gone is null; a site configuration without a document is its defaults', () => {
    const gone = buildChangeEvent({ entry: entry(COLLECTIONS.memberships, ['42']), index: 0, doc: null, version: 1 }).event;
    expect(changeEventErrors(gone)).toEqual([]);
    expect(gone.data.membership).toBeNull();
    const site = buildChangeEvent({ entry: entry(COLLECTIONS.siteConfigurations, ['org-a']), index: 0, doc: null, version: 2 }).event;
    expect(site.data.site_configuration).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });
  });

  test('a record that moved organization is published under its organization now', () => {
    const doc = { ...docs[COLLECTIONS.memberships]!.doc, org: 'org-b' };
    const { event } = buildChangeEvent({ entry: entry(COLLECTIONS.memberships, ['42']), index: 0, doc, version: 3 });
    expect(event.data.organization).toBe('org-b');
    expect(event.source).toBe('/course-access-groups/organizations/org-b');
  });

  test('events name no operator and hold no email; the message is the JSON envelope with the CloudEvents content type', () => {
    const e = entry(COLLECTIONS.memberships, ['42'], { actor: { type: 'cag', operator: 'alice@example.com' }, cause: 'import' });
    const message = toMessage(buildChangeEvent({ entry: e, index: 0, doc: docs[COLLECTIONS.memberships]!.doc, version: 1 }));
    expect(JSON.parse(message.value).data.actor).toEqual({ type: 'cag' });
    expect(message.value).not.toContain('@');
    expect(message.value).not.toContain('alice');
    expect(message.headers).toEqual({ 'content-type': 'application/cloudevents+json' });
    expect(message.key).toBe('memberships/42');
  });

  test('the schemas refuse what a consumer could not rely on', () => {
    const { event } = buildChangeEvent({ entry: entry(COLLECTIONS.groups, ['3']), index: 0, doc: docs[COLLECTIONS.groups]!.doc, version: 1 });
    expect(changeEventErrors({ ...event, data: { ...event.data, version: 0 } })).not.toEqual([]);
    expect(changeEventErrors({ ...event, data: { ...event.data, group: { id: 3 } } })).not.toEqual([]);
    expect(changeEventErrors({ ...event, data: { ...event.data, email: 'x@y.z' } })).not.toEqual([]);
    expect(changeEventErrors({ ...event, subject: undefined })).not.toEqual([]);
    expect(changeEventErrors({ ...event, type: 'org.openedx.course_access_groups.unknown.v1' })).toEqual([
      'unknown type org.openedx.course_access_groups.unknown.v1',
    ]);
  });
});

describe('audit records', () => {
  const group = (name: string, org = 'org-a') => ({ _id: '3', org, id: 3, name, description: '' });
  const audited = (b: (Record<string, unknown> | null)[], k = ['3']) => entry(COLLECTIONS.groups, k, { audit: true, b });

  test('create, update and delete, with the fields before and after (no storage keys)', () => {
    const [created] = buildAuditRecords(audited([null]), [group('A')]);
    expect(created).toMatchObject({
      _id: '0001767225600000.000000001.abcd1234.0',
      org: 'org-a',
      action: 'create',
      resource: 'course-access-groups',
      resource_id: '3',
      actor: { type: 'user', user_id: 7, role: 'site_admin' },
      actor_id: '7',
      cause: 'admin',
      request_id: 'req-1',
      before: null,
      after: { id: 3, name: 'A', description: '' },
    });
    expect(buildAuditRecords(audited([group('A')]), [group('B')])[0]).toMatchObject({ action: 'update', before: { name: 'A' }, after: { name: 'B' } });
    expect(buildAuditRecords(audited([group('A')]), [null])[0]).toMatchObject({ action: 'delete', resource_id: '3', after: null });
  });

  test('no record when nothing changed (the write never happened), nor for an entry that is not audited', () => {
    expect(buildAuditRecords(audited([group('A')]), [{ description: '', name: 'A', id: 3, org: 'org-a', _id: '3' }])).toEqual([]);
    expect(buildAuditRecords(audited([null]), [null])).toEqual([]);
    expect(buildAuditRecords(entry(COLLECTIONS.groups, ['3']), [group('A')])).toEqual([]);
  });

  test('a record now in another organization is gone for this one; cag is named with its operator; the site configuration by organization', () => {
    expect(buildAuditRecords(audited([group('A')]), [group('A', 'org-b')])[0]).toMatchObject({ action: 'delete', after: null });
    const cag = entry(COLLECTIONS.siteConfigurations, ['org-a'], { audit: true, b: [null], actor: { type: 'cag', operator: 'alice' }, cause: 'import' });
    expect(buildAuditRecords(cag, [{ _id: 'org-a', org: 'org-a', ENABLE_COURSE_ACCESS_GROUPS: true }])[0]).toMatchObject({
      actor_id: 'cag:alice',
      resource: 'site-configuration',
      resource_id: 'org-a',
      after: { ENABLE_COURSE_ACCESS_GROUPS: true },
    });
  });
});
