// Black-box attack, round 6: SPEC §5 (events) and §3 (cascades), through the real service on the
// local stack. Targets the last three commits: a membership PATCH keeps the membership it moved
// (who made it, where it began) whatever older events arrive later, and group links, public
// records and rules written with an intent and settled under their parents (src/domain/children.ts),
// with a sweep of abandoned intents in every process.
//
// Processes that must die at one exact point are spawned (src/main.ts) with their database
// connection through a proxy of this file that holds one command (found by its bytes on the wire)
// until the test lets it go, then forwards nothing more: the process is then SIGKILLed.

import type { IHeaders } from 'kafkajs';
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS } from '../../src/db/collections';
import { finishAbandonedWrites } from '../../src/domain/children';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  orgWithRule,
  produce,
  produceOne,
  startEventService,
  structured,
  TYPES,
  userData,
  waitCommitted,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { killAll, readyBaseUrl, type ServiceProcess, spawnService } from '../helpers/service-process';
import { KAFKA_BROKERS, MONGO_URL, SCHEMA_REGISTRY_URL, uniqueName } from '../helpers/stack';
import { tcpProxy } from '../helpers/tcp-proxy';
import { siteAdminToken } from '../helpers/tokens';

let service: EventTestService;
let mongo: MongoClient;
let db: Db;
const spawned: ServiceProcess[] = [];

beforeAll(async () => {
  service = await startEventService({ SCHEMA_REGISTRY_URL });
  mongo = await new MongoClient(MONGO_URL).connect();
  db = mongo.db(service.config.MONGO_DB);
  await produce(service.config.KAFKA_TOPICS[0]!, [structured(cloudEvent('org.example.unhandled.v1', {}), 'warm-up')]);
}, 60000);
afterAll(async () => {
  killAll(spawned);
  await closeProducer();
  await mongo.close();
  await service.close();
}, 60000);

type Msg = { key: string; value: string; headers?: IHeaders };
type At = { topic: string; partition: number; offset: number };
type Api = ReturnType<typeof client>;
const topicOf = (i: 0 | 1 | 2) => service.config.KAFKA_TOPICS[i]!;
const send = (m: Msg, topic = topicOf(0), partition = 0) => produceOne(topic, { ...m, partition });
const handled = (at: At) => waitCommitted(service.config.KAFKA_GROUP_ID, at, 180000);
const barrier = async (topic = topicOf(0), partition = 0) =>
  handled(await send(structured(cloudEvent('org.example.unhandled.v1', {}), 'barrier'), topic, partition));

const day = (d: number) => (s: number) => `2026-11-${String(d).padStart(2, '0')}T00:00:${String(s).padStart(2, '0')}Z`;
const userEvent = (type: string, org: string, id: number, domain: string, time: string, active = true, eventId?: string) =>
  structured(cloudEvent(type, userData(org, { id, email: `learner${id}@${domain}`, is_active: active }), { time, ...(eventId ? { id: eventId } : {}) }), id);
const retirement = (id: number, time: string) => structured(cloudEvent(TYPES.retired, { user: { id } }, { time }), id);
const catalog = (org: string, key: string, time: string, name = 'C') =>
  structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, { time }), key);
const courseDeleted = (key: string, time: string) => structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time }), key);

/** The learner's membership as the REST API and the database show it. */
async function membershipSeen(api: Api, org: string, user: number) {
  const u = await api.get(`users/${user}/`);
  const list = (await api.get('memberships/?limit=1000')).body.results as { id: number; user: { id: number }; group: { id: number } }[];
  const mine = list.filter((m) => m.user.id === user);
  const stored = await db.collection('memberships').findOne({ org, user } as never);
  return {
    user: u.status === 404 ? 'absent' : u.body.membership ? { id: u.body.membership.id, group: u.body.membership.group.id } : null,
    listed: mine.map((m) => ({ id: m.id, group: m.group.id })),
    automatic: stored ? (stored as unknown as { automatic: boolean }).automatic : 'none',
  };
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T, R>(items: readonly T[], width: number, work: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await work(items[i]!, i);
      }
    }),
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// 1. A PATCH keeps the membership it moved, as the administrator saw it.

