// Issue 28, step 2: the chart on a real Kubernetes control plane (etcd, kube-apiserver and
// kube-controller-manager v1.34 built from the Go module proxy, on 127.0.0.1; scripts/k8s/test.sh
// starts it and sets KUBECONFIG). No node: Pods are created and admitted but never scheduled,
// so what is proved is what the API server and the controllers decide: PodSecurity admission,
// strict server-side validation, Deployment -> ReplicaSet -> Pod, rollout arithmetic, helm's
// release lifecycle, garbage collection after an uninstall. Issue 36: the chart is installed from
// its `helm package`d archive (CAG_CHART_TGZ names a release's instead), with its
// NetworkPolicy, Ingress, upgrade Job and PDB eviction policy, and the Kafka security values
// followed from the values to the Pods the controllers create.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CHART, CI_FILES, ciValues, type K8sObject, ok, parseObjects, render, tool } from './tools';

const suffix = randomBytes(3).toString('hex');
const NS_A = `cag-a-${suffix}`;
const NS_B = `cag-b-${suffix}`;
const NS_C = `cag-c-${suffix}`;
const base = ['-f', ciValues('default-values.yaml')];
/** Kinds of custom resources the chart may render: their CRDs are not in this cluster (step 1 checks their shape). */
const CUSTOM = ['ServiceMonitor', 'HTTPRoute'];
const tmp = mkdtempSync(path.join(tmpdir(), 'cag-k8s-chart-'));
/** The chart as an operator gets it: `helm package`d (beforeAll), or a release's archive. */
let PACKAGE = process.env.CAG_CHART_TGZ ?? '';

const kubectlJson = async (args: string[]) => JSON.parse(await ok('kubectl', [...args, '-o', 'json'])) as { items: K8sObject[] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(probe: () => Promise<T>, until: (v: T) => boolean, timeoutMs = 60000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (until(value) || Date.now() > deadline) return value;
    await sleep(500);
  }
}

