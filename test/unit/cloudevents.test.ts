// docs/events.md: both Kafka bindings of CloudEvents 1.0 decode into one envelope; anything else is invalid.
import { decodeCloudEvent, InvalidMessage } from '../../consumers/cloudevents';
import { orgFromCourseKey } from '../../src/domain/courses';
import { normalizeEventTime } from '../../src/domain/event-time';
import { emailDomain } from '../../src/domain/rule-match';

const envelope = {
  specversion: '1.0',
  id: 'evt-1',
  source: 'openedx/lms/web',
  type: 'org.openedx.learning.user.account.activated.v1',
  time: '2026-03-01T10:00:00.123456+01:00',
  data: { user: { id: 7 } },
};
const msg = (value: string | null, headers: Record<string, string> = {}) => ({
  value: value === null ? null : Buffer.from(value),
  headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)])),
  timestamp: String(Date.parse('2026-04-01T00:00:00Z')),
});

test('structured mode: the value is the envelope', () => {
  const event = decodeCloudEvent(msg(JSON.stringify(envelope), { 'content-type': 'application/cloudevents+json' }));
  expect(event).toMatchObject({ id: 'evt-1', type: envelope.type, data: envelope.data, mode: 'structured' });
  expect(event.eventTime).toBe('2026-03-01T09:00:00.123456000Z');
});

test('binary mode: ce_* headers are the attributes and the value is data', () => {
  const event = decodeCloudEvent(
    msg(JSON.stringify({ user: { id: 7 } }), {
      ce_specversion: '1.0',
      ce_id: 'evt-2',
      ce_type: envelope.type,
      ce_source: 'openedx/lms/web',
      ce_time: '2026-03-01T09:00:00Z',
      'content-type': 'application/json',
    }),
  );
  expect(event).toMatchObject({ id: 'evt-2', type: envelope.type, data: { user: { id: 7 } }, mode: 'binary', datacontenttype: 'application/json' });
  expect(event.eventTime).toBe('2026-03-01T09:00:00.000000000Z');
});

test('an event without time is ordered by the Kafka record timestamp', () => {
  const { time: _time, ...untimed } = envelope;
  expect(decodeCloudEvent(msg(JSON.stringify(untimed))).eventTime).toBe('2026-04-01T00:00:00.000000000Z');
});

test.each([
  ['not JSON', msg('{nope'), /not JSON/],
  ['an empty value', msg(null), /empty/],
  ['a JSON array', msg('[1]'), /not a CloudEvent/],
  ['no id', msg(JSON.stringify({ ...envelope, id: undefined })), /not a CloudEvent: .*id/],
  ['specversion 0.3', msg(JSON.stringify({ ...envelope, specversion: '0.3' })), /not a CloudEvent/],
  ['a time that is not RFC 3339', msg(JSON.stringify({ ...envelope, time: 'yesterday' })), /not a CloudEvent/],
  ['binary mode with a value that is not JSON', msg('x', { ce_specversion: '1.0', ce_id: 'a', ce_type: 't', ce_source: 's' }), /not JSON/],
  ['binary mode without ce_id', msg('{}', { ce_specversion: '1.0', ce_type: 't', ce_source: 's' }), /not a CloudEvent/],
  [
    'a ce_* header without a value',
    { ...msg('{}', { ce_specversion: '1.0', ce_type: 't', ce_source: 's' }), headers: { ce_specversion: Buffer.from('1.0'), ce_id: null } as never },
    /header ce_id has no value/,
  ],
  [
    'a content-type header without a value',
    {
      ...msg('{}', { ce_specversion: '1.0', ce_id: 'a', ce_type: 't', ce_source: 's' }),
      headers: { ce_specversion: Buffer.from('1.0'), 'content-type': null } as never,
    },
    /header content-type has no value/,
  ],
])('%s is an invalid message (dead-lettered, not retried)', (_name, message, reason) => {
  expect(() => decodeCloudEvent(message)).toThrow(InvalidMessage);
  expect(() => decodeCloudEvent(message)).toThrow(reason);
});