/**
 * A learner activated at 5 (rule d -> G1) whose membership the administrator moves to G2; then,
 * in the order `order`, G1 is deleted and `late` events (older than the move) arrive. Returns what
 * the learner's membership is, with the id the administrator moved.
 */
async function moveThenLate(order: 'deletion first' | 'late first' | 'no deletion', late: (d: string) => (org: string, id: number) => Msg[]) {
  const d = `mv-${Math.random().toString(36).slice(2, 8)}.edu`;
  const { org, api, group: g1 } = await orgWithRule(service, d);
  const g2 = (await api.post('course-access-groups/', { name: 'g2', description: '' })).body.id as number;
  const id = newUserId();
  const t = day(1);
  await handled(await send(userEvent(TYPES.activated, org, id, d, t(5))));
  const before = (await api.get(`users/${id}/`)).body.membership as { id: number; group: { id: number } };
  expect(before.group.id).toBe(g1.id);
  expect((await api.patch(`memberships/${before.id}/`, { group: g2 })).status).toBe(200);
  const lateEvents = async () => {
    let last: At | undefined;
    for (const m of late(d)(org, id)) last = await send(m);
    if (last) await handled(last);
  };
  if (order === 'deletion first') expect((await api.delete(`course-access-groups/${g1.id}/`)).status).toBe(204);
  await lateEvents();
  if (order === 'late first') expect((await api.delete(`course-access-groups/${g1.id}/`)).status).toBe(204);
  const seen = await membershipSeen(api, org, id);
  return { seen, expected: { user: { id: before.id, group: g2 }, listed: [{ id: before.id, group: g2 }], automatic: true } };
}

const lateCases: [string, (d: string) => (org: string, id: number) => Msg[]][] = [
  ['an older activation of 3 of the same domain', (d) => (org, id) => [userEvent(TYPES.activated, org, id, d, day(1)(3))]],
  [
    'an older registration (inactive) of 2 and login of 3',
    (d) => (org, id) => [userEvent(TYPES.registered, org, id, d, day(1)(2), false), userEvent(TYPES.login, org, id, d, day(1)(3))],
  ],
  ['an older login of 3 with a domain no rule matches', () => (org, id) => [userEvent(TYPES.login, org, id, 'nowhere.example', day(1)(3))]],
  ['an older deactivation of 4', (d) => (org, id) => [userEvent(TYPES.updated, org, id, d, day(1)(4), false)]],
  [
    'an older retirement of 2 and registration (active) of 3',
    (d) => (org, id) => [retirement(id, day(1)(2)), userEvent(TYPES.registered, org, id, d, day(1)(3))],
  ],
];

// SPEC §5: apart from ties, the outcome does not depend on the order in which the events (and the
// group's deletion) arrive; "an administrator's later change stands". The administrator moved a
// rule's membership: it stays that membership (its id, automatic), in G2, whatever arrives late.
describe.each(lateCases)('a rule membership (activation of 5) moved by PATCH to G2, then %s', (_name, lateOf) => {
  test.each(['deletion first', 'late first', 'no deletion'] as const)(
    'G1 deleted (%s): the moved membership stands in G2, automatic, with its id',
    async (order) => {
      const { seen, expected } = await moveThenLate(order, lateOf);
      expect(seen).toEqual(expected);
    },
    240000,
  );
});

// The same, the late event the activation itself again (a redelivery of the same source and id)
// and an older one, after the membership was moved twice.
test('a rule membership moved to G2 and back to G1, G1 not deleted, then the activation redelivered and an older login of another domain: it stays in G1, automatic, its id', async () => {
  const d = 'mv-redeliver.edu';
  const { org, api, group: g1 } = await orgWithRule(service, d);
  const g2 = (await api.post('course-access-groups/', { name: 'g2', description: '' })).body.id as number;
  const id = newUserId();
  const activation = userEvent(TYPES.activated, org, id, d, day(2)(5));
  await handled(await send(activation));
  const mid = (await api.get(`users/${id}/`)).body.membership.id as number;
  expect((await api.patch(`memberships/${mid}/`, { group: g2 })).status).toBe(200);
  expect((await api.patch(`memberships/${mid}/`, { group: g1.id })).status).toBe(200);
  await send(activation);
  await handled(await send(userEvent(TYPES.login, org, id, 'other.example', day(2)(3))));
  expect(await membershipSeen(api, org, id)).toEqual({ user: { id: mid, group: g1.id }, listed: [{ id: mid, group: g1.id }], automatic: true });
}, 240000);

