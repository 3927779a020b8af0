// Issues 28 and 36, step 1 (static, no cluster): the chart deploy/helm/course-access-groups
// rendered by the real helm for a matrix of values, checked for what docs/operations.md and the
// chart's README promise, and every rendered object validated offline against the OpenAPI schemas
// of every Kubernetes minor from the chart's kubeVersion floor (1.27) to 1.34 (PyPI
// kubernetes-validate, strict: unknown fields refused).
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { byKind, CHART, CHART_DIR, CI_FILES, ciValues, deployment, type K8sObject, parseObjects, render, runTutorSplitBlock, tool } from './tools';

const run = promisify(execFile);
const VALIDATE_PYTHON = process.env.K8S_VALIDATE_PYTHON ?? '';
const minimal = [ciValues('default-values.yaml')];
/** The chart's version and appVersion (the image tag by default), as the release sets them (the folder's Chart.yaml: a release's archive holds the same, release-versions.test.ts checks). */
const { version: CHART_VERSION, appVersion: APP_VERSION } = parse(readFileSync(path.join(CHART_DIR, 'Chart.yaml'), 'utf8')) as {
  version: string;
  appVersion: string;
};
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
  'Job',
  'NetworkPolicy',
  'Ingress',
  'HTTPRoute',
];
/** Custom resources: kubernetes-validate has no schema for them (their shapes are checked below). */
const CUSTOM = ['ServiceMonitor', 'HTTPRoute'];
/** Every Kubernetes minor the chart claims (Chart.yaml kubeVersion >=1.27) up to the newest tested. */
const KUBE_MINORS = [27, 28, 29, 30, 31, 32, 33, 34].map((m) => `1.${m}.0`);
const job = (objects: K8sObject[], component: 'upgrade' | 'topics') =>
  byKind(objects, 'Job').find((j) => j.metadata.labels?.['app.kubernetes.io/component'] === component);
const upgradeJob = (objects: K8sObject[]) => job(objects, 'upgrade');
/** The containers of the service (both roles and the Jobs), by role. */
const serviceContainers = (objects: K8sObject[]) =>
  [...byKind(objects, 'Deployment'), ...byKind(objects, 'Job')].map((o) => ({
    role: o.metadata.labels!['app.kubernetes.io/component'] as string,
    pod: o.spec.template.spec,
    c: o.spec.template.spec.containers[0],
  }));
/**
 * Each service container's environment as the kubelet builds it: envFrom (the release's ConfigMaps
 * and Secrets), then env; `external` holds the Secrets and ConfigMaps it refers to but does not render.
 */
