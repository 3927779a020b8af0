// docs/install-tutor.md, "Tutor for Open edX, Helm for the service", on the real node of
// scripts/k8s/node.sh: the block run as written (the real tutor 21 renders the chart's values for
// the platform, helm installs the packaged chart with them), with this machine's addresses for
// Kafka, the registry and MongoDB (the pods use the host network, as in node.test.ts), then an
// event of the real Open edX producer (edx-event-bus-kafka, openedx-events, Avro through the
// registry), sent under the topic prefix the Tutor-rendered LMS publishes with, reaches the
// service the chart runs.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { parse } from 'yaml';
import { produceWithOpenedx } from '../helpers/openedx-producer';
import { ok, runTutorSplitBlock, tool } from './tools';

const [API_PORT, CONSUMER_PORT] = (process.env.K8S_NODE_TUTOR_PORTS || '18304,18305').split(',').map(Number) as [number, number];
const MONGO_URL = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
const KAFKA_BROKERS = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const SCHEMA_REGISTRY_URL = process.env.SCHEMA_REGISTRY_URL || 'http://127.0.0.1:8081/apis/ccompat/v7';
const suffix = randomBytes(3).toString('hex');
const NS = `cag-tutor-${suffix}`;
const DB = `cag_tutor_${suffix}`;
const tmp = mkdtempSync(path.join(tmpdir(), 'cag-node-tutor-'));
let rendered: Record<string, unknown>;
let mongo: MongoClient;

beforeAll(async () => {
  const version = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')).version;
  // What only this machine decides (node.test.ts's): the image node.sh imported, the host network and its ports, the database's name.
  const node = path.join(tmp, 'node-values.yaml');
  writeFileSync(
    node,
    JSON.stringify({
      image: { tag: version, pullPolicy: 'Never' },
      config: { mongoDb: DB },
      hostNetwork: true,
      api: { replicas: 1, containerPort: API_PORT },
      consumer: { containerPort: CONSUMER_PORT },
      probes: { startup: { periodSeconds: 1, timeoutSeconds: 3, failureThreshold: 180 } },
    }),
  );
  await ok('kubectl', ['create', 'namespace', NS]);
  await ok('kubectl', ['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=privileged']);
  // Each of this machine's values in place of the doc's, every one of which must be there: a doc
  // that changed fails here rather than installing into a real `openedx` namespace.
  const swaps: [string, string][] = [
    ['kafka-0.kafka:9092', KAFKA_BROKERS],
    ['http://registry.openedx:8080/apis/ccompat/v7', SCHEMA_REGISTRY_URL],
    ['.openedx:8000', `.${NS}:8000`],
    ['--namespace openedx', `--namespace ${NS}`],
    ['registry.example.org/course-access-groups', 'docker.io/library/course-access-groups'],
    ['mongodb://cag:PASSWORD@mongo-0.mongo:27017/?replicaSet=rs0', MONGO_URL],
  ];
  const { root } = await runTutorSplitBlock(tmp, (block) => {
    const local = swaps.reduce((text, [from, to]) => {
      if (!text.includes(from)) throw new Error(`docs/install-tutor.md's block no longer holds ${from}`);
      return text.replaceAll(from, to);
    }, block);
    return `${local.trimEnd()} \\\n  -f ${node} --wait --wait-for-jobs --timeout 300s\n`;
  });
  rendered = parse(readFileSync(path.join(root, 'env/plugins/course-access-groups/apps/helm/values.yaml'), 'utf8'));
  mongo = new MongoClient(MONGO_URL);
}, 600000);

afterAll(async () => {
  await tool('helm', ['uninstall', 'cag', '-n', NS, '--wait', '--timeout', '120s']);
  await tool('kubectl', ['delete', 'namespace', NS, '--wait=false']);
  await mongo
    ?.db(DB)
    .dropDatabase()
    .catch(() => undefined);
  await mongo?.close();
  rmSync(tmp, { recursive: true, force: true });
}, 180000);

test("the block's release runs on the node with Tutor's values: its ConfigMap holds the platform's topics, organization and LMS trust path", async () => {
  const [configMap] = JSON.parse(await ok('kubectl', ['-n', NS, 'get', 'configmaps', '-l', 'app.kubernetes.io/instance=cag', '-o', 'json'])).items;
  const data = configMap.data as Record<string, string>;
  expect(data.KAFKA_TOPICS).toBe('openedx-user-account-activated,openedx-user-lifecycle,openedx-course-catalog');
  expect(data.DEFAULT_ORGANIZATION).toBe((rendered.config as { defaultOrganization: string }).defaultOrganization);
  expect(JSON.parse(data.LMS_JWT_ISSUERS!)).toEqual([{ ISSUER: 'http://local.openedx.io/oauth2', AUDIENCE: 'openedx' }]);
  expect(data.SCHEMA_REGISTRY_URL).toBe(SCHEMA_REGISTRY_URL);
  const pods = JSON.parse(await ok('kubectl', ['-n', NS, 'get', 'pods', '-l', 'app.kubernetes.io/instance=cag', '-o', 'json'])).items as {
    metadata: { labels: Record<string, string> };
    status: { conditions?: { type: string; status: string }[] };
  }[];
  const ready = pods.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  expect(ready.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort()).toEqual(['api', 'consumer']);
});

test('an event of the real Open edX producer, on the topic the Tutor-configured LMS publishes to, reaches the service the chart runs', async () => {
  const org = (rendered.config as { defaultOrganization: string }).defaultOrganization;
  const course = `course-v1:${org}+NODE${suffix}+2026`;
  const user = {
    id: 700000 + (Number.parseInt(suffix, 16) % 100000),
    is_active: true,
    username: `node${suffix}`,
    email: `node${suffix}@example.org`,
    name: 'Node Learner',
  };
  await produceWithOpenedx(
    'openedx',
    [
      { signal: 'registration', time: new Date().toISOString().replace('Z', '+00:00'), user },
      {
        signal: 'catalog',
        time: new Date().toISOString().replace('Z', '+00:00'),
        catalog_info: { course_key: course, name: 'Taught on a node', start: '2026-04-01T00:00:00+00:00', pacing: 'instructor' },
      },
    ],
    { bootstrap_servers: KAFKA_BROKERS },
  );
  const db = mongo.db(DB);
  const deadline = Date.now() + 120000;
  let found: { course: unknown; user: unknown } = { course: null, user: null };
  while (Date.now() < deadline) {
    found = {
      course: await db.collection('courses').findOne({ _id: course } as never, { projection: { _id: 1 } }),
      user: await db.collection('users').findOne({ _id: String(user.id) } as never, { projection: { _id: 1 } }),
    };
    if (found.course && found.user) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  expect(found).toEqual({ course: { _id: course }, user: { _id: String(user.id) } });
}, 180000);