// An administrator's membership (not automatic) moved, with a late older activation whose rule
// matches: the move keeps who made it (the administrator), whichever of the deletion and the late
// event comes first.
test.each(['deletion first', 'late first'] as const)(
  'an administrator’s membership in G1 moved to G2, then (%s) G1 deleted and an older activation of a rule’s domain: it stays the administrator’s, in G2',
  async (order) => {
    const d = `mv-admin-${order.length}.edu`;
    const { org, api } = await orgWithRule(service, d);
    const g1 = (await api.post('course-access-groups/', { name: 'g1', description: '' })).body.id as number;
    const g2 = (await api.post('course-access-groups/', { name: 'g2', description: '' })).body.id as number;
    const id = newUserId();
    await handled(await send(userEvent(TYPES.activated, org, id, 'nomatch.example', day(3)(5))));
    const made = await api.post('memberships/', { user: id, group: g1 });
    expect(made.status).toBe(201);
    expect((await api.patch(`memberships/${made.body.id}/`, { group: g2 })).status).toBe(200);
    if (order === 'deletion first') expect((await api.delete(`course-access-groups/${g1}/`)).status).toBe(204);
    await handled(await send(userEvent(TYPES.activated, org, id, d, day(3)(3))));
    if (order === 'late first') expect((await api.delete(`course-access-groups/${g1}/`)).status).toBe(204);
    expect(await membershipSeen(api, org, id)).toEqual({
      user: { id: made.body.id, group: g2 },
      listed: [{ id: made.body.id, group: g2 }],
      automatic: false,
    });
  },
  240000,
);

// ---------------------------------------------------------------------------------------------
// 2. Children (links, public records, rules) under their parents: races and duplicates.

const courseKeys = (prefix: string, n: number) => Array.from({ length: n }, () => `course-v1:${prefix}+${newUserId()}+R`);
async function catalogCourses(org: string, keys: string[], time = day(10)(1)) {
  await produce(topicOf(2), keys.map((k) => ({ ...catalog(org, k, time), partition: 0 })) as never);
  await barrier(topicOf(2), 0);
}

/** What the courses list says of links and public records, against the links and public records themselves. */
async function listFacts(api: Api) {
  const keys = async (q: string) => {
    const out: string[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = (await api.get(`courses/?limit=1000&offset=${offset}${q}`)).body.results as { id: string }[];
      out.push(...page.map((c) => c.id));
      if (page.length < 1000) return out.sort();
    }
  };
  const [withLink, withoutLink, isPublic, notPublic] = [
    await keys('&no_group=false'),
    await keys('&no_group=true'),
    await keys('&is_public=true'),
    await keys('&is_public=false'),
  ];
  const links = (await api.get('group-courses/?limit=1000')).body.results as { id: number; course: { id: string }; group: { id: number } }[];
  const publics = (await api.get('public-courses/?limit=1000')).body.results as { course: { id: string } }[];
  const all = await keys('');
  const linked = [...new Set(links.map((l) => l.course.id))].sort();
  const pub = publics.map((p) => p.course.id).sort();
  return {
    all,
    links,
    publics: pub,
    disagreements: {
      withLink: withLink.filter((k) => !linked.includes(k)),
      linkedNotListed: linked.filter((k) => !withLink.includes(k)),
      withoutLinkButLinked: withoutLink.filter((k) => linked.includes(k)),
      missingFromWithout: all.filter((k) => !linked.includes(k) && !withoutLink.includes(k)),
      isPublicWithout: isPublic.filter((k) => !pub.includes(k)),
      publicNotListed: pub.filter((k) => !isPublic.includes(k)),
      notPublicButPublic: notPublic.filter((k) => pub.includes(k)),
    },
  };
}
const noDisagreement = {
  withLink: [],
  linkedNotListed: [],
  withoutLinkButLinked: [],
  missingFromWithout: [],
  isPublicWithout: [],
  publicNotListed: [],
  notPublicButPublic: [],
};
const openIntents = (org: string) => db.collection(COLLECTIONS.writeIntents).countDocuments({ org } as never);