test('event times compare as instants whatever their offset and precision', () => {
  const times = ['2026-01-01T00:00:00.5Z', '2026-01-01T01:00:00.4+01:00', '2026-01-01T00:00:00.400001Z', '2025-12-31T23:59:59.999999999-00:00'];
  const sorted = [...times].sort((a, b) => (normalizeEventTime(a) < normalizeEventTime(b) ? -1 : 1));
  expect(sorted).toEqual(['2025-12-31T23:59:59.999999999-00:00', '2026-01-01T01:00:00.4+01:00', '2026-01-01T00:00:00.400001Z', '2026-01-01T00:00:00.5Z']);
});

test('the rule domain is what follows the last @, lowercased', () => {
  expect(emailDomain('"a@b"@Example.COM')).toBe('example.com');
  expect(emailDomain('nobody')).toBeNull();
  expect(emailDomain('trailing@')).toBeNull();
});

test('the organization of a course-v1 key is its ORG part', () => {
  expect(orgFromCourseKey('course-v1:OrgX+CS101+2026_T1')).toBe('OrgX');
  expect(orgFromCourseKey('OrgX/CS101/2026')).toBeNull();
});

test('times at the edges: a leap second is the last instant of its minute, offsets give instants, what cannot be stored in order is refused with its reason', () => {
  expect(normalizeEventTime('2016-12-31T23:59:60Z')).toBe('2016-12-31T23:59:59.999999999Z');
  expect(normalizeEventTime('2016-12-31T18:59:60.25-05:00')).toBe('2016-12-31T23:59:59.999999999Z');
  expect(normalizeEventTime('2016-12-31T23:59:59.5Z') < normalizeEventTime('2016-12-31T23:59:60Z')).toBe(true);
  expect(normalizeEventTime('2016-12-31T23:59:60Z') < normalizeEventTime('2017-01-01T00:00:00Z')).toBe(true);
  expect(normalizeEventTime('2026-01-01T12:00:00+14:00')).toBe('2025-12-31T22:00:00.000000000Z');
  expect(normalizeEventTime('0099-03-01T00:00:00Z')).toBe('0099-03-01T00:00:00.000000000Z');
  expect(normalizeEventTime('2026-01-01T00:00:00.1234567890000Z')).toBe('2026-01-01T00:00:00.123456789Z');
  expect(() => normalizeEventTime('9999-12-31T23:00:00-05:00')).toThrow(/years 0000 to 9999/);
  expect(() => normalizeEventTime('0000-01-01T00:30:00+01:00')).toThrow(/years 0000 to 9999/);
  expect(() => normalizeEventTime('2026-01-01T00:00:00.1234567891Z')).toThrow(/finer than nanoseconds/);
  for (const bad of ['2023-02-29T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T23:60:00Z', '2026-01-01T00:00:00+24:00']) {
    expect(() => normalizeEventTime(bad)).toThrow(/not an RFC 3339/);
  }
});

test.each([
  ['a leap second', '2016-12-31T23:59:60Z', null],
  ['year 10000 in UTC', '9999-12-31T23:00:00-05:00', /time "9999-12-31T23:00:00-05:00": .*years 0000 to 9999/],
  ['a fraction finer than nanoseconds', '2026-01-01T00:00:00.0000000001Z', /finer than nanoseconds/],
])('an event whose time has %s is decoded or refused with its reason', (_name, time, reason) => {
  const message = msg(JSON.stringify({ specversion: '1.0', id: 'a', source: 's', type: 't', time, data: {} }));
  if (reason === null) expect(decodeCloudEvent(message).eventTime).toBe('2016-12-31T23:59:59.999999999Z');
  else expect(() => decodeCloudEvent(message)).toThrow(reason);
});
