// Issue 14, fault 2: the broker (a private Kafka node) is down for a while while administrators
// keep writing: stopped, FAULTS_BROKER_DOWN_SECONDS (15) of waiting, then started again, which on
// the shared 2-core machine itself takes 30-45 s (the outage measured is printed; the issue's
// 60 s of waiting: FAULTS_BROKER_DOWN_SECONDS=60). Writes never wait
// for the broker; the outbox holds their changes; once the broker is back, every change is
// published, in order per record, and each record's newest event is its state in the database.
// Issue 27: meanwhile imports of FAULTS_BACKLOG (1,000) rule-matching learners pile a thousand
// changes up in the outbox, on a one-partition changes topic that takes 300 KiB a request: more
// than the broker takes in one request (sent as one, the broker refuses them for good; the test
// checks the premise). Every one of them arrives once the broker is back, and the outbox empties
// (nothing stuck). The topic's limit is the broker's 1 MiB cut to 300 KiB (still above the
// relay's 256 KiB a send) so that a backlog of 1,000 crosses it as 4,000 crossed 1 MiB: 4,000
// learners took about 100 s to import on 2 cores and proved nothing more.
import { COLLECTIONS, type OutboxDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { normalizeEventTime } from '../../src/domain/event-time';
import { importUserBatch, linesAt } from '../../src/domain/import-users';
import { type ChangeReader, changeReader, expectInOrderPerRecord, payloadBytes } from '../helpers/changes';
import { groupWithRule } from '../helpers/domain';
import { type EventTestService, metricValue, newUserId, startEventService, waitFor } from '../helpers/events';
import { client } from '../helpers/http';
import { privateKafka } from '../helpers/private-stack';
import { seeder } from '../helpers/seed';
import { uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

// The private broker's ports (override when another run holds them).
const BROKER_PORT = Number(process.env.FAULTS_BROKER_TEST_PORT ?? 9596);
const CONTROLLER_PORT = BROKER_PORT + 1;
const DOWN_MS = Number(process.env.FAULTS_BROKER_DOWN_SECONDS || 15) * 1000;
const WRITERS = 3;
/** Learners imported while the broker is down, in imports of IMPORT_SIZE: one membership change each. */
const BACKLOG = Number(process.env.FAULTS_BACKLOG || 1000);
/** What the changes topic takes in one request (`max.message.bytes`): above the relay's 256 KiB a send, under the backlog. */
const TOPIC_MAX_BYTES = 300 * 1024;
const IMPORT_SIZE = 250;
const broker = privateKafka(BROKER_PORT, CONTROLLER_PORT);
const topic = uniqueName('changes');
let service: EventTestService | null = null;
let reader: ChangeReader | null = null;
let settledReader: ChangeReader | null = null;

afterAll(async () => {
  await reader?.close().catch(() => undefined);
  await settledReader?.close().catch(() => undefined);
  await service?.close().catch(() => undefined);
  await broker.remove();
}, 60000);

test(
  `the broker down (stopped, ${DOWN_MS / 1000} s, started again) while administrators write: nothing is refused, everything is published once it is back, in order per record`,
  async () => {
    await broker.start();
    // One partition: the whole backlog is one batch for the broker, refused over TOPIC_MAX_BYTES.
    reader = await changeReader(topic, broker.brokers, 1, [{ name: 'max.message.bytes', value: String(TOPIC_MAX_BYTES) }]);
    // The API alone, logging warnings: on a timeout, what the relay and kafkajs last said is in the failure.
    service = await startEventService({ SERVICE_ROLE: 'api', LOG_LEVEL: 'warn', KAFKA_BROKERS: broker.brokers, CHANGES_TOPIC: topic });
    const org = uniqueName('org');
    const http = client(service.baseUrl, await siteAdminToken(org, 5));
    const seed = seeder(service.db, org);
    const acked = new Map<string, string[]>();
    const ack = (subject: string, rid: string) => acked.set(subject, [...(acked.get(subject) ?? []), rid]);

    const groups: number[] = [];
    const users: number[] = [];
    const membershipIds: number[] = [];
    for (let w = 0; w < WRITERS; w++) {
      const g = await http.post('course-access-groups/', { name: `g${w}`, description: '' }, { 'X-Request-Id': `setup-g${w}` });
      expect(g.status).toBe(201);
      groups.push(g.body.id);
      ack(`course-access-groups/${g.body.id}`, `setup-g${w}`);
    }
    for (let w = 0; w < WRITERS; w++) {
      const user = newUserId();
      await seed.user(user);
      const m = await http.post('memberships/', { user, group: groups[w] }, { 'X-Request-Id': `setup-m${w}` });
      expect(m.status).toBe(201);
      ack(`memberships/${user}`, `setup-m${w}`);
      users.push(user);
      membershipIds.push(m.body.id);
    }
    await reader.find((e) => e.data.request_id === `setup-m${WRITERS - 1}`); // flowing before the outage

    // Each writer renames its group and moves its user round the groups, one request at a time.
    let writing = true;
    const refused: string[] = [];
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const rid = `w${w}-${i}`;
        const rename = i % 2 === 0;
        const res = rename
          ? await http.patch(`course-access-groups/${groups[w]}/`, { name: `g${w}-${i}` }, { 'X-Request-Id': rid })
          : await http.patch(`memberships/${membershipIds[w]}/`, { group: groups[(w + (i + 1) / 2) % WRITERS] }, { 'X-Request-Id': rid });
        if (res.status !== 200) refused.push(`${rid}: ${res.status}`);
        else ack(rename ? `course-access-groups/${groups[w]}` : `memberships/${users[w]}`, rid);
        await new Promise((r) => setTimeout(r, 50));
      }
    });

    const ackedSoFar = () => [...acked.values()].flat().length;
    await broker.stop();
    const stoppedAt = Date.now();
    const ackedAtStop = ackedSoFar();
    const tenant = new Tenant(service.db, org);
    await groupWithRule(tenant, 'backlog.edu');
    const imported = Array.from({ length: BACKLOG }, () => newUserId());
    const importAll = async () => {
      for (let i = 0; i < imported.length; i += IMPORT_SIZE) {
        const batch = imported
          .slice(i, i + IMPORT_SIZE)
          .map((id) => ({ id, username: `b${id}`, name: `B ${id}`, email: `b${id}@backlog.edu`, is_active: true }));
        await importUserBatch(tenant, linesAt(batch, normalizeEventTime('2026-06-01T00:00:00Z')));
      }
    };
    await Promise.all([new Promise((r) => setTimeout(r, DOWN_MS)), importAll()]);
    // The premise: thousands of changes piled up in the outbox while the broker was away.
    const intents = await service.db.collection<OutboxDoc>(COLLECTIONS.outbox).find({}).toArray();
    const piled = intents.length;
    const piledChanges = intents.reduce((n, i) => n + i.k.length, 0);
    expect(piledChanges).toBeGreaterThanOrEqual(BACKLOG);
    // And /metrics shows the backlog and its age while the relay waits for the broker.
    await waitFor(
      async () => {
        const text = (await client(service!.baseUrl).get('/metrics')).body as string;
        return [Number(/^changes_pending (\S+)$/m.exec(text)?.[1]), Number(/^changes_lag_seconds (\S+)$/m.exec(text)?.[1])];
      },
      ([pending, lag]) => pending! > 0 && lag! > 1,
      15000,
    );
    await broker.start();
    const downFor = Date.now() - stoppedAt;
    const ackedDuringOutage = ackedSoFar() - ackedAtStop;
    await new Promise((r) => setTimeout(r, 2000));
    writing = false;
    await Promise.all(writers);
    expect(refused).toEqual([]);

    const all = [...acked.values()].flat();
    const started = Date.now();
    // What the topic holds is read by a consumer made now, from the beginning. The reader that
    // lived through the outage is not relied on: a kafkajs consumer can stay idle after its broker
    // restarts (kafkajs issues #267, #659), and once in CI it did (all published, 6 received).
    settledReader = await changeReader(topic, broker.brokers, 1);
    const settled = settledReader;
    // On a timeout, what the relay was doing says why (its failures, what still waits).
    const relayState = async () => ({
      pending: await metricValue(service!.baseUrl, 'changes_pending'),
      relay_failures: await metricValue(service!.baseUrl, 'change_relay_failures_total'),
      leader: await metricValue(service!.baseUrl, 'change_relay_leader'),
      // Published by the relay (all types): above `received`, the reader is the one behind.
      published: [...((await client(service!.baseUrl).get('/metrics')).body as string).matchAll(/^changes_published_total\{.*\} (\S+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      ),
      last_warnings: service!.logs.slice(-3).map((l) => {
        const { time, msg, err, kafka } = JSON.parse(l);
        return { time, msg, err: err?.message ?? kafka?.error };
      }),
      // Under `published`, the reader's crashes and kafkajs's warnings say why it is behind.
      reader_problems: settled.problems,
    });
    await waitFor(
      async () => {
        const seen = new Set(settled.received.map((r) => r.event.data.request_id));
        const missing = all.filter((rid) => !seen.has(rid));
        return { missing: missing.length, first: missing.slice(0, 5), received: settled.received.length, ...(missing.length > 0 ? await relayState() : {}) };
      },
      ({ missing }) => missing === 0,
      120000,
    );
    const importedIds = new Set(imported.map((id) => `memberships/${id}`));
    const importedMembers = () =>
      new Set(settled.received.filter((r) => r.event.data.organization === org && r.event.type.endsWith('.membership.changed.v1')).map((r) => r.event.subject));
    await waitFor(
      async () => {
        const members = importedMembers();
        return imported.filter((id) => !members.has(`memberships/${id}`));
      },
      (missing) => missing.length === 0,
      120000,
    );
    const caughtUpIn = Date.now() - started;
    // The premise: the backlog's events, sent as one request, are more than the topic takes.
    const backlogBytes = payloadBytes(settled.received.filter((r) => importedIds.has(r.event.subject)));
    expect(backlogBytes).toBeGreaterThan(TOPIC_MAX_BYTES);
    // Nothing stuck: the outbox empties, and no change was too large to send.
    await waitFor(
      () => service!.db.collection(COLLECTIONS.outbox).countDocuments({}),
      (n) => n === 0,
      30000,
    );
    const metrics = (await client(service.baseUrl).get('/metrics')).body as string;
    expect([...metrics.matchAll(/^changes_unpublishable_total\{.*\} (\S+)$/gm)].filter((m) => Number(m[1]) !== 0)).toEqual([]);

    expectInOrderPerRecord(settled.received, acked);
    const latest = settled.latest();
    for (let w = 0; w < WRITERS; w++) {
      expect(latest.get(`course-access-groups/${groups[w]}`)!.data.group).toEqual((await http.get(`course-access-groups/${groups[w]}/`)).body);
      const m = (await http.get(`memberships/${membershipIds[w]}/`)).body;
      expect(latest.get(`memberships/${users[w]}`)!.data.membership).toEqual({ id: m.id, user_id: users[w], group_id: m.group.id, automatic: false });
    }
    process.stderr.write(
      `[faults-changes-broker] broker unreachable ${(downFor / 1000).toFixed(0)} s; ${ackedDuringOutage} writes acknowledged meanwhile (${piled} intents of ${piledChanges} changes in the outbox ${DOWN_MS / 1000} s in); ` +
        `${all.length} writes in all, all published ${(caughtUpIn / 1000).toFixed(1)} s after writing stopped; ${settled.received.length} events; the backlog's ${BACKLOG} events ${backlogBytes} bytes; ` +
        `the reader that lived through the outage had ${reader.received.length} of them (crashes: ${JSON.stringify(reader.problems.crashes)})\n`,
    );
  },
  // A bound for a hang: the imports of 4,000 (the long run's FAULTS_BACKLOG) took about 100 s on
  // these 2 cores (the outage lasts as long as they do), and the wait for the events up to 120 s:
  // 195 s in all was too close (214 s under a loaded CI run).
  300000 + DOWN_MS,
);