// SPEC §3: "a (course, group) link is unique; a course has at most one public record; a domain has
// at most one rule per organization", "Nothing is written when a request is refused." Two
// administrators POST the same link, public record and rule 8 times each at once.
test('two administrators POST the same link, public record and rule 8 times each at once: one 201 each, the rest 400, one record each, list facts agree, no intent left open', async () => {
  const { org, api, group } = await orgWithRule(service, 'dup-decoy.edu');
  const other = client(service.baseUrl, await siteAdminToken(org, 77));
  const [course] = courseKeys('DUP', 1);
  await catalogCourses(org, [course!]);
  const both = (i: number) => (i % 2 ? api : other);
  const tries = Array.from({ length: 16 }, (_, i) => i);
  const [links, publics, rules] = await Promise.all([
    Promise.all(tries.map((i) => both(i).post('group-courses/', { course, group: group.id }))),
    Promise.all(tries.map((i) => both(i).post('public-courses/', { course }))),
    Promise.all(tries.map((i) => both(i).post('membership-rules/', { name: `r${i}`, domain: 'dup.edu', group: group.id }))),
  ]);
  const statuses = (rs: { status: number }[]) => rs.map((r) => r.status).sort();
  const oneCreated = [201, ...Array(15).fill(400)];
  expect({ links: statuses(links), publics: statuses(publics), rules: statuses(rules) }).toEqual({ links: oneCreated, publics: oneCreated, rules: oneCreated });
  const facts = await listFacts(api);
  expect({
    links: facts.links.map((l) => [l.course.id, l.group.id]),
    publics: facts.publics,
    rules: ((await api.get('membership-rules/?limit=100')).body.results as { domain: string }[]).map((r) => r.domain).sort(),
    disagreements: facts.disagreements,
    intents: await openIntents(org),
  }).toEqual({
    links: [[course, group.id]],
    publics: [course],
    rules: ['dup-decoy.edu', 'dup.edu'],
    disagreements: noDisagreement,
    intents: 0,
  });
}, 240000);

// SPEC §3: "Deleting a group deletes its memberships, rules and course links", "Nothing is written
// when a request is refused", and §5 "A membership, group link or public record never outlives
// its learner, course or group [...] whatever the order in which an administrator's write [...]
// and the deletion or move meet". POSTs of links and rules to a group racing its deletion, POSTs
// of public records racing their courses' deletion (half) or move (a quarter) by events.
test('40 link and 10 rule POSTs to a group racing its deletion, 40 public-record POSTs racing course deletions and moves: nothing outlives its parent, every 201 whose parents stand stands, list facts agree', async () => {
  const { org, api, group: doomed } = await orgWithRule(service, 'race-decoy.edu');
  const keep = (await api.post('course-access-groups/', { name: 'keep', description: '' })).body.id as number;
  const courses = courseKeys('RACE', 40);
  await catalogCourses(org, courses);
  const leaving = courses.slice(0, 30);
  const events = leaving.map((k, i) => (i % 3 === 2 ? catalog(`${org}-b`, k, day(10)(9), 'Moved') : courseDeleted(k, day(10)(9))));

  const [linkPosts, keepPosts, rulePosts, publicPosts] = await Promise.all([
    inParallel(courses, 8, (course) => api.post('group-courses/', { course, group: doomed.id })),
    inParallel(courses, 8, (course) => api.post('group-courses/', { course, group: keep })),
    inParallel(
      Array.from({ length: 10 }, (_, i) => i),
      4,
      (i) => api.post('membership-rules/', { name: `r${i}`, domain: `race${i}.edu`, group: doomed.id }),
    ),
    inParallel(courses, 8, (course) => api.post('public-courses/', { course })),
    (async () => {
      await new Promise((r) => setTimeout(r, 50));
      return api.delete(`course-access-groups/${doomed.id}/`);
    })(),
    (async () => {
      for (const m of events) await send(m, topicOf(2), 1);
      await barrier(topicOf(2), 1);
    })(),
  ]);
  const facts = await listFacts(api);
  const standing = new Set(courses.slice(30));
  const answered = (rs: { status: number; body: unknown }[]) => rs.filter((r) => r.status !== 201 && r.status !== 400).map((r) => [r.status, r.body]);
  expect({
    unexpected: answered([...linkPosts, ...keepPosts, ...rulePosts, ...publicPosts]),
    onDoomed: facts.links.filter((l) => l.group.id === doomed.id).map((l) => l.id),
    onGone: facts.links.filter((l) => !standing.has(l.course.id)).map((l) => l.course.id),
    publicOnGone: facts.publics.filter((k) => !standing.has(k)),
    rulesOnDoomed: ((await api.get('membership-rules/?limit=100')).body.results as { group: { id: number } }[]).filter((r) => r.group.id === doomed.id).length,
    // Acknowledged and with their parents standing: must stand.
    keepLost: courses.filter((k, i) => standing.has(k) && keepPosts[i]!.status === 201 && !facts.links.some((l) => l.course.id === k && l.group.id === keep)),
    publicLost: courses.filter((k, i) => standing.has(k) && publicPosts[i]!.status === 201 && !facts.publics.includes(k)),
    // Refused: nothing written.
    refusedButThere: courses.filter(
      (k, i) => keepPosts[i]!.status === 400 && standing.has(k) && facts.links.some((l) => l.course.id === k && l.group.id === keep),
    ),
    disagreements: facts.disagreements,
    intents: await openIntents(org),
  }).toEqual({
    unexpected: [],
    onDoomed: [],
    onGone: [],
    publicOnGone: [],
    rulesOnDoomed: 0,
    keepLost: [],
    publicLost: [],
    refusedButThere: [],
    disagreements: noDisagreement,
    intents: 0,
  });
}, 300000);