const environments = (objects: K8sObject[], external: Record<string, Record<string, string>> = {}) => {
  const data = (kind: 'ConfigMap' | 'Secret', name: string): Record<string, string> => {
    const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
    const found = o ? (kind === 'Secret' ? o.stringData : o.data) : external[name];
    if (!found) throw new Error(`a container refers to ${kind} ${name}, which is neither rendered nor given`);
    return found;
  };
  return serviceContainers(objects).map(({ role, c }) => {
    const env: Record<string, string> = {};
    for (const from of c.envFrom ?? []) Object.assign(env, from.configMapRef ? data('ConfigMap', from.configMapRef.name) : data('Secret', from.secretRef.name));
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
      if ('value' in e) env[e.name] = e.value;
      else if (ref && data(e.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name)[ref.key] !== undefined)
        env[e.name] = data(e.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name)[ref.key]!;
      else if (!ref?.optional) throw new Error(`${role}: ${e.name} names a key its ${ref ? ref.name : 'source'} does not hold`);
    }
    return { role, env };
  });
};
const mebibytes = (q: string) => {
  const m = /^(\d+)(Mi|Gi)$/.exec(q);
  if (!m) throw new Error(`unexpected quantity ${q}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
};

const tmp = mkdtempSync(path.join(tmpdir(), 'cag-chart-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let validation: Promise<{ code: number; out: string }> | undefined;
/**
 * Every ci/ rendering validated against every minor in one kubernetes-validate process (a process
 * per file and minor costs about 2 s each, over a minute in all).
 */
function validateAll() {
  validation ??= (async () => {
    const files: string[] = [];
    for (const file of CI_FILES) {
      const r = await render({ files: [ciValues(file)] });
      files.push(path.join(tmp, `rendered-${file}`));
      writeFileSync(files.at(-1)!, r.text);
    }
    const versions = KUBE_MINORS.flatMap((v) => ['-k', v]);
    return run(VALIDATE_PYTHON, ['-m', 'kubernetes_validate', '--strict', ...versions, ...files], { maxBuffer: 64e6 }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e) => ({ code: e.code as number, out: `${e.stdout}${e.stderr}` }),
    );
  })();
  return validation;
}
// About 5 s of CPU; on a machine shared with other builds its wall time can pass a test's limit.
beforeAll(() => validateAll(), 600000);

test.each(CI_FILES)('helm lint --strict passes with ci/%s', async (file) => {
  const res = await tool('helm', ['lint', '--strict', CHART, '-f', ciValues(file)]);
  expect(res).toMatchObject({ code: 0 });
  expect(res.stdout).toContain('0 chart(s) failed');
});

describe.each(CI_FILES)('rendered with ci/%s', (file) => {
  let objects: K8sObject[];
  beforeAll(async () => {
    const r = await render({ files: [ciValues(file)] });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    objects = r.objects;
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

  test('each Deployment: its role, the probes of docs/operations.md, restricted security, /tmp, a preStop pause, no pod down in a rollout', () => {
    const deployments = byKind(objects, 'Deployment');
    expect(deployments.length).toBeGreaterThan(0);
    for (const d of deployments) {
      const role = d.metadata.labels!['app.kubernetes.io/component'];
      const pod = d.spec.template.spec;
      const [c] = pod.containers;
      expect(pod.containers).toHaveLength(1);
      expect(c.env).toContainEqual({ name: 'SERVICE_ROLE', value: role });
      // 240 s to start: the node test needed 180 s on a 100m CPU request.
      expect(c.startupProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1, failureThreshold: 240 });
      expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 });
      // More than one failure: one slow database ping must not take every API pod out at once.
      expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 3 });
      // The pause before SIGTERM, and the service's 10 s drain after it, within the grace period.
      expect(c.lifecycle).toEqual({ preStop: { exec: { command: ['sleep', '10'] } } });
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(10 + 10);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(c.volumeMounts[0]).toEqual({ name: 'tmp', mountPath: '/tmp' });
      expect(pod.volumes[0]).toEqual({ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      // The measured peak (289 MiB, docs/performance.md) is requested; the limit is above it.
      expect(mebibytes(c.resources.requests.memory)).toBeGreaterThanOrEqual(289);
      expect(mebibytes(c.resources.limits.memory)).toBeGreaterThan(mebibytes(c.resources.requests.memory));
      expect(d.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
      // Longer than a stored-data upgrade of 100,000 learners (575 s), during which new pods are not ready.
      expect(d.spec.progressDeadlineSeconds).toBeGreaterThanOrEqual(1800);
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

  test.each(KUBE_MINORS)('valid against the Kubernetes %s OpenAPI schemas, strictly (kubernetes-validate)', async (version) => {
    const res = await validateAll();
    expect(res.code).toBe(0);
    const minor = version.replace(/\.0$/, '');
    // One "passed" line per built-in object, against that very minor's schemas; custom resources
    // are the only kinds without a schema.
    const passed = res.out.split('\n').filter((l) => l.includes(`/rendered-${file} passed for resource `) && l.endsWith(`against version ${minor}`));
    expect(passed).toHaveLength(objects.filter((o) => !CUSTOM.includes(o.kind)).length);
    const unknown = res.out.split('\n').filter((l) => l.includes("Couldn't find schema"));
    expect(unknown.every((l) => CUSTOM.some((kind) => l.includes(`kind ${kind}`)))).toBe(true);
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
    // A pod that is not ready (all of them in a database outage) can still be evicted: drains never stall.
    for (const p of byKind(on.objects, 'PodDisruptionBudget')) expect(p.spec.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
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

  test('the rollout deadline is a setting, below which the schema refuses (a minute)', async () => {
    const set = await render({ files: minimal, set: { progressDeadlineSeconds: '3600' } });
    expect(byKind(set.objects, 'Deployment').map((d) => d.spec.progressDeadlineSeconds)).toEqual([3600, 3600]);
    const refused = await render({ files: minimal, set: { progressDeadlineSeconds: '30' } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('progressDeadlineSeconds');
  });

  test('an existing Secret replaces the chart Secret, and the helm test reads its JWT_SECRET from it', async () => {
    const r = await render({
      files: minimal,
      set: { 'auth.jwtSecret': 'null', 'secrets.mongoUrl': 'null', 'existingSecret.name': 'mine', 'existingSecret.jwtKey': 'JWT_SECRET' },
    });
    expect(r.stderr).toBe('');
    expect(byKind(r.objects, 'Secret')).toEqual([]);
    expect(deployment(r.objects, 'api')!.spec.template.spec.containers[0].env).toContainEqual({
      name: 'MONGO_URL',
      valueFrom: { secretKeyRef: { name: 'mine', key: 'MONGO_URL' } },
    });
    const [testPod] = byKind(r.objects, 'Pod');
    expect(testPod!.spec.containers[0].env).toContainEqual({ name: 'JWT_SECRET', valueFrom: { secretKeyRef: { name: 'mine', key: 'JWT_SECRET' } } });
  });

  test('the helm test pod: the service image, restricted security, a hook', async () => {
    const [testPod] = byKind((await render({ files: minimal })).objects, 'Pod');
    expect(testPod!.metadata.annotations!['helm.sh/hook']).toBe('test');
    expect(testPod!.spec.containers[0]).toMatchObject({
      image: `registry.example.internal/course-access-groups:${APP_VERSION}`,
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

test("the README's install from a release: the packaged chart, the pushed image's repository, existing MongoDB, Kafka and registry", async () => {
  const pem = path.join(tmp, 'lms-jwt-public.pem');
  writeFileSync(pem, generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
  // The release's archive when given, else `helm package` as the release does; the README installs
  // course-access-groups-<version>.tgz.
  const packaged = CHART.endsWith('.tgz') ? CHART : (await tool('helm', ['package', CHART_DIR, '--destination', tmp])).stdout.trim().split(': ').pop()!;
  expect(path.basename(packaged)).toBe(`course-access-groups-${CHART_VERSION}.tgz`);
  // The README's command with REGISTRY=registry.example.org.
  const args = [
    ...['--set', 'image.repository=registry.example.org/course-access-groups'],
    ...['--set', 'config.kafkaBrokers=kafka-0.kafka:9092\\,kafka-1.kafka:9092'],
    ...['--set', 'config.schemaRegistryUrl=http://registry.openedx:8080/apis/ccompat/v7'],
    ...['--set', 'secrets.mongoUrl=mongodb://cag:PASSWORD@mongo-0.mongo:27017/?replicaSet=rs0'],
    ...['--set-file', `auth.jwtPublicKey=${pem}`],
  ];
  expect(await tool('helm', ['lint', '--strict', packaged, ...args])).toMatchObject({ code: 0 });
  const res = await tool('helm', ['template', 'cag', packaged, '--namespace', 'openedx', ...args]);
  expect(res.stderr).toBe('');
  const objects = parseObjects(res.stdout);
  const [cm] = byKind(objects, 'ConfigMap');
  expect(cm!.data).toMatchObject({
    KAFKA_BROKERS: 'kafka-0.kafka:9092,kafka-1.kafka:9092',
    SCHEMA_REGISTRY_URL: 'http://registry.openedx:8080/apis/ccompat/v7',
  });
  const [secret] = byKind(objects, 'Secret');
  expect(secret!.stringData.JWT_PUBLIC_KEY).toContain('-----BEGIN PUBLIC KEY-----');
  // The tag is the chart's appVersion: the image the release's archive carries.
  for (const { c } of serviceContainers(objects)) expect(c.image).toBe(`registry.example.org/course-access-groups:${APP_VERSION}`);
});

describe('issue 36: production values', () => {
  const configMap = (objects: K8sObject[]) => byKind(objects, 'ConfigMap')[0]!.data as Record<string, string>;

  test("an LMS-only release (issue 36): the LMS's issuers and key set in the ConfigMap, no service key anywhere, and the service's own loader accepts the pods' environment", async () => {
    const lmsOnly = [ciValues('lms-only-values.yaml')];
    const { objects, stderr } = await render({ files: lmsOnly });
    expect(stderr).toBe('');
    const data = configMap(objects);
    const values = parse(readFileSync(lmsOnly[0]!, 'utf8')) as { auth: { lms: { issuers: unknown[]; jwkSet: string } } };
    expect(JSON.parse(data.LMS_JWT_ISSUERS!)).toEqual(values.auth.lms.issuers);
    expect(data.LMS_JWT_PUBLIC_SIGNING_JWK_SET).toBe(values.auth.lms.jwkSet);
    const [secret] = byKind(objects, 'Secret');
    expect(Object.keys(secret!.stringData)).toEqual(['MONGO_URL']);
    for (const { c } of serviceContainers(objects)) expect(JSON.stringify(c)).not.toMatch(/JWT_(SECRET|PUBLIC_KEY|JWKS_URL)/);
    // What start-up does with that environment (src/config.ts): the LMS path alone, no exit 2.
    const config = loadConfig({ ...data, ...secret!.stringData, SERVICE_ROLE: 'api' });
    expect(config.LMS_JWT_ISSUERS).toEqual([{ ISSUER: 'https://lms.example.org/oauth2', AUDIENCE: 'openedx' }]);
    expect(config.JWT_SECRET).toBeUndefined();
    // The helm test Pod has no secret to sign with: it checks the refusal alone.
    const [testPod] = byKind(objects, 'Pod');
    expect(testPod!.spec.containers[0].env.map((e: { name: string }) => e.name)).toEqual(['API_URL']);
  });

  test('the Kafka group, the changes topic and the database derive from the namespace and release; set values win', async () => {
    const names = async (release: string, namespace: string, set: Record<string, string> = {}) => {
      const data = configMap((await render({ release, namespace, files: minimal, set })).objects);
      return [data.KAFKA_GROUP_ID, data.CHANGES_TOPIC, data.MONGO_DB];
    };
    expect(await names('cag', 'lms')).toEqual(['course-access-groups.lms.cag', 'course-access-groups.lms.cag.changes', 'lms_cag']);
    // Two releases in one namespace, and the same release name in two namespaces: nothing shared.
    const all = [await names('cag', 'lms'), await names('cag2', 'lms'), await names('cag', 'lms-b')];
    for (const i of [0, 1, 2]) expect(new Set(all.map((n) => n[i])).size).toBe(3);
    const set = { 'config.kafkaGroupId': 'cag-prod', 'config.changesTopic': 'cag.changes', 'config.mongoDb': 'course_access_groups' };
    expect(await names('cag', 'lms', set)).toEqual(['cag-prod', 'cag.changes', 'course_access_groups']);
    expect((await names('cag', 'lms', { 'config.changesEnabled': 'false' }))[1]).toBe('');
    // A long namespace and release still give a database name the service accepts (63 characters at most).
    const [, , db] = await names('r'.repeat(53), 'n'.repeat(63));
    expect(db).toMatch(/^[A-Za-z0-9_-]{1,63}$/);
  });

  test("the topics are where an LMS with the chart's topic prefix publishes: openedx (the Tutor plugin's) by default, another, none; kafkaTopics wins", async () => {
    const topics = async (set: Record<string, string> = {}) => configMap((await render({ files: minimal, set })).objects).KAFKA_TOPICS;
    expect(await topics()).toBe('openedx-user-account-activated,openedx-user-lifecycle,openedx-course-catalog');
    expect(await topics({ 'config.topicPrefix': 'prod' })).toBe('prod-user-account-activated,prod-user-lifecycle,prod-course-catalog');
    expect(await topics({ 'config.topicPrefix': '' })).toBe('user-account-activated,user-lifecycle,course-catalog');
    expect(await topics({ 'config.kafkaTopics': 'a\\,b' })).toBe('a,b'); // `\,`: helm's --set splits on commas
    // The service accepts what the pods get.
    expect(loadConfig({ KAFKA_TOPICS: await topics(), JWT_SECRET: 'a-test-secret-of-enough-length' }).KAFKA_TOPICS).toEqual([
      'openedx-user-account-activated',
      'openedx-user-lifecycle',
      'openedx-course-catalog',
    ]);
    const refused = await tool('helm', ['template', 'cag', CHART, '-f', minimal[0]!, '--set', 'config.topicPrefix=a b']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('topicPrefix');
  });

  test('an existing Secret is read under its own key names; optional keys may be missing; no other key becomes the environment', async () => {
    const { objects, stderr } = await render({ files: [ciValues('existing-secret-values.yaml')] });
    expect(stderr).toBe('');
    for (const { c } of serviceContainers(objects)) {
      expect(c.envFrom).not.toContainEqual({ secretRef: { name: 'cag-credentials' } });
      expect(c.env).toEqual(
        expect.arrayContaining([
          { name: 'MONGO_URL', valueFrom: { secretKeyRef: { name: 'cag-credentials', key: 'connectionString.standard' } } },
          { name: 'JWT_PUBLIC_KEY', valueFrom: { secretKeyRef: { name: 'cag-credentials', key: 'lms-jwt-public.pem' } } },
          { name: 'KAFKA_SASL_PASSWORD', valueFrom: { secretKeyRef: { name: 'cag-credentials', key: 'kafka-password', optional: true } } },
          {
            name: 'SCHEMA_REGISTRY_USERNAME',
            valueFrom: { secretKeyRef: { name: 'cag-credentials', key: 'SCHEMA_REGISTRY_USERNAME', optional: true } },
          },
        ]),
      );
    }
  });

  test('Kafka TLS and SASL values become the service settings, files from Secrets mounted read-only', async () => {
    const { objects } = await render({ files: [ciValues('everything-on-values.yaml')] });
    const data = configMap(objects);
    expect(data).toMatchObject({
      KAFKA_SSL: 'on',
      KAFKA_SSL_CA_FILE: '/etc/course-access-groups/kafka-tls/ca.crt',
      KAFKA_SSL_CERT_FILE: '/etc/course-access-groups/kafka-tls/tls.crt',
      KAFKA_SSL_KEY_FILE: '/etc/course-access-groups/kafka-tls/tls.key',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'cag-api-key',
    });
    expect(data).not.toHaveProperty('KAFKA_SASL_PASSWORD');
    const containers = serviceContainers(objects);
    expect(containers.map((x) => x.role).sort()).toEqual(['api', 'consumer', 'topics', 'upgrade']);
    for (const { pod, c } of containers) {
      expect(c.env).toContainEqual({ name: 'KAFKA_SASL_PASSWORD_FILE', value: '/etc/course-access-groups/kafka-sasl/api-secret' });
      expect(c.volumeMounts).toEqual(
        expect.arrayContaining([
          { name: 'kafka-tls', mountPath: '/etc/course-access-groups/kafka-tls', readOnly: true },
          { name: 'kafka-sasl', mountPath: '/etc/course-access-groups/kafka-sasl', readOnly: true },
        ]),
      );
      expect(pod.volumes).toEqual(
        expect.arrayContaining([
          { name: 'kafka-tls', secret: { secretName: 'kafka-client-tls', defaultMode: 0o440 } },
          { name: 'kafka-sasl', secret: { secretName: 'kafka-api-secret', defaultMode: 0o440, items: [{ key: 'api-secret', path: 'api-secret' }] } },
        ]),
      );
    }
    // Plaintext by default, and an inline password goes to the release's Secret, never the ConfigMap.
    expect(configMap((await render({ files: minimal })).objects)).toMatchObject({ KAFKA_SSL: 'off' });
    const inline = await render({
      files: minimal,
      set: { 'kafka.tls.enabled': 'true', 'kafka.sasl.mechanism': 'scram-sha-256', 'kafka.sasl.username': 'cag', 'kafka.sasl.password': 'kafka-pass-1' },
    });
    expect(configMap(inline.objects)).toMatchObject({ KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'cag' });
    expect(configMap(inline.objects)).not.toHaveProperty('KAFKA_SSL_CA_FILE');
    expect(JSON.stringify(configMap(inline.objects))).not.toContain('kafka-pass-1');
    expect(byKind(inline.objects, 'Secret')[0]!.stringData.KAFKA_SASL_PASSWORD).toBe('kafka-pass-1');
  });

  test('extra volumes, mounts, env and envFrom reach every container of the service (a private CA)', async () => {
    const { objects } = await render({ files: [ciValues('everything-on-values.yaml')] });
    for (const { pod, c } of serviceContainers(objects)) {
      expect(pod.volumes).toContainEqual({ name: 'private-ca', configMap: { name: 'private-ca' } });
      expect(c.volumeMounts).toContainEqual({ name: 'private-ca', mountPath: '/etc/private-ca', readOnly: true });
      expect(c.env).toContainEqual({ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/private-ca/ca.crt' });
      expect(c.envFrom).toContainEqual({ configMapRef: { name: 'cag-site-settings' } });
    }
  });

  test('the upgrade Job: a plain Job (no Helm hook) running cag upgrade; a new image makes a new Job, a replica count does not', async () => {
    const { objects } = await render({ files: minimal });
    const job = upgradeJob(objects)!;
    expect(job.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
    expect(job.metadata.name).toMatch(/^cag-course-access-groups-upgrade-[0-9a-f]{8}$/);
    const pod = job.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    // Exit 4 (a newer version's shape) fails the Job at once: retrying the same image cannot help.
    expect(job.spec.podFailurePolicy).toEqual({
      rules: [{ action: 'FailJob', onExitCodes: { containerName: 'upgrade', operator: 'In', values: [4] }, onPodConditions: [] }],
    });
    expect(pod.containers[0]).toMatchObject({
      image: `registry.example.internal/course-access-groups:${APP_VERSION}`,
      command: ['node', 'dist/src/cli/main.js', 'upgrade'],
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
    });
    // The same settings as the service: the ConfigMap and the Secret.
    expect(pod.containers[0].envFrom).toEqual(deployment(objects, 'api')!.spec.template.spec.containers[0].envFrom);
    const name = async (set: Record<string, string>) => upgradeJob((await render({ files: minimal, set })).objects)!.metadata.name;
    expect(await name({ 'image.tag': `${APP_VERSION}-next` })).not.toBe(job.metadata.name);
    expect(await name({ 'api.replicas': '5' })).toBe(job.metadata.name);
    expect(upgradeJob((await render({ files: minimal, set: { 'upgradeJob.enabled': 'false' } })).objects)).toBeUndefined();
    const custom = upgradeJob((await render({ files: minimal, set: { 'upgradeJob.command': '{node,dist/src/cli/main.js,upgrade,--verbose}' } })).objects)!;
    expect(custom.spec.template.spec.containers[0].command).toEqual(['node', 'dist/src/cli/main.js', 'upgrade', '--verbose']);
    // Unset by default; set, from a values file (a YAML number: float64 in Helm) or --set (int64), either way.
    expect([job.spec.ttlSecondsAfterFinished, job.spec.activeDeadlineSeconds]).toEqual([undefined, undefined]);
    const timed = upgradeJob(
      (await render({ files: minimal, set: { 'upgradeJob.ttlSecondsAfterFinished': '600', 'upgradeJob.activeDeadlineSeconds': '3600' } })).objects,
    )!;
    expect([timed.spec.ttlSecondsAfterFinished, timed.spec.activeDeadlineSeconds]).toEqual([600, 3600]);
  });

  test('the topics Job (opt-in): off by default; on, a plain Job running cag topics --create with the Kafka settings, mounts and restricted security of the service pods, named after the release, a new name when its pod changes', async () => {
    expect(job((await render({ files: minimal })).objects, 'topics')).toBeUndefined();
    const { objects } = await render({ files: [ciValues('everything-on-values.yaml')] });
    const topics = job(objects, 'topics')!;
    expect(topics.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
    expect(topics.metadata.name).toMatch(/^cag-course-access-groups-topics-[0-9a-f]{8}$/);
    // Exit 2 (a command line it refuses) fails the Job at once; exit 1 (a broker not answering yet,
    // a topic refused) is retried up to backoffLimit times.
    expect(topics.spec.podFailurePolicy).toEqual({
      rules: [{ action: 'FailJob', onExitCodes: { containerName: 'topics', operator: 'In', values: [2] }, onPodConditions: [] }],
    });
    expect(topics.spec.backoffLimit).toBe(3);
    const pod = topics.spec.template.spec;
    const consumer = deployment(objects, 'consumer')!.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0]).toMatchObject({
      name: 'topics',
      image: `registry.example.internal/course-access-groups:${APP_VERSION}`,
      command: ['node', 'dist/src/cli/main.js', 'topics', '--create', '--partitions', '6', '--replication-factor', '3'],
    });
    // The service's Kafka settings and files: the consumer's environment sources, mounts, volumes and security.
    const [c, cc] = [pod.containers[0], consumer.containers[0]];
    expect(c.envFrom).toEqual(cc.envFrom);
    expect(c.volumeMounts).toEqual(cc.volumeMounts);
    expect(pod.volumes).toEqual(consumer.volumes);
    expect(c.env).toContainEqual({ name: 'KAFKA_SASL_PASSWORD_FILE', value: '/etc/course-access-groups/kafka-sasl/api-secret' });
    const kafkaOf = (env: Record<string, string>) => Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('KAFKA_') || k === 'CHANGES_TOPIC'));
    const envs = Object.fromEntries(environments(objects, { 'cag-site-settings': {} }).map((e) => [e.role, e.env]));
    expect(kafkaOf(envs.topics!)).toEqual(kafkaOf(envs.consumer!));
    expect(kafkaOf(envs.topics!)).toMatchObject({ KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'plain', KAFKA_DLQ_PREFIX: 'course-access-groups.lms.cag.' });
    // PodSecurity restricted, as every pod of the release.
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(topics.spec.template.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': 'cag', 'app.kubernetes.io/component': 'topics' });
    // A Job's template cannot change in place: a new image, setting or option names a new Job; a replica count does not.
    const name = async (set: Record<string, string>) =>
      job((await render({ files: minimal, set: { 'topicsJob.enabled': 'true', ...set } })).objects, 'topics')!.metadata.name;
    const base = await name({});
    expect(base).toMatch(/^cag-course-access-groups-topics-[0-9a-f]{8}$/);
    expect(await name({ 'image.tag': `${APP_VERSION}-next` })).not.toBe(base);
    expect(await name({ 'config.kafkaBrokers': 'kafka-2.example.internal:9092' })).not.toBe(base);
    expect(await name({ 'topicsJob.partitions': '3' })).not.toBe(base);
    expect(await name({ 'api.replicas': '5' })).toBe(base);
    // Named after the release: another release's topics Job is another Job.
    const other = job((await render({ release: 'cag2', files: minimal, set: { 'topicsJob.enabled': 'true' } })).objects, 'topics')!;
    expect(other.metadata.name).toMatch(/^cag2-course-access-groups-topics-[0-9a-f]{8}$/);
    // The upgrade Job is the same as without it.
    expect(upgradeJob(objects)).toEqual(
      upgradeJob((await render({ files: [ciValues('everything-on-values.yaml')], set: { 'topicsJob.enabled': 'false' } })).objects),
    );
  });

  test('NetworkPolicy, Ingress and HTTPRoute only when asked for; the routes send /course_access_groups/ (API and console) to the API', async () => {
    const off = await render({ files: minimal });
    for (const kind of ['NetworkPolicy', 'Ingress', 'HTTPRoute']) expect(byKind(off.objects, kind)).toEqual([]);
    const { objects } = await render({ files: [ciValues('everything-on-values.yaml')] });
    const [ingress] = byKind(objects, 'Ingress');
    expect(ingress!.spec.ingressClassName).toBe('nginx');
    expect(ingress!.spec.rules).toEqual([
      {
        host: 'lms.example.org',
        http: {
          paths: [
            {
              path: '/course_access_groups/',
              pathType: 'Prefix',
              backend: { service: { name: 'cag-course-access-groups-api', port: { name: 'http' } } },
            },
          ],
        },
      },
    ]);
    const [route] = byKind(objects, 'HTTPRoute');
    expect(route!.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(route!.spec).toEqual({
      parentRefs: [{ name: 'public', namespace: 'gateways', sectionName: 'https' }],
      hostnames: ['lms.example.org'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/course_access_groups/' } }],
          backendRefs: [{ name: 'cag-course-access-groups-api', port: 8000 }],
        },
      ],
    });
    const policies = byKind(objects, 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name)).toEqual([
      'cag-course-access-groups-api',
      'cag-course-access-groups-consumer',
      'cag-course-access-groups-egress',
    ]);
    const [api, consumer] = policies;
    expect(api!.spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe('api');
    expect(api!.spec.policyTypes).toEqual(['Ingress']);
    // The named callers, the release's own pods (the helm test), and the metrics scraper.
    expect(api!.spec.ingress[0].from).toContainEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'cag' } } });
    expect(api!.spec.ingress[0].from).toContainEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'lms' } } });
    expect(consumer!.spec.ingress).toEqual([
      { ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] },
    ]);
    // Enabled with no peers named: the API open to its own namespace, the consumer to nobody.
    const plain = byKind((await render({ files: minimal, set: { 'networkPolicy.enabled': 'true' } })).objects, 'NetworkPolicy');
    expect(plain.map((p) => p.spec.ingress)).toEqual([[{ ports: [{ port: 'http', protocol: 'TCP' }], from: [{ podSelector: {} }] }], []]);
  });

  test('egress (opt-in): every pod of the release may reach DNS, its own API and the rules given, nothing else', async () => {
    const none = byKind((await render({ files: minimal, set: { 'networkPolicy.enabled': 'true' } })).objects, 'NetworkPolicy');
    expect(none.map((p) => p.metadata.name)).not.toContain('cag-course-access-groups-egress');
    const r = await render({
      files: minimal,
      set: {
        'networkPolicy.enabled': 'true',
        'networkPolicy.egress.enabled': 'true',
        'networkPolicy.egress.to[0].to[0].ipBlock.cidr': '10.1.0.0/16',
        'networkPolicy.egress.to[0].ports[0].port': '9096',
      },
    });
    expect(r.stderr).toBe('');
    const egress = byKind(r.objects, 'NetworkPolicy').find((p) => p.metadata.name === 'cag-course-access-groups-egress')!;
    expect(egress.spec.policyTypes).toEqual(['Egress']);
    expect(egress.spec.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'course-access-groups', 'app.kubernetes.io/instance': 'cag' });
    expect(egress.spec.egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      {
        to: [
          {
            podSelector: {
              matchLabels: { 'app.kubernetes.io/name': 'course-access-groups', 'app.kubernetes.io/instance': 'cag', 'app.kubernetes.io/component': 'api' },
            },
          },
        ],
        ports: [{ port: 'http', protocol: 'TCP' }],
      },
      { to: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 9096 }] },
    ]);
    // Every pod the release makes is selected: both roles, the upgrade Job's and the helm test's.
    const pods = [...byKind(r.objects, 'Deployment'), ...byKind(r.objects, 'Job')].map((o) => o.spec.template.metadata.labels);
    for (const labels of pods) expect(labels).toMatchObject(egress.spec.podSelector.matchLabels);
  });

  test("a client certificate in its own Secret (Strimzi's KafkaUser, MSK with a public CA), the CA optional: mounted apart, the files named from it", async () => {
    const r = await render({
      files: minimal,
      set: { 'kafka.tls.enabled': 'true', 'kafka.tls.certSecret': 'cag-user', 'kafka.tls.certKey': 'user.crt', 'kafka.tls.keyKey': 'user.key' },
    });
    expect(r.stderr).toBe('');
    const [cm] = byKind(r.objects, 'ConfigMap');
    expect(cm!.data).toMatchObject({
      KAFKA_SSL: 'on',
      KAFKA_SSL_CERT_FILE: '/etc/course-access-groups/kafka-client-tls/user.crt',
      KAFKA_SSL_KEY_FILE: '/etc/course-access-groups/kafka-client-tls/user.key',
    });
    expect(cm!.data.KAFKA_SSL_CA_FILE).toBeUndefined();
    const pod = deployment(r.objects, 'consumer')!.spec.template.spec;
    expect(pod.volumes).toContainEqual({ name: 'kafka-client-tls', secret: { secretName: 'cag-user', defaultMode: 288 } });
    expect(pod.volumes.map((v: { name: string }) => v.name)).not.toContain('kafka-tls');
    expect(pod.containers[0].volumeMounts).toContainEqual({
      name: 'kafka-client-tls',
      mountPath: '/etc/course-access-groups/kafka-client-tls',
      readOnly: true,
    });
    // With Strimzi's cluster CA in its own Secret beside it: both mounted.
    const both = await render({
      files: minimal,
      set: {
        'kafka.tls.enabled': 'true',
        'kafka.tls.caSecret': 'my-cluster-cluster-ca-cert',
        'kafka.tls.certSecret': 'cag-user',
        'kafka.tls.certKey': 'user.crt',
        'kafka.tls.keyKey': 'user.key',
      },
    });
    expect(byKind(both.objects, 'ConfigMap')[0]!.data).toMatchObject({
      KAFKA_SSL_CA_FILE: '/etc/course-access-groups/kafka-tls/ca.crt',
      KAFKA_SSL_CERT_FILE: '/etc/course-access-groups/kafka-client-tls/user.crt',
    });
  });

  test('replicas spread across zones, then nodes, by default; dead-letter topics named after the release unless set; MSK IAM and OAUTHBEARER reach the pods as the service reads them', async () => {
    const r = await render({
      files: minimal,
      set: { 'kafka.tls.enabled': 'true', 'kafka.sasl.mechanism': 'aws-msk-iam', 'kafka.sasl.awsRegion': 'eu-west-1' },
    });
    expect(r.stderr).toBe('');
    for (const role of ['api', 'consumer'] as const) {
      const spread = deployment(r.objects, role)!.spec.template.spec.topologySpreadConstraints;
      expect(spread.map((c: { topologyKey: string; whenUnsatisfiable: string }) => [c.topologyKey, c.whenUnsatisfiable])).toEqual([
        ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
        ['kubernetes.io/hostname', 'ScheduleAnyway'],
      ]);
    }
    const [cm] = byKind(r.objects, 'ConfigMap');
    expect(cm!.data).toMatchObject({
      KAFKA_DLQ_PREFIX: 'course-access-groups.lms.cag.',
      KAFKA_SASL_MECHANISM: 'aws-msk-iam',
      KAFKA_SASL_AWS_REGION: 'eu-west-1',
    });
    expect(cm!.data.KAFKA_SASL_USERNAME).toBeUndefined();
    // The service takes what the chart renders.
    expect(loadConfig({ ...cm!.data, JWT_SECRET: 'a-secret-of-sixteen-chars' }).KAFKA_DLQ_PREFIX).toBe('course-access-groups.lms.cag.');
    const plain = await render({ files: minimal, set: { 'config.dlqTopicPrefix': '' } });
    expect(byKind(plain.objects, 'ConfigMap')[0]!.data.KAFKA_DLQ_PREFIX).toBe('');
    const oauth = await render({
      files: minimal,
      set: { 'kafka.sasl.mechanism': 'oauthbearer', 'kafka.sasl.oauthbearerTokenFile': '/var/run/kafka-token/token' },
    });
    expect(byKind(oauth.objects, 'ConfigMap')[0]!.data).toMatchObject({
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/var/run/kafka-token/token',
    });
  });

  test('the chart refuses a cluster older than its floor, 1.27, the first with unhealthyPodEvictionPolicy on by default', async () => {
    const res = await tool('helm', ['template', 'cag', CHART, '-f', ciValues('default-values.yaml'), '--kube-version', '1.26.15']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('chart requires kubeVersion: >=1.27.0-0 which is incompatible with Kubernetes v1.26.15');
    expect((await tool('helm', ['template', 'cag', CHART, '-f', ciValues('default-values.yaml'), '--kube-version', '1.27.0'])).code).toBe(0);
  });

  test('no default image that cannot be pulled: without image.repository rendering fails with the load and push commands', async () => {
    const r = await render({ files: minimal, set: { 'image.repository': 'null' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('image.repository is required');
    expect(r.stderr).toContain(`docker load -i course-access-groups-${APP_VERSION}.docker.tar`);
    expect(r.stderr).toContain(`docker push REGISTRY/course-access-groups:${APP_VERSION}`);
  });
});

describe("the console's sign-in through the LMS (lmsOauth)", () => {
  const lmsOnly = [ciValues('lms-only-values.yaml')];
  const signIn = {
    'lmsOauth.clientId': 'course-access-groups-sso',
    'lmsOauth.url': 'https://lms.example.org',
    'lmsOauth.internalUrl': 'http://lms:8000',
    'config.publicUrl': 'https://course-access-groups.lms.example.org',
  };
  const SECRET = 'oauth-client-secret-5b1e9c';
  const expected = {
    browserUrl: 'https://lms.example.org',
    internalUrl: 'http://lms:8000',
    clientId: 'course-access-groups-sso',
    clientSecret: SECRET,
    publicUrl: 'https://course-access-groups.lms.example.org',
  };

  test("in the chart's Secret: every pod's environment resolves to the settings, the secret in no ConfigMap or pod spec, and the service's loader turns the sign-in on", async () => {
    const r = await render({ files: lmsOnly, set: { ...signIn, 'secrets.lmsOauthClientSecret': SECRET } });
    expect(r.stderr).toBe('');
    const [cm] = byKind(r.objects, 'ConfigMap');
    expect(cm!.data).toMatchObject({
      LMS_OAUTH_CLIENT_ID: 'course-access-groups-sso',
      LMS_OAUTH_URL: 'https://lms.example.org',
      LMS_OAUTH_INTERNAL_URL: 'http://lms:8000',
      PUBLIC_URL: 'https://course-access-groups.lms.example.org',
    });
    for (const c of byKind(r.objects, 'ConfigMap')) expect(JSON.stringify(c)).not.toContain(SECRET);
    expect(byKind(r.objects, 'Secret')[0]!.stringData.LMS_OAUTH_CLIENT_SECRET).toBe(SECRET);
    for (const { c } of serviceContainers(r.objects)) expect(JSON.stringify(c)).not.toContain(SECRET);
    const envs = environments(r.objects);
    expect(envs.map((e) => e.role)).toEqual(['api', 'consumer', 'upgrade']);
    for (const { role, env } of envs.filter((e) => e.role !== 'upgrade')) {
      expect({ role, secret: env.LMS_OAUTH_CLIENT_SECRET }).toEqual({ role, secret: SECRET });
      // What start-up does with that environment (src/config.ts): the sign-in on, no exit 2.
      expect(loadConfig(env).LMS_OAUTH).toEqual(expected);
    }
    // lmsOauth.internalUrl is optional: the code exchange then goes to lmsOauth.url.
    const plain = await render({ files: lmsOnly, set: { ...signIn, 'lmsOauth.internalUrl': '', 'secrets.lmsOauthClientSecret': SECRET } });
    expect(byKind(plain.objects, 'ConfigMap')[0]!.data.LMS_OAUTH_INTERNAL_URL).toBeUndefined();
    expect(loadConfig(environments(plain.objects)[0]!.env).LMS_OAUTH).toEqual({ ...expected, internalUrl: 'https://lms.example.org' });
  });

  test('in an existing Secret: read under the key existingSecret.keys.lmsOauthClientSecret names, and required (not optional)', async () => {
    const r = await render({
      files: lmsOnly,
      set: { ...signIn, 'secrets.mongoUrl': 'null', 'existingSecret.name': 'cag-credentials', 'existingSecret.keys.lmsOauthClientSecret': 'oauth2-secret' },
    });
    expect(r.stderr).toBe('');
    expect(byKind(r.objects, 'Secret')).toEqual([]);
    for (const { c } of serviceContainers(r.objects)) {
      expect(c.env).toContainEqual({ name: 'LMS_OAUTH_CLIENT_SECRET', valueFrom: { secretKeyRef: { name: 'cag-credentials', key: 'oauth2-secret' } } });
    }
    const credentials = { 'cag-credentials': { MONGO_URL: 'mongodb://mongo.example.internal:27017/', 'oauth2-secret': SECRET } };
    for (const { env } of environments(r.objects, credentials).filter((e) => e.role !== 'upgrade')) expect(loadConfig(env).LMS_OAUTH).toEqual(expected);
    // The key missing from that Secret: the pods' environment cannot be built (the kubelet refuses to start them).
    expect(() => environments(r.objects, { 'cag-credentials': { MONGO_URL: 'mongodb://mongo.example.internal:27017/' } })).toThrow(
      'LMS_OAUTH_CLIENT_SECRET names a key its cag-credentials does not hold',
    );
  });

  test('the client id with all but the secret: refused, naming the secret alone', async () => {
    const r = await render({ files: lmsOnly, set: signIn });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      "lmsOauth.clientId is set (the console's sign-in through the LMS), but not: secrets.lmsOauthClientSecret (LMS_OAUTH_CLIENT_SECRET; or existingSecret.name, read under existingSecret.keys.lmsOauthClientSecret)\n",
    );
  });

  test.each(CI_FILES)('without the values nothing changes (ci/%s): no LMS_OAUTH_* nor PUBLIC_URL anywhere, and the sign-in off', async (file) => {
    const r = await render({ files: [ciValues(file)] });
    expect(r.text).not.toMatch(/LMS_OAUTH|PUBLIC_URL/);
    if (file === 'lms-only-values.yaml') expect(loadConfig(environments(r.objects)[0]!.env).LMS_OAUTH).toBeNull();
  });
});

describe('values refused at render time, with a message', () => {
  test.each([
    [
      'no trust path at all: neither a JWT key source nor the LMS one',
      { 'auth.jwtSecret': 'null' },
      "no trust path: set one JWT key source (auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey: the service's keys), or auth.lms.issuers and auth.lms.jwkSet (the LMS's), or both",
    ],
    [
      'two JWT key sources',
      { 'auth.jwksUrl': 'https://lms.example.org/jwks' },
      'set at most one JWT key source: auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey (auth.jwtSecret, auth.jwksUrl are set)',
    ],
    [
      "the LMS's issuers without its key set",
      { 'auth.lms.issuers[0].ISSUER': 'https://lms.example.org/oauth2', 'auth.lms.issuers[0].AUDIENCE': 'openedx' },
      "auth.lms.issuers and auth.lms.jwkSet go together (LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET, the LMS's trust path): auth.lms.jwkSet is not set",
    ],
    [
      "an LMS issuer with the LMS's HS256 SECRET_KEY (schema)",
      { 'auth.lms.issuers[0].ISSUER': 'i', 'auth.lms.issuers[0].AUDIENCE': 'a', 'auth.lms.issuers[0].SECRET_KEY': 's' },
      "/auth/lms/issuers/0': additional properties 'SECRET_KEY' not allowed",
    ],
    ['an LMS key set that is not a JWK set (schema)', { 'auth.lms.jwkSet': 'lms-public.pem' }, '/auth/lms/jwkSet'],
    ['no database', { 'secrets.mongoUrl': 'null' }, 'secrets.mongoUrl is required'],
    ['no brokers', { 'config.kafkaBrokers': 'null' }, 'config.kafkaBrokers is required'],
    ['an existing Secret beside inline secrets', { 'existingSecret.name': 'mine' }, 'existingSecret.name is set'],
    ['no role', { 'api.enabled': 'false', 'consumer.enabled': 'false' }, 'nothing to deploy'],
    ['an unknown key (schema)', { 'api.replica': '3' }, "additional properties 'replica' not allowed"],
    ['an unknown top-level key (schema)', { replicaCount: '3' }, "additional properties 'replicaCount' not allowed"],
    ['a short JWT secret (schema)', { 'auth.jwtSecret': 'short' }, '/auth/jwtSecret'],
    ['a log level the service refuses (schema)', { 'config.logLevel': 'verbose' }, '/config/logLevel'],
    [
      'a grace period without room for the preStop pause and the 10 s drain',
      { terminationGracePeriodSeconds: '15' },
      'terminationGracePeriodSeconds (15) must leave the service its 10 s to drain after preStopSleepSeconds (10): at least 20',
    ],
    ['a SASL mechanism the service does not know (schema)', { 'kafka.sasl.mechanism': 'gssapi' }, '/kafka/sasl/mechanism'],
    ['SASL without a user name', { 'kafka.sasl.mechanism': 'plain', 'kafka.sasl.password': 'p' }, 'kafka.sasl.username is required'],
    [
      'SASL without a password',
      { 'kafka.sasl.mechanism': 'plain', 'kafka.sasl.username': 'u' },
      'set exactly one password source: kafka.sasl.password, kafka.sasl.passwordSecret.name or existingSecret.keys.kafkaSaslPassword (none is set)',
    ],
    [
      'two SASL passwords',
      { 'kafka.sasl.mechanism': 'plain', 'kafka.sasl.username': 'u', 'kafka.sasl.password': 'p', 'kafka.sasl.passwordSecret.name': 's' },
      '(kafka.sasl.password, kafka.sasl.passwordSecret.name are set)',
    ],
    ['a SASL password with no mechanism', { 'kafka.sasl.password': 'p' }, 'kafka.sasl.mechanism is empty'],
    ['a client certificate without its key', { 'kafka.tls.enabled': 'true', 'kafka.tls.caSecret': 'ca', 'kafka.tls.certKey': 'tls.crt' }, 'go together'],
    ['TLS files with TLS off', { 'kafka.tls.caSecret': 'ca' }, 'kafka.tls.enabled is false'],
    [
      'a client certificate Secret without its keys',
      { 'kafka.tls.enabled': 'true', 'kafka.tls.certSecret': 'user' },
      'kafka.tls.certSecret is set: name its certificate and key',
    ],
    [
      'registry basic auth over http://',
      { 'config.schemaRegistryUrl': 'http://registry:8080/apis/ccompat/v7', 'secrets.schemaRegistryUsername': 'u', 'secrets.schemaRegistryPassword': 'p' },
      'basic auth over an http:// config.schemaRegistryUrl would send the password in clear',
    ],
    ['OAUTHBEARER without its token file', { 'kafka.sasl.mechanism': 'oauthbearer' }, 'kafka.sasl.oauthbearerTokenFile is required'],
    ['MSK IAM without its region', { 'kafka.tls.enabled': 'true', 'kafka.sasl.mechanism': 'aws-msk-iam' }, 'kafka.sasl.awsRegion is required'],
    ['MSK IAM without TLS', { 'kafka.sasl.mechanism': 'aws-msk-iam', 'kafka.sasl.awsRegion': 'eu-west-1' }, 'MSK takes IAM only over TLS'],
    [
      'MSK IAM with a password',
      { 'kafka.tls.enabled': 'true', 'kafka.sasl.mechanism': 'aws-msk-iam', 'kafka.sasl.awsRegion': 'eu-west-1', 'kafka.sasl.password': 'p' },
      'it takes no kafka.sasl.username nor password',
    ],
    ['an Ingress without a host', { 'ingress.enabled': 'true' }, 'give ingress.hosts'],
    ['an HTTPRoute without a Gateway', { 'httpRoute.enabled': 'true' }, 'give httpRoute.parentRefs'],
    ['an unknown PDB eviction policy (schema)', { 'api.pdb.unhealthyPodEvictionPolicy': 'Never' }, '/api/pdb/unhealthyPodEvictionPolicy'],
    ['a session timeout under Kafka’s least (schema)', { 'config.kafkaSessionTimeoutMs': '5000' }, '/config/kafkaSessionTimeoutMs'],
    ['a relay lease under 3 s (schema)', { 'config.changeRelayLeaseMs': '2000' }, '/config/changeRelayLeaseMs'],
    ['a topics Job partition count under 1 (schema)', { 'topicsJob.enabled': 'true', 'topicsJob.partitions': '0' }, '/topicsJob/partitions'],
    [
      "the console's sign-in with a client id alone: everything else it needs, named",
      { 'lmsOauth.clientId': 'course-access-groups-sso' },
      "lmsOauth.clientId is set (the console's sign-in through the LMS), but not: lmsOauth.url (LMS_OAUTH_URL: the LMS's root as browsers reach it); " +
        "config.publicUrl (PUBLIC_URL: the service's root as browsers reach it); " +
        "auth.lms.issuers and auth.lms.jwkSet (the LMS's trust path: it verifies the token the sign-in receives); " +
        'secrets.lmsOauthClientSecret (LMS_OAUTH_CLIENT_SECRET; or existingSecret.name, read under existingSecret.keys.lmsOauthClientSecret)',
    ],
    [
      "the console's sign-in settings without its client id",
      { 'lmsOauth.url': 'https://lms.example.org', 'secrets.lmsOauthClientSecret': 'oauth-secret' },
      "lmsOauth.url, secrets.lmsOauthClientSecret set, but lmsOauth.clientId is not (the console's sign-in through the LMS is on only with a client id)",
    ],
    [
      "the console's client secret inline beside an existing Secret",
      {
        'existingSecret.name': 'mine',
        'existingSecret.jwtKey': 'JWT_SECRET',
        'auth.jwtSecret': 'null',
        'secrets.mongoUrl': 'null',
        'secrets.lmsOauthClientSecret': 'oauth-secret',
      },
      'existingSecret.name is set: put MONGO_URL, the JWT key, the registry and Kafka credentials and the LMS OAuth2 client secret in that Secret',
    ],
    ['a public URL with a path, which the service refuses (schema)', { 'config.publicUrl': 'https://lms.example.org/cag' }, '/config/publicUrl'],
    ['an LMS URL that is not http(s) (schema)', { 'lmsOauth.url': 'lms.example.org' }, '/lmsOauth/url'],
    ['an LMS internal URL with a query (schema)', { 'lmsOauth.internalUrl': 'http://lms:8000/?x=1' }, '/lmsOauth/internalUrl'],
  ])('%s', async (_what, set, message) => {
    const r = await render({ files: minimal, set });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  test('the session timeout and the relay lease reach the pods as KAFKA_SESSION_TIMEOUT_MS and CHANGE_RELAY_LEASE_MS, which the service accepts', async () => {
    const r = await render({ files: minimal, set: { 'config.kafkaSessionTimeoutMs': '10000', 'config.changeRelayLeaseMs': '6000' } });
    expect(r.stderr).toBe('');
    const [cm] = byKind(r.objects, 'ConfigMap');
    expect(cm!.data).toMatchObject({ KAFKA_SESSION_TIMEOUT_MS: '10000', CHANGE_RELAY_LEASE_MS: '6000' });
    const config = loadConfig({ ...cm!.data, JWT_SECRET: 'a-secret-of-sixteen-chars' });
    expect([config.KAFKA_SESSION_TIMEOUT_MS, config.CHANGE_RELAY_LEASE_MS]).toEqual([10000, 6000]);
  });

  test("the LMS's key set without its issuers (a values file: --set cannot carry JSON)", async () => {
    const file = path.join(tmp, 'lms-key-set-only.yaml');
    writeFileSync(file, 'auth:\n  jwtSecret: null\n  lms:\n    jwkSet: \'{"keys": []}\'\n');
    const r = await render({ files: [...minimal, file] });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('auth.lms.issuers and auth.lms.jwkSet go together');
    expect(r.stderr).toContain('auth.lms.issuers is not set');
  });
});

test("docs/install-tutor.md's Tutor for Open edX, Helm for the service: the chart's topics, LMS trust path, console sign-in and Service are what the Tutor-rendered LMS uses", async () => {
  // The block as written (runTutorSplitBlock: a Tutor root with the plugin and an organization,
  // steps 1 to 3, and the packaged chart), `helm template` in place of `helm install` (no cluster here).
  const { stdout, root, python, tutor } = await runTutorSplitBlock(tmp, (block) => block.replace('helm install ', 'helm template '));
  const objects = parseObjects(stdout);
  const data = byKind(objects, 'ConfigMap')[0]!.data as Record<string, string>;
  // Where the LMS publishes: its rendered prefix, with the topics of the plugin's settings.
  const lms = readFileSync(path.join(root, 'env/apps/openedx/settings/lms/production.py'), 'utf8');
  const prefix = /^EVENT_BUS_TOPIC_PREFIX = "([^"]+)"$/m.exec(lms)![1];
  expect(prefix).toBe('openedx');
  expect(lms).toContain('("org.openedx.learning.student.registration.completed.v1", "user-lifecycle"');
  expect(lms).toContain('("org.openedx.content_authoring.course.catalog_info.changed.v1", "course-catalog"');
  expect(data.KAFKA_TOPICS).toBe(`${prefix}-user-account-activated,${prefix}-user-lifecycle,${prefix}-course-catalog`);
  expect(data).toMatchObject({
    KAFKA_BROKERS: 'kafka-0.kafka:9092',
    SCHEMA_REGISTRY_URL: 'http://registry.openedx:8080/apis/ccompat/v7',
    DEFAULT_ORGANIZATION: 'TutorRendered',
  });
  // The LMS's trust path: Tutor's issuer and audience, and the public half of its key.
  expect(JSON.parse(data.LMS_JWT_ISSUERS!)).toEqual([{ ISSUER: 'http://local.openedx.io/oauth2', AUDIENCE: 'openedx' }]);
  const [key] = JSON.parse(data.LMS_JWT_PUBLIC_SIGNING_JWK_SET!).keys as { kid: string; n: string }[];
  expect(key!.kid).toBe('openedx');
  expect(lms).toContain(`"n": "${key!.n}"`); // the LMS's JWT_PUBLIC_SIGNING_JWK_SET, as Tutor renders it
  // The console's sign-in through the LMS: the application the init task registers, as Tutor renders
  // that task (create_dot_application's client id and redirect URI), with Tutor's secret.
  const tutorEnv = { ...process.env, TUTOR_ROOT: root, TUTOR_PLUGINS_ROOT: path.join(root, 'plugins'), PYTHONPATH: path.join(root, 'site') };
  const initTask = (
    await run(
      python,
      [
        '-c',
        [
          'from tutor import config as tutor_config, env, hooks',
          'hooks.Actions.CORE_READY.do()',
          `hooks.Actions.PROJECT_ROOT_READY.do(${JSON.stringify(root)})`,
          `config = tutor_config.load(${JSON.stringify(root)})`,
          '[task] = [c for s, c in hooks.Filters.CLI_DO_INIT_TASKS.iterate() if s == "lms" and "course_access_groups" in c]',
          'print(env.render_str(config, task))',
        ].join('\n'),
      ],
      { cwd: tmp, env: tutorEnv },
    )
  ).stdout;
  const registered = initTask.slice(initTask.indexOf('./manage.py lms create_dot_application'));
  expect(data.LMS_OAUTH_CLIENT_ID).toBe(/--client-id (\S+)/.exec(registered)![1]);
  expect(`${data.PUBLIC_URL}/course_access_groups/console/oauth/callback`).toBe(/--redirect-uris "([^"]+)"/.exec(registered)![1]);
  // Browsers authorize at the LMS's public root (its JWT issuer's); the pods exchange the code with
  // Tutor's lms Service, which is in the release's namespace.
  expect(`${data.LMS_OAUTH_URL}/oauth2`).toBe('http://local.openedx.io/oauth2');
  expect(data.LMS_OAUTH_INTERNAL_URL).toBe('http://lms:8000');
  const tutorServices = parseObjects(readFileSync(path.join(root, 'env/k8s/services.yml'), 'utf8'));
  const lmsService = tutorServices.find((o) => o.kind === 'Service' && o.metadata.name === 'lms');
  expect((lmsService!.spec.ports as { port: number }[]).map((p) => p.port)).toContain(8000);
  const tutorNamespace = (await run(tutor, ['config', 'printvalue', 'K8S_NAMESPACE'], { env: tutorEnv })).stdout.trim();
  expect(byKind(objects, 'ConfigMap')[0]!.metadata.namespace).toBe(tutorNamespace);
  const oauthSecret = (parse(readFileSync(path.join(root, 'config.yml'), 'utf8')) as Record<string, string>).COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO!;
  expect(oauthSecret).toMatch(/^[A-Za-z0-9]{48}$/);
  const [secret] = byKind(objects, 'Secret');
  expect(secret!.stringData.LMS_OAUTH_CLIENT_SECRET).toBe(oauthSecret);
  for (const cm of byKind(objects, 'ConfigMap')) expect(JSON.stringify(cm)).not.toContain(oauthSecret);
  const config = loadConfig({ ...data, ...secret!.stringData });
  expect(config.MONGO_URL).toBe('mongodb://cag:PASSWORD@mongo-0.mongo:27017/?replicaSet=rs0');
  expect(config.LMS_OAUTH).toEqual({
    browserUrl: 'http://local.openedx.io',
    internalUrl: 'http://lms:8000',
    clientId: data.LMS_OAUTH_CLIENT_ID,
    clientSecret: oauthSecret,
    publicUrl: data.PUBLIC_URL,
  });
  expect(config.KAFKA_TOPICS).toEqual([`${prefix}-user-account-activated`, `${prefix}-user-lifecycle`, `${prefix}-course-catalog`]);
  // The LMS plugin calls the chart's API Service.
  const serviceUrl = new URL(/"SERVICE_URL": "([^"]+)"/.exec(lms)![1]!);
  const api = byKind(objects, 'Service').find((s) => s.metadata.name === serviceUrl.hostname.split('.')[0]);
  expect(api).toBeDefined();
  expect(serviceUrl.hostname.split('.')[1]).toBe(api!.metadata.namespace);
  expect((api!.spec.ports as { port: number }[]).map((p) => p.port)).toContain(Number(serviceUrl.port));
}, 300000);
