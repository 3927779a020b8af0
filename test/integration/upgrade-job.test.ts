// The chart's upgrade Job (deploy/helm/course-access-groups/templates/upgrade-job.yaml), and its
// topics Job (templates/topics-job.yaml, against the stack's Kafka), run as a node would run them, where no node runs it here (the chart's README): the chart rendered by the
// real helm (the release's packaged chart when CAG_CHART_TGZ or RELEASE_DIR names one, as
// `npm run test:k8s` installs it), the Job's container command and environment taken exactly as
// rendered (its ConfigMap and Secret resolved as the kubelet does), and that command run with the
// built program (dist/, as in the image) against a database of the local stack.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { type Db, MongoClient } from 'mongodb';
import { parseAllDocuments } from 'yaml';
import { COLLECTIONS } from '../../src/db/collections';
import { UPGRADES } from '../../src/db/upgrades';
import { builtProgram } from '../helpers/built';
import { KAFKA_BROKERS, MONGO_URL, uniqueName } from '../helpers/stack';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const CHART_DIR = path.join(ROOT, 'deploy/helm/course-access-groups');
const version = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
/** What is installed: a release's archive (scripts/k8s/test.sh's rule), else the chart's folder. */
const CHART = process.env.CAG_CHART_TGZ || (process.env.RELEASE_DIR ? path.join(process.env.RELEASE_DIR, `course-access-groups-${version}.tgz`) : CHART_DIR);
const USERS = 300;

type K8sObject = { kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: any };
let helm: string;
let client: MongoClient;

beforeAll(() => {
  // helm as `npm run test:k8s` builds it (cached in ~/.cache/course-access-groups/k8s).
  helm = path.join(execFileSync('bash', [path.join(ROOT, 'scripts/k8s/tools.sh')], { encoding: 'utf8' }).trim(), 'helm');
  // The Job runs the built program.
  builtProgram('src/cli/main.js');
  client = new MongoClient(MONGO_URL);
}, 600000);
afterAll(async () => {
  await client.close();
});

/** The release's objects as `helm template` renders them with a values file, the test's database and `set`. */
async function renderRelease(valuesFile: string, dbName: string, set: Record<string, string> = {}): Promise<K8sObject[]> {
  const { stdout } = await run(helm, [
    'template',
    'cag',
    CHART,
    '--namespace',
    'lms',
    '-f',
    path.join(CHART_DIR, 'ci', valuesFile),
    '--set',
    `secrets.mongoUrl=${MONGO_URL}`,
    '--set',
    `config.mongoDb=${dbName}`,
    ...Object.entries(set).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
  ]);
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** The Job's (of that component) one container: its command, and its environment resolved from the release's own ConfigMap and Secret as the kubelet would. */
function jobContainer(objects: K8sObject[], component = 'upgrade') {
  const jobs = objects.filter((o) => o.kind === 'Job' && o.metadata.labels?.['app.kubernetes.io/component'] === component);
  expect(jobs).toHaveLength(1);
  const pod = jobs[0]!.spec.template.spec;
  expect(pod.containers).toHaveLength(1);
  const c = pod.containers[0];
  const find = (kind: string, name: string) => {
    const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
    if (!o) throw new Error(`the Job refers to ${kind} ${name}, which the release does not render`);
    return (kind === 'Secret' ? o.stringData : o.data) as Record<string, string>;
  };
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, find('ConfigMap', from.configMapRef.name));
    else if (from.secretRef) Object.assign(env, find('Secret', from.secretRef.name));
    else throw new Error(`unexpected envFrom ${JSON.stringify(from)}`);
  }
  for (const e of c.env ?? []) {
    if ('value' in e) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = find('Secret', e.valueFrom.secretKeyRef.name)[e.valueFrom.secretKeyRef.key]!;
    else if (e.valueFrom?.configMapKeyRef) env[e.name] = find('ConfigMap', e.valueFrom.configMapKeyRef.name)[e.valueFrom.configMapKeyRef.key]!;
    else throw new Error(`unexpected env ${JSON.stringify(e)}`);
  }
  return { argv: [...c.command, ...(c.args ?? [])] as string[], env, pod };
}