// SPEC §3 PATCH of links and rules onto groups being deleted and courses being deleted; a refused
// PATCH (400: the pair already linked, an unknown group) changes nothing.
test('links and rules PATCHed onto other groups (deleted meanwhile) and courses (deleted meanwhile) by two administrators, and refused PATCHes: nothing on a gone parent, refused ones unchanged, list facts agree', async () => {
  const { org, api } = await orgWithRule(service, 'patch-decoy.edu');
  const second = client(service.baseUrl, await siteAdminToken(org, 78));
  const mk = async (name: string) => (await api.post('course-access-groups/', { name, description: '' })).body.id as number;
  const [home, doomedA, doomedB] = [await mk('home'), await mk('doomedA'), await mk('doomedB')];
  const from = courseKeys('PF', 30);
  const onto = courseKeys('PT', 30);
  await catalogCourses(org, [...from, ...onto]);
  const links = await inParallel(from, 8, async (course) => (await api.post('group-courses/', { course, group: home })).body.id as number);
  const rules = await inParallel(
    Array.from({ length: 10 }, (_, i) => i),
    4,
    async (i) => (await api.post('membership-rules/', { name: `p${i}`, domain: `patch${i}.edu`, group: home })).body.id as number,
  );
  // Refused PATCHes first (nothing may change): onto a linked pair, onto an unknown group.
  const dupe = await api.patch(`group-courses/${links[1]}/`, { course: from[0] });
  const unknown = await api.patch(`group-courses/${links[2]}/`, { group: 999999 });
  const ruleUnknown = await api.patch(`membership-rules/${rules[0]}/`, { group: 999999, name: 'renamed' });
  expect([dupe.status, unknown.status, ruleUnknown.status]).toEqual([400, 400, 400]);
  const refusedFacts = await listFacts(api);
  expect({
    link1: (await api.get(`group-courses/${links[1]}/`)).body.course.id,
    link2: (await api.get(`group-courses/${links[2]}/`)).body.group.id,
    rule0: (await api.get(`membership-rules/${rules[0]}/`)).body.name,
    disagreements: refusedFacts.disagreements,
    intents: await openIntents(org),
  }).toEqual({ link1: from[1], link2: home, rule0: 'p0', disagreements: noDisagreement, intents: 0 });

  await Promise.all([
    inParallel(links, 6, (id, i) =>
      (i % 2 ? api : second).patch(
        `group-courses/${id}/`,
        i % 3 === 0 ? { group: doomedA } : i % 3 === 1 ? { course: onto[i] } : { group: doomedB, course: onto[i] },
      ),
    ),
    inParallel(rules, 3, (id, i) => (i % 2 ? second : api).patch(`membership-rules/${id}/`, { group: i % 2 ? doomedA : doomedB })),
    second.delete(`course-access-groups/${doomedA}/`),
    api.delete(`course-access-groups/${doomedB}/`),
    (async () => {
      for (const k of onto.slice(0, 15)) await send(courseDeleted(k, day(10)(20)), topicOf(2), 2);
      await barrier(topicOf(2), 2);
    })(),
  ]);
  const facts = await listFacts(api);
  const gone = new Set(onto.slice(0, 15));
  const ruleList = (await api.get('membership-rules/?limit=100')).body.results as { id: number; name: string; group: { id: number } }[];
  expect({
    onDeletedGroups: facts.links.filter((l) => l.group.id === doomedA || l.group.id === doomedB).map((l) => l.id),
    onDeletedCourses: facts.links.filter((l) => gone.has(l.course.id)).map((l) => l.id),
    rulesOnDeleted: ruleList.filter((r) => r.group.id !== home && r.group.id !== ruleList.find((x) => x.name === 'patch-decoy.edu')?.group.id).map((r) => r.id),
    refusedRule: ruleList.find((r) => r.id === rules[0]) ? { name: ruleList.find((r) => r.id === rules[0])!.name } : 'gone',
    disagreements: facts.disagreements,
    intents: await openIntents(org),
  }).toEqual({
    onDeletedGroups: [],
    onDeletedCourses: [],
    rulesOnDeleted: [],
    refusedRule: 'gone', // PATCHed onto doomedB afterwards (i = 0): gone with it
    disagreements: noDisagreement,
    intents: 0,
  });
}, 300000);

