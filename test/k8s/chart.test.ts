// Issue 28, step 1 (static, no cluster): the chart deploy/helm/course-access-groups rendered by
// the real helm for a matrix of values, checked for what docs/operations.md and the chart's
// README promise, and every rendered object validated offline against the Kubernetes 1.34
// OpenAPI schemas (PyPI kubernetes-validate, strict: unknown fields refused).
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { byKind, CHART, CI_FILES, ciValues, deployment, type K8sObject, parseObjects, render, tool } from './tools';

const run = promisify(execFile);
const VALIDATE_PYTHON = process.env.K8S_VALIDATE_PYTHON ?? '';
const minimal = [ciValues('default-values.yaml')];
/** Kinds the chart may render: every one namespaced (a release never touches the cluster's scope). */
const NAMESPACED = [
  'ConfigMap',
  'Secret',
  'ServiceAccount',
  'Service',
  'Deployment',
  'PodDisruptionBudget',
  'HorizontalPodAutoscaler',
  'ServiceMonitor',
  'Pod',
];

const tmp = mkdtempSync(path.join(tmpdir(), 'cag-chart-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test.each(CI_FILES)('helm lint --strict passes with ci/%s', async (file) => {
  const res = await tool('helm', ['lint', '--strict', CHART, '-f', ciValues(file)]);
  expect(res).toMatchObject({ code: 0 });
  expect(res.stdout).toContain('0 chart(s) failed');
});

describe.each(CI_FILES)('rendered with ci/%s', (file) => {
  let objects: K8sObject[];
  let text: string;
  beforeAll(async () => {
    const r = await render({ files: [ciValues(file)] });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    objects = r.objects;
    text = r.text;
  });

  test('every object is of a namespaced kind, in the release namespace, named after the release', () => {
    expect(objects.length).toBeGreaterThan(3);
    for (const o of objects) {
      expect({ kind: o.kind, namespaced: NAMESPACED.includes(o.kind) }).toEqual({ kind: o.kind, namespaced: true });
      expect({ name: o.metadata.name, namespace: o.metadata.namespace }).toEqual({ name: o.metadata.name, namespace: 'lms' });
      expect(o.metadata.name.startsWith('cag-')).toBe(true);
      expect(o.metadata.labels?.['app.kubernetes.io/instance']).toBe('cag');
    }
  });

  test('each Deployment: its role, the probes of docs/operations.md, restricted security, /tmp, no pod down in a rollout', () => {
    const deployments = byKind(objects, 'Deployment');
    expect(deployments.length).toBeGreaterThan(0);
    for (const d of deployments) {
      const role = d.metadata.labels!['app.kubernetes.io/component'];
      const pod = d.spec.template.spec;
      const [c] = pod.containers;
      expect(pod.containers).toHaveLength(1);
      expect(c.env).toContainEqual({ name: 'SERVICE_ROLE', value: role });
      expect(c.startupProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1, failureThreshold: 20 });
      expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 });
      expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 1 });
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(c.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
      expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(c.resources.limits.memory).toBe('384Mi');
      expect(d.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
      expect(d.spec.template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
      expect(d.spec.selector.matchLabels['app.kubernetes.io/component']).toBe(role);
    }
  });

  test('no secret in a ConfigMap: MONGO_URL, JWT keys and registry credentials only in a Secret', () => {
    const [cm] = byKind(objects, 'ConfigMap');
    const keys = Object.keys(cm!.data);
    for (const secret of ['MONGO_URL', 'JWT_SECRET', 'JWT_PUBLIC_KEY', 'SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD'])
      expect(keys).not.toContain(secret);
    const values = Object.values(cm!.data).join('\n');
    expect(values).not.toMatch(/mongodb(\+srv)?:\/\/|ci-secret|registry-password/);
    for (const s of byKind(objects, 'Secret')) expect(Object.keys(s.stringData)).toContain('MONGO_URL');
  });

  test('valid against the Kubernetes 1.34 OpenAPI schemas, strictly (kubernetes-validate)', async () => {
    const rendered = path.join(tmp, `rendered-${file}`);
    writeFileSync(rendered, text);
    const res = await run(VALIDATE_PYTHON, ['-m', 'kubernetes_validate', '--strict', '-k', '1.34.0', rendered]).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e) => ({ code: e.code as number, out: `${e.stdout}${e.stderr}` }),
    );
    expect(res).toEqual({ code: 0, out: expect.any(String) });
    // One "passed" line per built-in object; the ServiceMonitor (a CRD) is the only kind without a schema.
    const builtIn = objects.filter((o) => o.kind !== 'ServiceMonitor').length;
    expect(res.out.match(/ passed for resource /g)).toHaveLength(builtIn);
    const unknown = res.out.split('\n').filter((l) => l.includes("Couldn't find schema"));
    expect(unknown.every((l) => l.includes('kind ServiceMonitor'))).toBe(true);
  });
});