/** The container's command in the image's working directory (/app holds dist/ as this clone does), with the image's PATH and NODE_ENV. */
async function runJob(argv: string[], env: Record<string, string>) {
  const [cmd, ...args] = argv;
  try {
    const { stdout, stderr } = await run(cmd!, args, { cwd: ROOT, env: { PATH: process.env.PATH, NODE_ENV: 'production', ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** `n` users as a version before the history stored them: no `h`, and no upgrade mark in the database. */
async function oldShapeUsers(db: Db, n: number) {
  const docs = Array.from({ length: n }, (_, i) => ({
    _id: String(i + 1),
    id: i + 1,
    org: 'org-a',
    event_time: '2020-01-01T00:00:00Z',
    is_active: i % 2 === 0,
    act_v: '2020-01-01T00:00:00Z#0000',
    act_done: true,
  }));
  await db.collection(COLLECTIONS.users).insertMany(docs as never);
}
const oldShapeLeft = (db: Db) => db.collection(COLLECTIONS.users).countDocuments({ h: { $exists: false } });
const logLines = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string });

test('the rendered Job on a database without the upgrade mark: exit 0, the mark and shape stored, every user upgraded, its progress and log lines', async () => {
  const name = uniqueName('upgrade_job');
  const db = client.db(name);
  try {
    await oldShapeUsers(db, USERS);
    const { argv, env, pod } = jobContainer(await renderRelease('default-values.yaml', name));
    // What the chart promises of the Job: `cag upgrade` of the built program, never restarted in place.
    expect(argv).toEqual(['node', 'dist/src/cli/main.js', 'upgrade']);
    expect(pod.restartPolicy).toBe('Never');
    expect(env).toMatchObject({ MONGO_URL, MONGO_DB: name, CAG_OPERATOR: 'helm-upgrade-job', LOG_LEVEL: 'info' });

    const res = await runJob(argv, env);
    expect({ code: res.code, stdout: res.stdout }).toEqual({ code: 0, stdout: '' });
    expect(res.stderr).toMatch(new RegExp(`upgrade learner-histories: [\\d,]+ of ${USERS} users`));
    expect(res.stderr.trimEnd().split('\n').at(-1)).toBe('stored data upgraded; it is current');
    const messages = logLines(res.stderr).map((l) => l.msg);
    expect(messages).toEqual(
      expect.arrayContaining([
        'upgrading stored data',
        'upgrade learner-histories: pass 1 begins',
        `upgrade learner-histories: pass 1 upgraded ${USERS} users`,
        'upgrade learner-histories done',
      ]),
    );
    // Nothing at warning level or above, and no secret of the environment in the output.
    expect(logLines(res.stderr).filter((l) => l.level >= 40)).toEqual([]);
    expect(res.stderr).not.toContain(MONGO_URL);

    expect(await db.collection(COLLECTIONS.upgrades).findOne({ _id: 'learner-histories' } as never)).not.toBeNull();
    expect(await db.collection(COLLECTIONS.upgrades).findOne({ _id: 'shape' } as never)).toMatchObject({ v: UPGRADES.length });
    expect(await oldShapeLeft(db)).toBe(0);

    // The Job again (a retry, or the next release's with no new upgrade): nothing to do, exit 0.
    const again = await runJob(argv, env);
    expect({ code: again.code, last: again.stderr.trimEnd().split('\n').at(-1) }).toEqual({ code: 0, last: 'stored data is current; nothing to upgrade' });
  } finally {
    await db.dropDatabase();
  }
}, 60000);

test("the rendered Job (an LMS-only release) on a database a newer version has marked: exit 4, saying why, nothing written, and the Job's podFailurePolicy fails the Job on that exit code instead of retrying", async () => {
  const name = uniqueName('upgrade_job_newer');
  const db = client.db(name);
  try {
    await oldShapeUsers(db, 10);
    await db.collection(COLLECTIONS.upgrades).insertOne({ _id: 'shape', v: UPGRADES.length + 1, at: new Date() } as never);
    const objects = await renderRelease('lms-only-values.yaml', name);
    const { argv, env, pod } = jobContainer(objects);
    expect(env.JWT_SECRET).toBeUndefined();
    expect(env.LMS_JWT_ISSUERS).toBeDefined();

    const res = await runJob(argv, env);
    expect(res.code).toBe(4);
    expect(res.stderr).toContain(
      `stored data is of shape ${UPGRADES.length + 1}, newer than this version knows (${UPGRADES.length}): a newer version has upgraded it; run the newer version's cag`,
    );
    expect(await oldShapeLeft(db)).toBe(10);
    expect(await db.collection(COLLECTIONS.upgrades).find({}).toArray()).toEqual([{ _id: 'shape', v: UPGRADES.length + 1, at: expect.any(Date) }]);
    // Running the same image again cannot change that: the Job controller fails the Job on this
    // exit code of this container (a podFailurePolicy needs the pod's restartPolicy Never).
    const job = objects.find((o) => o.kind === 'Job')!;
    expect(pod.restartPolicy).toBe('Never');
    expect(job.spec.podFailurePolicy.rules).toContainEqual({
      action: 'FailJob',
      onExitCodes: { containerName: pod.containers[0].name, operator: 'In', values: [res.code] },
      onPodConditions: [],
    });
  } finally {
    await db.dropDatabase();
  }
}, 60000);

test("the rendered topics Job against the stack's Kafka: `cag topics --create` creates every topic the release's settings need, a second run (the next Job) creates nothing, and the exit codes are the ones its podFailurePolicy and backoffLimit expect", async () => {
  const prefix = uniqueName('topics_job');
  // The release's own names: the consumed topics under the LMS's prefix, the dead-letter topics
  // under the release's prefix (course-access-groups.<namespace>.<release>.), the changes topic.
  const consumed = ['user-account-activated', 'user-lifecycle', 'course-catalog'].map((t) => `${prefix}-${t}`);
  const topics = [...consumed, ...consumed.map((t) => `course-access-groups.lms.cag.${t}.dlq`), `${prefix}.changes`];
  const kafka = new Kafka({ clientId: 'topics-job-test', brokers: KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const set = {
      'topicsJob.enabled': 'true',
      'config.kafkaBrokers': KAFKA_BROKERS.replace(/,/g, '\\,'),
      'config.topicPrefix': prefix,
      'config.changesTopic': `${prefix}.changes`,
    };
    const objects = await renderRelease('default-values.yaml', uniqueName('topics_job'), set);
    const { argv, env, pod } = jobContainer(objects, 'topics');
    expect(argv).toEqual(['node', 'dist/src/cli/main.js', 'topics', '--create']);
    expect(pod.restartPolicy).toBe('Never');
    expect(env).toMatchObject({ KAFKA_BROKERS, KAFKA_DLQ_PREFIX: 'course-access-groups.lms.cag.', CHANGES_TOPIC: `${prefix}.changes` });
    const outcomes = (stderr: string) =>
      stderr
        .split('\n')
        .filter((l) => topics.some((t) => l.startsWith(`${t}: `)))
        .sort();
    expect(await admin.listTopics()).not.toContain(consumed[0]);

    const first = await runJob(argv, env);
    expect({ code: first.code, outcomes: outcomes(first.stderr) }).toEqual({ code: 0, outcomes: topics.map((t) => `${t}: created`).sort() });
    for (const t of topics) expect(first.stdout).toMatch(new RegExp(`^  ${t.replace(/\./g, '\\.')} +(read|write) `, 'm'));
    expect(await admin.listTopics()).toEqual(expect.arrayContaining(topics));
    expect(logLines(first.stderr).filter((l) => l.level >= 40)).toEqual([]);

    // The next Job (a changed setting renames it) finds them all: nothing created, exit 0.
    const again = await runJob(argv, env);
    expect({ code: again.code, outcomes: outcomes(again.stderr) }).toEqual({ code: 0, outcomes: topics.map((t) => `${t}: exists`).sort() });

    // Exit 2, a command line the command refuses, fails the Job at once: the same command cannot succeed.
    const job = objects.find((o) => o.kind === 'Job' && o.metadata.labels?.['app.kubernetes.io/component'] === 'topics')!;
    const wrong = await runJob([...argv, '--partitions', '0'], env);
    expect(wrong.code).toBe(2);
    expect(job.spec.podFailurePolicy.rules).toEqual([
      { action: 'FailJob', onExitCodes: { containerName: pod.containers[0].name, operator: 'In', values: [wrong.code] }, onPodConditions: [] },
    ]);
    // Exit 1, a broker that does not answer (yet), is retried up to backoffLimit times, not failed at once.
    const away = await runJob(argv, { ...env, KAFKA_BROKERS: '127.0.0.1:1' });
    expect(away.code).toBe(1);
    expect(job.spec.backoffLimit).toBeGreaterThan(0);
  } finally {
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
  }
}, 120000);