// ---------------------------------------------------------------------------------------------
// 3. Processes that die at one point: the child's writer, and the group's deleter.

/** A BSON string element `key: value`, as a command's first element is on the wire. */
const bsonString = (key: string, value: string) => {
  const v = Buffer.from(`${value}\0`, 'latin1');
  const len = Buffer.alloc(4);
  len.writeInt32LE(v.length);
  return Buffer.concat([Buffer.from(`\x02${key}\0`, 'latin1'), len, v]);
};

/**
 * A TCP forwarder to the database that holds each command whose bytes contain a marker given to
 * `hold` (the command's first element, e.g. `insert: "group_courses"`), until `releaseAndFreeze`:
 * then the held commands go to the server and nothing more passes either way (the process is
 * stuck there until killed).
 */
function holdingProxy() {
  const target = { host: '127.0.0.1', port: Number(new URL(MONGO_URL).port || 27017) };
  const traps: { marker: Buffer; caught: (held: () => void) => void }[] = [];
  const held: (() => void)[] = [];
  let frozen = false;
  const proxy = tcpProxy(target, 0, (inbound, outbound) => {
    inbound.on('data', (chunk: Buffer) => {
      if (frozen) return;
      const i = traps.findIndex((t) => chunk.includes(t.marker));
      if (i >= 0) {
        const [trap] = traps.splice(i, 1);
        inbound.pause();
        held.push(() => outbound.write(chunk));
        trap!.caught(() => undefined);
        return;
      }
      outbound.write(chunk);
    });
    outbound.on('data', (chunk: Buffer) => {
      if (!frozen) inbound.write(chunk);
    });
  });
  return {
    get port() {
      return proxy.port;
    },
    open: () => proxy.open(),
    /** Resolves when a command carrying `marker` is caught (and held). */
    hold(marker: Buffer): Promise<void> {
      return new Promise((resolve) => traps.push({ marker, caught: () => resolve() }));
    },
    releaseAndFreeze() {
      for (const write of held.splice(0)) write();
      frozen = true;
    },
    close: () => proxy.cut(),
  };
}