/** A namespace whose admission enforces the PodSecurity "restricted" profile. */
async function restrictedNamespace(name: string) {
  await ok('kubectl', ['create', 'namespace', name]);
  await ok('kubectl', ['label', 'namespace', name, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/enforce-version=latest']);
}

const selector = (release: string, role?: string) => `app.kubernetes.io/instance=${release}${role ? `,app.kubernetes.io/component=${role}` : ''}`;
/** The release's Pods of one role, or of both service roles (not the upgrade Job's). */
const pods = async (ns: string, release: string, role?: string) =>
  (await kubectlJson(['-n', ns, 'get', 'pods', '-l', role ? selector(release, role) : `${selector(release)},app.kubernetes.io/component in (api,consumer)`]))
    .items;
const replicaSets = async (ns: string, release: string, role: string) =>
  (await kubectlJson(['-n', ns, 'get', 'replicasets', '-l', selector(release, role)])).items;
const failedCreates = async (ns: string, prefix: string) =>
  (await kubectlJson(['-n', ns, 'get', 'events', '--field-selector', 'reason=FailedCreate'])).items.filter((e) => e.involvedObject.name.startsWith(prefix));
const checksumOf = (o: K8sObject) => o.spec.template.metadata.annotations['checksum/config'] as string;

beforeAll(async () => {
  expect(process.env.KUBECONFIG).toBeTruthy();
  const version = JSON.parse(await ok('kubectl', ['version', '-o', 'json']));
  expect(version.serverVersion.gitVersion).toBe('v1.34.4');
  if (!PACKAGE) {
    const out = await ok('helm', ['package', CHART, '--destination', tmp]);
    PACKAGE = out.trim().split(': ').pop()!;
  }
  expect(path.basename(PACKAGE)).toMatch(/^course-access-groups-\d+\.\d+\.\d+.*\.tgz$/);
  await restrictedNamespace(NS_A);
  await restrictedNamespace(NS_B);
  await restrictedNamespace(NS_C);
});

afterAll(async () => {
  await tool('kubectl', ['delete', 'namespace', NS_A, NS_B, NS_C, '--wait=false']);
  rmSync(tmp, { recursive: true, force: true });
});

let firstChecksum = '';
let firstJob = '';
const upgradeJobs = async (ns: string, release: string) => (await kubectlJson(['-n', ns, 'get', 'jobs', '-l', selector(release, 'upgrade')])).items;

test('helm install into a namespace enforcing PodSecurity restricted: the ReplicaSets create every Pod, none refused', async () => {
  await ok('helm', ['install', 'r1', ...base, '-n', NS_A, PACKAGE]);
  const created = await waitFor(
    () => pods(NS_A, 'r1'),
    (p) => p.length === 3,
  );
  expect(created.map((p) => p.metadata.labels!['app.kubernetes.io/component']).sort()).toEqual(['api', 'api', 'consumer']);
  // The upgrade Job's Pod too, made by the Job controller and admitted under restricted.
  const upgradePods = await waitFor(
    () => pods(NS_A, 'r1', 'upgrade'),
    (p) => p.length === 1,
  );
  expect(upgradePods[0]!.spec.containers[0].command).toEqual(['node', 'dist/src/cli/main.js', 'upgrade']);
  for (const p of created) expect(p.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
  expect(await failedCreates(NS_A, 'r1-')).toEqual([]);
  const status = JSON.parse(await ok('helm', ['status', 'r1', '-n', NS_A, '-o', 'json']));
  expect(status.info.status).toBe('deployed');
  const [rs] = await replicaSets(NS_A, 'r1', 'api');
  firstChecksum = checksumOf(rs!);
  const jobs = await upgradeJobs(NS_A, 'r1');
  expect(jobs).toHaveLength(1);
  firstJob = jobs[0]!.metadata.name;
});

test('the same admission refuses a Pod that is not restricted (the check above can fail)', async () => {
  await ok('helm', ['install', 'loose', ...base, '-n', NS_A, PACKAGE, '--set', 'securityContext.allowPrivilegeEscalation=true']);
  const refused = await waitFor(
    () => failedCreates(NS_A, 'loose-'),
    (e) => e.length > 0,
  );
  expect(refused[0]!.message).toMatch(/violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
  expect(await pods(NS_A, 'loose')).toEqual([]);
  await ok('helm', ['uninstall', 'loose', '-n', NS_A]);
});

test.each(CI_FILES)('kubectl apply --dry-run=server --validate=strict accepts every object rendered with ci/%s', async (file) => {
  const { objects } = await render({ namespace: NS_B, files: [ciValues(file)] });
  // The ServiceMonitor's and HTTPRoute's CRDs are not in this cluster; step 1 checks their shape.
  const builtIn = objects.filter((o) => !CUSTOM.includes(o.kind));
  const input = builtIn.map((o) => JSON.stringify(o)).join('\n');
  const out = await ok('kubectl', ['apply', '--dry-run=server', '--validate=strict', '-n', NS_B, '-f', '-'], { input });
  expect(out.trim().split('\n')).toHaveLength(builtIn.length);
  expect(out).not.toContain('Warning');
});

test('the server-side strict validation refuses an unknown field (the check above can fail)', async () => {
  const { objects } = await render({ namespace: NS_B, files: [ciValues('default-values.yaml')] });
  const d = objects.find((o) => o.kind === 'Deployment')!;
  const res = await tool('kubectl', ['apply', '--dry-run=server', '--validate=strict', '-n', NS_B, '-f', '-'], {
    input: JSON.stringify({ ...d, spec: { ...d.spec, replica: 2 } }),
  });
  expect(res.code).not.toBe(0);
  expect(res.stderr).toContain('unknown field "spec.replica"');
});

test('helm upgrade with a changed setting: a new ReplicaSet per role, surging while the old keeps every replica (maxUnavailable 0)', async () => {
  await ok('helm', ['upgrade', 'r1', ...base, '-n', NS_A, PACKAGE, '--set', 'config.logLevel=debug']);
  const cm = JSON.parse(await ok('kubectl', ['-n', NS_A, 'get', 'configmap', 'r1-course-access-groups', '-o', 'json']));
  expect(cm.data.LOG_LEVEL).toBe('debug');
  for (const role of ['api', 'consumer']) {
    const sets = await waitFor(
      () => replicaSets(NS_A, 'r1', role),
      (s) => s.length === 2,
    );
    const desired = role === 'api' ? 2 : 1;
    const [older, newer] = [...sets].sort(
      (a, b) => Number(a.metadata.annotations!['deployment.kubernetes.io/revision']) - Number(b.metadata.annotations!['deployment.kubernetes.io/revision']),
    );
    expect(checksumOf(newer!)).not.toBe(checksumOf(older!));
    // No node makes the new Pod ready, so the rollout holds here: one surge Pod, the old ReplicaSet whole.
    expect({ role, old: older!.spec.replicas, new: newer!.spec.replicas }).toEqual({ role, old: desired, new: 1 });
  }
  // A changed setting makes a new upgrade Job (a Job's template cannot change in place); the old one goes.
  const jobs = await upgradeJobs(NS_A, 'r1');
  expect(jobs.map((j) => j.metadata.name)).toHaveLength(1);
  expect(jobs[0]!.metadata.name).not.toBe(firstJob);
});

test('helm rollback to revision 1: the Deployment template of the first install again', async () => {
  await ok('helm', ['rollback', 'r1', '1', '-n', NS_A]);
  const deployment = JSON.parse(await ok('kubectl', ['-n', NS_A, 'get', 'deployment', 'r1-course-access-groups-api', '-o', 'json']));
  expect(checksumOf(deployment)).toBe(firstChecksum);
  const cm = JSON.parse(await ok('kubectl', ['-n', NS_A, 'get', 'configmap', 'r1-course-access-groups', '-o', 'json']));
  expect(cm.data.LOG_LEVEL).toBe('info');
  const history = JSON.parse(await ok('helm', ['history', 'r1', '-n', NS_A, '-o', 'json'])) as { revision: number; status: string }[];
  expect(history.map((h) => [h.revision, h.status])).toEqual([
    [1, 'superseded'],
    [2, 'superseded'],
    [3, 'deployed'],
  ]);
  // The first ReplicaSet is taken up again (no third one), scaled back to every replica.
  const sets = await waitFor(
    () => replicaSets(NS_A, 'r1', 'api'),
    (s) => s.some((r) => checksumOf(r) === firstChecksum && r.spec.replicas === 2),
  );
  expect(sets).toHaveLength(2);
});

test('releases side by side: the same release name in a second namespace, a second release in the first', async () => {
  await ok('helm', ['install', 'r1', ...base, '-n', NS_B, PACKAGE]);
  await ok('helm', ['install', 'r2', ...base, '-n', NS_A, PACKAGE]);
  const releases = JSON.parse(await ok('helm', ['list', '--all-namespaces', '-o', 'json'])) as { name: string; namespace: string; status: string }[];
  const ours = releases.filter((r) => r.namespace === NS_A || r.namespace === NS_B).map((r) => `${r.namespace}/${r.name} ${r.status}`);
  expect(ours.sort()).toEqual([`${NS_A}/r1 deployed`, `${NS_A}/r2 deployed`, `${NS_B}/r1 deployed`].sort());
  for (const [ns, release] of [
    [NS_B, 'r1'],
    [NS_A, 'r2'],
  ] as const) {
    expect(
      (
        await waitFor(
          () => pods(ns, release),
          (p) => p.length === 3,
        )
      ).length,
    ).toBe(3);
  }
  expect((await pods(NS_A, 'r1')).length).toBeGreaterThanOrEqual(3);
});

test("an LMS-only release (the LMS's issuers and key set, no service key) installs: every Pod created, the ConfigMap carrying the LMS trust path; neither path refuses the install", async () => {
  await ok('helm', ['install', 'lms-only', '-f', ciValues('lms-only-values.yaml'), '-n', NS_B, PACKAGE]);
  const created = await waitFor(
    () => pods(NS_B, 'lms-only'),
    (p) => p.length === 3,
  );
  expect(created).toHaveLength(3);
  expect(await failedCreates(NS_B, 'lms-only-')).toEqual([]);
  const cm = JSON.parse(await ok('kubectl', ['-n', NS_B, 'get', 'configmap', 'lms-only-course-access-groups', '-o', 'json']));
  expect(JSON.parse(cm.data.LMS_JWT_ISSUERS)).toEqual([{ ISSUER: 'https://lms.example.org/oauth2', AUDIENCE: 'openedx' }]);
  expect(JSON.parse(cm.data.LMS_JWT_PUBLIC_SIGNING_JWK_SET).keys[0]).toMatchObject({ kty: 'RSA' });
  const secret = JSON.parse(await ok('kubectl', ['-n', NS_B, 'get', 'secret', 'lms-only-course-access-groups', '-o', 'json']));
  expect(Object.keys(secret.data)).toEqual(['MONGO_URL']);
  const refused = await tool('helm', ['install', 'no-trust', ...base, '-n', NS_B, PACKAGE, '--set', 'auth.jwtSecret=null']);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('no trust path');
  expect((await tool('helm', ['status', 'no-trust', '-n', NS_B])).code).not.toBe(0);
  await ok('helm', ['uninstall', 'lms-only', '-n', NS_B, '--wait']);
});

test('values the schema refuses: the install fails with the reason, and nothing is created', async () => {
  const res = await tool('helm', ['install', 'bad', ...base, '-n', NS_A, PACKAGE, '--set', 'api.replica=3']);
  expect(res.code).not.toBe(0);
  expect(res.stderr).toContain("additional properties 'replica' not allowed");
  expect((await tool('helm', ['status', 'bad', '-n', NS_A])).code).not.toBe(0);
  const left = await kubectlJson(['-n', NS_A, 'get', 'all,configmaps,secrets,serviceaccounts,poddisruptionbudgets', '-l', selector('bad')]);
  expect(left.items).toEqual([]);
});

test('helm uninstall leaves nothing of the release (Pods and ReplicaSets collected too); the other release stays', async () => {
  await ok('helm', ['uninstall', 'r1', '-n', NS_A, '--wait']);
  const kinds =
    'deployments,replicasets,pods,jobs,services,configmaps,secrets,serviceaccounts,poddisruptionbudgets,horizontalpodautoscalers,networkpolicies,ingresses';
  const left = await waitFor(
    () => kubectlJson(['-n', NS_A, 'get', kinds, '-l', selector('r1')]),
    (l) => l.items.length === 0,
  );
  expect(left.items.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([]);
  const secrets = (await kubectlJson(['-n', NS_A, 'get', 'secrets'])).items.map((s) => s.metadata.name);
  expect(secrets.filter((n) => n.startsWith('sh.helm.release.v1.r1.'))).toEqual([]);
  expect((await pods(NS_A, 'r2')).length).toBe(3);
  expect(parseObjects(await ok('kubectl', ['-n', NS_B, 'get', 'deployments', '-l', selector('r1'), '-o', 'yaml']))[0]!.items).toHaveLength(2);
});

describe('issue 36: the production objects on the server', () => {
  const release = 'prod';
  beforeAll(async () => {
    // What an operator makes beside the release: Kafka's client TLS files (a CA, a certificate and
    // its key, as cert-manager names them) and the SASL password, each in a Secret of its own.
    await ok('kubectl', [
      '-n',
      NS_C,
      'create',
      'secret',
      'generic',
      'kafka-client-tls',
      '--from-literal=ca.crt=CA',
      '--from-literal=tls.crt=CERT',
      '--from-literal=tls.key=KEY',
    ]);
    await ok('kubectl', ['-n', NS_C, 'create', 'secret', 'generic', 'kafka-api-secret', '--from-literal=api-secret=not-a-real-secret']);
    const values = path.join(tmp, 'production-values.yaml');
    writeFileSync(
      values,
      JSON.stringify({
        kafka: {
          tls: { enabled: true, caSecret: 'kafka-client-tls', certKey: 'tls.crt', keyKey: 'tls.key' },
          sasl: { mechanism: 'scram-sha-512', username: 'cag', passwordSecret: { name: 'kafka-api-secret', key: 'api-secret' } },
        },
        networkPolicy: { enabled: true, apiFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }] },
        ingress: { enabled: true, className: 'nginx', hosts: ['lms.example.org'] },
      }),
    );
    await ok('helm', ['install', release, ...base, '-f', values, '-n', NS_C, PACKAGE]);
  });

  test('NetworkPolicies, the Ingress, the upgrade Job (no hook) and the PDBs with their eviction policy, as the server keeps them', async () => {
    const policies = (await kubectlJson(['-n', NS_C, 'get', 'networkpolicies', '-l', selector(release)])).items;
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['prod-course-access-groups-api', 'prod-course-access-groups-consumer']);
    const [ingress] = (await kubectlJson(['-n', NS_C, 'get', 'ingresses', '-l', selector(release)])).items;
    expect(ingress!.spec.rules[0].http.paths[0]).toMatchObject({ path: '/course_access_groups/', pathType: 'Prefix' });
    const [job] = await upgradeJobs(NS_C, release);
    expect(job!.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
    const pdbs = (await kubectlJson(['-n', NS_C, 'get', 'poddisruptionbudgets', '-l', selector(release)])).items;
    expect(pdbs.map((p) => p.spec.unhealthyPodEvictionPolicy)).toEqual(['AlwaysAllow', 'AlwaysAllow']);
  });

  test("the Kafka security values reach every Pod the controllers create: settings in the environment, files from the Secrets' keys", async () => {
    const created = await waitFor(
      async () => [...(await pods(NS_C, release)), ...(await pods(NS_C, release, 'upgrade'))],
      (p) => p.length === 4,
    );
    expect(created.map((p) => p.metadata.labels!['app.kubernetes.io/component']).sort()).toEqual(['api', 'api', 'consumer', 'upgrade']);
    const secretKeys = async (name: string) => Object.keys(JSON.parse(await ok('kubectl', ['-n', NS_C, 'get', 'secret', name, '-o', 'json'])).data);
    for (const pod of created) {
      const [c] = pod.spec.containers;
      // The container's environment as the kubelet would build it: the ConfigMaps of envFrom, then env.
      const env: Record<string, string> = {};
      for (const from of c.envFrom ?? [])
        if (from.configMapRef) Object.assign(env, JSON.parse(await ok('kubectl', ['-n', NS_C, 'get', 'configmap', from.configMapRef.name, '-o', 'json'])).data);
      for (const e of c.env ?? []) if ('value' in e) env[e.name] = e.value;
      expect(env).toMatchObject({ KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'cag' });
      // Each file setting names a key of a Secret mounted at its folder.
      const files = ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SASL_PASSWORD_FILE'].map((name) => [name, env[name]!]);
      const resolved: Record<string, string> = {};
      for (const [name, file] of files) {
        const mount = c.volumeMounts.find((m: { mountPath: string }) => path.dirname(file!) === m.mountPath);
        const volume = pod.spec.volumes.find((v: { name: string }) => v.name === mount?.name);
        expect({ name, readOnly: mount?.readOnly }).toEqual({ name, readOnly: true });
        const keys = volume.secret.items ? volume.secret.items.map((i: { path: string }) => i.path) : await secretKeys(volume.secret.secretName);
        expect(keys).toContain(path.basename(file!));
        resolved[name!] = `${volume.secret.secretName}/${path.basename(file!)}`;
      }
      expect(resolved).toEqual({
        KAFKA_SSL_CA_FILE: 'kafka-client-tls/ca.crt',
        KAFKA_SSL_CERT_FILE: 'kafka-client-tls/tls.crt',
        KAFKA_SSL_KEY_FILE: 'kafka-client-tls/tls.key',
        KAFKA_SASL_PASSWORD_FILE: 'kafka-api-secret/api-secret',
      });
      // The password itself is nowhere in the Pod or its ConfigMap.
      expect(JSON.stringify(pod) + JSON.stringify(env)).not.toContain('not-a-real-secret');
    }
  });
});