test('the offline validation refuses a field the schema does not know, and a wrong type', async () => {
  const { text } = await render({ files: minimal });
  const file = path.join(tmp, 'broken.yaml');
  writeFileSync(file, text.replace('revisionHistoryLimit: 5', 'revisionHistoryLimit: five'));
  await expect(run(VALIDATE_PYTHON, ['-m', 'kubernetes_validate', '--strict', '-k', '1.34.0', file])).rejects.toMatchObject({
    stdout: expect.stringContaining("revisionHistoryLimit: 'five' is not of type 'integer'"),
  });
});

describe('values', () => {
  test('PDBs for both roles by default, each maxUnavailable 1; none when turned off or the role is off', async () => {
    const on = await render({ files: minimal });
    expect(byKind(on.objects, 'PodDisruptionBudget').map((p) => [p.metadata.labels!['app.kubernetes.io/component'], p.spec.maxUnavailable])).toEqual([
      ['api', 1],
      ['consumer', 1],
    ]);
    const apiOnly = await render({ files: [ciValues('api-only-values.yaml')] });
    expect(byKind(apiOnly.objects, 'PodDisruptionBudget')).toEqual([]);
    expect(deployment(apiOnly.objects, 'consumer')).toBeUndefined();
  });

  test('HPA off by default; on, it targets the API Deployment, which then leaves replicas to it', async () => {
    const off = await render({ files: minimal });
    expect(byKind(off.objects, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(deployment(off.objects, 'api')!.spec.replicas).toBe(2);
    const on = await render({ files: minimal, set: { 'api.autoscaling.enabled': 'true' } });
    const [hpa] = byKind(on.objects, 'HorizontalPodAutoscaler');
    expect(hpa!.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'cag-course-access-groups-api' });
    expect(deployment(on.objects, 'api')!.spec.replicas).toBeUndefined();
  });

  test('the ServiceMonitor only when asked for', async () => {
    expect(byKind((await render({ files: minimal })).objects, 'ServiceMonitor')).toEqual([]);
    const [sm] = byKind((await render({ files: minimal, set: { 'serviceMonitor.enabled': 'true' } })).objects, 'ServiceMonitor');
    expect(sm!.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s' }]);
  });

  test('a changed setting or secret changes the pods checksum (they roll); a replica count does not', async () => {
    const checksum = async (set: Record<string, string>) =>
      deployment((await render({ files: minimal, set })).objects, 'api')!.spec.template.metadata.annotations['checksum/config'];
    const base = await checksum({});
    expect(await checksum({ 'config.logLevel': 'debug' })).not.toBe(base);
    expect(await checksum({ 'secrets.mongoUrl': 'mongodb://other:27017/' })).not.toBe(base);
    expect(await checksum({ 'api.replicas': '5' })).toBe(base);
  });

  test('an existing Secret replaces the chart Secret, and the helm test reads its JWT_SECRET from it', async () => {
    const r = await render({
      files: minimal,
      set: { 'auth.jwtSecret': 'null', 'secrets.mongoUrl': 'null', 'existingSecret.name': 'mine', 'existingSecret.jwtKey': 'JWT_SECRET' },
    });
    expect(r.stderr).toBe('');
    expect(byKind(r.objects, 'Secret')).toEqual([]);
    expect(deployment(r.objects, 'api')!.spec.template.spec.containers[0].envFrom).toContainEqual({ secretRef: { name: 'mine' } });
    const [testPod] = byKind(r.objects, 'Pod');
    expect(testPod!.spec.containers[0].env).toContainEqual({ name: 'JWT_SECRET', valueFrom: { secretKeyRef: { name: 'mine', key: 'JWT_SECRET' } } });
  });

  test('the helm test pod: the service image, restricted security, a hook', async () => {
    const [testPod] = byKind((await render({ files: minimal })).objects, 'Pod');
    expect(testPod!.metadata.annotations!['helm.sh/hook']).toBe('test');
    expect(testPod!.spec.containers[0]).toMatchObject({
      image: 'course-access-groups:0.1.0',
      command: ['node', '-e', expect.stringContaining('/course_access_groups/api/v1/access/batch')],
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
    });
    expect(testPod!.spec.containers[0].env).toContainEqual({ name: 'API_URL', value: 'http://cag-course-access-groups-api.lms.svc:8000' });
  });

  test('two releases in one namespace share no object name', async () => {
    const names = async (release: string) => (await render({ release, files: minimal })).objects.map((o) => `${o.kind}/${o.metadata.name}`);
    const [a, b] = await Promise.all([names('one'), names('two')]);
    expect(a.filter((n) => b.includes(n))).toEqual([]);
  });
});

test("the README's one-command install, with existing MongoDB, Kafka and registry, renders and lints", async () => {
  const pem = path.join(tmp, 'lms-jwt-public.pem');
  writeFileSync(pem, generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
  const args = [
    ...['--set', 'image.repository=registry.example.org/course-access-groups', '--set', 'image.tag=0.1.0'],
    ...['--set', 'config.kafkaBrokers=kafka-0.kafka:9092\\,kafka-1.kafka:9092'],
    ...['--set', 'config.schemaRegistryUrl=http://registry.openedx:8080/apis/ccompat/v7'],
    ...['--set', 'secrets.mongoUrl=mongodb://cag:PASSWORD@mongo-0.mongo:27017/?replicaSet=rs0'],
    ...['--set-file', `auth.jwtPublicKey=${pem}`],
  ];
  expect(await tool('helm', ['lint', '--strict', CHART, ...args])).toMatchObject({ code: 0 });
  const res = await tool('helm', ['template', 'cag', CHART, '--namespace', 'openedx', ...args]);
  expect(res.stderr).toBe('');
  const objects = parseObjects(res.stdout);
  const [cm] = byKind(objects, 'ConfigMap');
  expect(cm!.data).toMatchObject({
    KAFKA_BROKERS: 'kafka-0.kafka:9092,kafka-1.kafka:9092',
    SCHEMA_REGISTRY_URL: 'http://registry.openedx:8080/apis/ccompat/v7',
  });
  const [secret] = byKind(objects, 'Secret');
  expect(secret!.stringData.JWT_PUBLIC_KEY).toContain('-----BEGIN PUBLIC KEY-----');
  expect(deployment(objects, 'api')!.spec.template.spec.containers[0].image).toBe('registry.example.org/course-access-groups:0.1.0');
});

describe('values refused at render time, with a message', () => {
  test.each([
    [
      'no JWT key source',
      { 'auth.jwtSecret': 'null' },
      'set exactly one JWT key source: auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey (none is set)',
    ],
    ['two JWT key sources', { 'auth.jwksUrl': 'https://lms.example.org/jwks' }, '(auth.jwtSecret, auth.jwksUrl are set)'],
    ['no database', { 'secrets.mongoUrl': 'null' }, 'secrets.mongoUrl is required'],
    ['no brokers', { 'config.kafkaBrokers': 'null' }, 'config.kafkaBrokers is required'],
    ['an existing Secret beside inline secrets', { 'existingSecret.name': 'mine' }, 'existingSecret.name is set'],
    ['no role', { 'api.enabled': 'false', 'consumer.enabled': 'false' }, 'nothing to deploy'],
    ['an unknown key (schema)', { 'api.replica': '3' }, "additional properties 'replica' not allowed"],
    ['an unknown top-level key (schema)', { replicaCount: '3' }, "additional properties 'replicaCount' not allowed"],
    ['a short JWT secret (schema)', { 'auth.jwtSecret': 'short' }, '/auth/jwtSecret'],
    ['a log level the service refuses (schema)', { 'config.logLevel': 'verbose' }, '/config/logLevel'],
  ])('%s', async (_what, set, message) => {
    const r = await render({ files: minimal, set });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });
});