/** src/main.ts as an API process of this file's deployment, its database through `proxyPort`. */
async function apiProcess(proxyPort: number): Promise<{ process: ServiceProcess; baseUrl: string }> {
  const p = spawnService({
    MONGO_URL: `mongodb://127.0.0.1:${proxyPort}/?directConnection=true`,
    MONGO_DB: service.config.MONGO_DB,
    KAFKA_BROKERS,
    KAFKA_TOPICS: uniqueName('unused'),
    KAFKA_GROUP_ID: uniqueName('g'),
    CHANGES_TOPIC: '',
    SERVICE_ROLE: 'api',
    PORT: '0',
  });
  spawned.push(p);
  return { process: p, baseUrl: await readyBaseUrl(p, 60000) };
}

const stage = (what: string) => process.stderr.write(`[r6 ${new Date().toISOString()}] ${what}\n`);
/** `p`, or a failure naming `what` after `ms`. */
const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms))]);
/**
 * R6_SWEEP_WAIT_MS (185000: the lease of two minutes and the sweep's minute, with a margin): wait
 * for the service's own sweep. Unset, the test runs the sweep itself (any process may), with the
 * lease past: the same function on the same intents, without the three minutes.
 */
const SWEEP_WAIT_MS = Number(process.env.R6_SWEEP_WAIT_MS || 0);

const stored = (collection: string, filter: Record<string, unknown>) => db.collection(collection).countDocuments(filter as never);

// SPEC §5: "A membership, group link or public record never outlives its learner, course or group
// [...] whatever the order in which an administrator's write [...] and the deletion or move meet";
// docs/event-core.md "A child's write survives its process". Two processes die at one point each:
//  W, the writer of a link, a rule and a public record, after the writes and before the parents'
//    second read, their parents' deletion (a group; a course by an event) having swept before;
//  D, the deleter of a group, after the group's delete and before its second sweep, a link, a rule
//    and a membership having been made (201) under the group after its first sweep.
// 3 minutes later (the sweep runs each minute, for intents older than two), nothing of either
// stands under a gone parent, and the lists and access decisions agree.
test('SIGKILL of a child writer after its writes (parents deleted just before) and of a group deleter between its delete and its second sweep: 3 minutes later nothing stands under a gone parent', async () => {
  // --- W: the child writer.
  const w = await orgWithRule(service, 'w-decoy.edu');
  const wg = (await w.api.post('course-access-groups/', { name: 'w', description: '' })).body.id as number;
  const [wLinkCourse, wPublicCourse] = courseKeys('WK', 2);
  await catalogCourses(w.org, [wLinkCourse!, wPublicCourse!]);
  const wProxy = holdingProxy();
  await wProxy.open();
  const writer = await apiProcess(wProxy.port);
  const wApi = client(writer.baseUrl, await siteAdminToken(w.org));
  const caught = [
    wProxy.hold(bsonString('insert', 'group_courses')),
    wProxy.hold(bsonString('insert', 'membership_rules')),
    wProxy.hold(bsonString('insert', 'public_courses')),
  ];
  const writes = [
    wApi.post('group-courses/', { course: wLinkCourse, group: wg }),
    wApi.post('membership-rules/', { name: 'w', domain: 'w-killed.edu', group: wg }),
    wApi.post('public-courses/', { course: wPublicCourse }),
  ].map((p) => p.catch((e: Error) => e.message));
  stage('writer up; writes sent');
  await within(Promise.all(caught.map((c, i) => c.then(() => stage(`caught ${i}`)))), 30000, 'the writer’s three inserts caught');
  // The parents go while the children's writes are held: their sweeps find nothing.
  expect((await w.api.delete(`course-access-groups/${wg}/`)).status).toBe(204);
  await handled(await send(courseDeleted(wPublicCourse!, day(11)(9)), topicOf(2), 0));
  wProxy.releaseAndFreeze();
  const wOrphans = async () => ({
    link: await stored('group_courses', { org: w.org, group: wg }),
    rule: await stored('membership_rules', { org: w.org, group: wg }),
    public: await stored('public_courses', { org: w.org, course: wPublicCourse }),
  });
  // Precondition: the writes reached the database (the point this case is about).
  await waitFor(wOrphans, (o) => o.link === 1 && o.rule === 1 && o.public === 1, 10000);
  writer.process.child.kill('SIGKILL');
  await writer.process.exited;
  await Promise.all(writes);

  // --- D: the group deleter.
  const d = await orgWithRule(service, 'd-decoy.edu');
  const dg = (await d.api.post('course-access-groups/', { name: 'd', description: '' })).body.id as number;
  const [dCourse] = courseKeys('DK', 1);
  await catalogCourses(d.org, [dCourse!]);
  const learner = newUserId();
  await handled(await send(userEvent(TYPES.activated, d.org, learner, 'nomatch.example', day(11)(5))));
  expect((await d.api.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true })).status).toBe(200);
  const dProxy = holdingProxy();
  await dProxy.open();
  const deleter = await apiProcess(dProxy.port);
  const dApi = client(deleter.baseUrl, await siteAdminToken(d.org));
  const deleteCaught = dProxy.hold(bsonString('findAndModify', 'groups'));
  const deletion = dApi.delete(`course-access-groups/${dg}/`).catch((e: Error) => e.message);
  stage('deleter up; delete sent');
  await within(deleteCaught, 30000, 'the deleter’s delete of the group caught');
  // After the deleter's first sweep, before its delete: an administrator makes children of the group.
  const made = {
    link: (await d.api.post('group-courses/', { course: dCourse, group: dg })).status,
    rule: (await d.api.post('membership-rules/', { name: 'd', domain: 'd-killed.edu', group: dg })).status,
    membership: (await d.api.post('memberships/', { user: learner, group: dg })).status,
  };
  expect(made).toEqual({ link: 201, rule: 201, membership: 201 });
  dProxy.releaseAndFreeze();
  await waitFor(
    () => stored('groups', { org: d.org, id: dg }),
    (n) => n === 0,
    10000,
  );
  deleter.process.child.kill('SIGKILL');
  await deleter.process.exited;
  await deletion;
  const retry = (await d.api.delete(`course-access-groups/${dg}/`)).status;

  // --- The sweep (3 minutes later, or run here).
  stage('both killed; waiting');
  if (SWEEP_WAIT_MS > 0) await new Promise((r) => setTimeout(r, SWEEP_WAIT_MS));
  else expect(await finishAbandonedWrites(db, 0, Date.now() + 1)).toBe(4); // W's three children and D's deletion
  const svc = client(service.baseUrl, await siteAdminToken(d.org));
  const dFacts = await listFacts(d.api);
  const wFacts = await listFacts(w.api);
  const seen = {
    w: {
      stored: await wOrphans(),
      links: wFacts.links.length,
      publics: wFacts.publics,
      disagreements: wFacts.disagreements,
      intents: await openIntents(w.org),
    },
    d: {
      retry,
      group: (await d.api.get(`course-access-groups/${dg}/`)).status,
      stored: {
        link: await stored('group_courses', { org: d.org, group: dg }),
        rule: await stored('membership_rules', { org: d.org, group: dg }),
        membership: await stored('memberships', { org: d.org, group: dg }),
      },
      links: dFacts.links.map((l) => l.group.id),
      rules: ((await d.api.get('membership-rules/?limit=100')).body.results as { group: { id: number } }[]).filter((r) => r.group.id === dg).length,
      membership: (await d.api.get(`users/${learner}/`)).body.membership,
      memberships: ((await d.api.get('memberships/?limit=100')).body.results as { user: { id: number } }[]).filter((m) => m.user.id === learner).length,
      access: (await svc.get(`access/?course_id=${encodeURIComponent(dCourse!)}&action=course.enroll&user_id=${learner}`)).body,
      disagreements: dFacts.disagreements,
    },
  };
  // W held when found; D was finding 1 of black-box round 6 (stop 63), fixed by the deletion's intent.
  await Promise.all([wProxy.close(), dProxy.close()]);
  expect(seen.w).toEqual({ stored: { link: 0, rule: 0, public: 0 }, links: 0, publics: [], disagreements: noDisagreement, intents: 0 });
  expect(seen.d).toEqual({
    retry: 404,
    group: 404,
    stored: { link: 0, rule: 0, membership: 0 },
    links: [],
    rules: 0,
    membership: null,
    memberships: 0,
    access: { allowed: false, reason: 'no_access' },
    disagreements: noDisagreement,
  });
}, 420000);
