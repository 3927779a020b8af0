// Issue 28, step 2: the chart on a real Kubernetes control plane (etcd, kube-apiserver and
// kube-controller-manager v1.34 built from the Go module proxy, on 127.0.0.1; scripts/k8s/test.sh
// starts it and sets KUBECONFIG). No node: Pods are created and admitted but never scheduled,
// so what is proved is what the API server and the controllers decide: PodSecurity admission,
// strict server-side validation, Deployment -> ReplicaSet -> Pod, rollout arithmetic, helm's
// release lifecycle, garbage collection after an uninstall.
import { randomBytes } from 'node:crypto';
import { CHART, CI_FILES, ciValues, type K8sObject, ok, parseObjects, render, tool } from './tools';

const suffix = randomBytes(3).toString('hex');
const NS_A = `cag-a-${suffix}`;
const NS_B = `cag-b-${suffix}`;
const base = ['-f', ciValues('default-values.yaml')];

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
const pods = async (ns: string, release: string, role?: string) => (await kubectlJson(['-n', ns, 'get', 'pods', '-l', selector(release, role)])).items;
const replicaSets = async (ns: string, release: string, role: string) =>
  (await kubectlJson(['-n', ns, 'get', 'replicasets', '-l', selector(release, role)])).items;
const failedCreates = async (ns: string, prefix: string) =>
  (await kubectlJson(['-n', ns, 'get', 'events', '--field-selector', 'reason=FailedCreate'])).items.filter((e) => e.involvedObject.name.startsWith(prefix));
const checksumOf = (o: K8sObject) => o.spec.template.metadata.annotations['checksum/config'] as string;

beforeAll(async () => {
  expect(process.env.KUBECONFIG).toBeTruthy();
  const version = JSON.parse(await ok('kubectl', ['version', '-o', 'json']));
  expect(version.serverVersion.gitVersion).toBe('v1.34.4');
  await restrictedNamespace(NS_A);
  await restrictedNamespace(NS_B);
});

afterAll(async () => {
  await tool('kubectl', ['delete', 'namespace', NS_A, NS_B, '--wait=false']);
});

let firstChecksum = '';

test('helm install into a namespace enforcing PodSecurity restricted: the ReplicaSets create every Pod, none refused', async () => {
  await ok('helm', ['install', 'r1', ...base, '-n', NS_A, CHART]);
  const created = await waitFor(
    () => pods(NS_A, 'r1'),
    (p) => p.length === 3,
  );
  expect(created.map((p) => p.metadata.labels!['app.kubernetes.io/component']).sort()).toEqual(['api', 'api', 'consumer']);
  for (const p of created) expect(p.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
  expect(await failedCreates(NS_A, 'r1-')).toEqual([]);
  const status = JSON.parse(await ok('helm', ['status', 'r1', '-n', NS_A, '-o', 'json']));
  expect(status.info.status).toBe('deployed');
  const [rs] = await replicaSets(NS_A, 'r1', 'api');
  firstChecksum = checksumOf(rs!);
});

test('the same admission refuses a Pod that is not restricted (the check above can fail)', async () => {
  await ok('helm', ['install', 'loose', ...base, '-n', NS_A, CHART, '--set', 'securityContext.allowPrivilegeEscalation=true']);
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
  // The ServiceMonitor's CRD (prometheus-operator) is not in this cluster; step 1 checks its shape.
  const builtIn = objects.filter((o) => o.kind !== 'ServiceMonitor');
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
  await ok('helm', ['upgrade', 'r1', ...base, '-n', NS_A, CHART, '--set', 'config.logLevel=debug']);
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
  await ok('helm', ['install', 'r1', ...base, '-n', NS_B, CHART]);
  await ok('helm', ['install', 'r2', ...base, '-n', NS_A, CHART]);
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

test('values the schema refuses: the install fails with the reason, and nothing is created', async () => {
  const res = await tool('helm', ['install', 'bad', ...base, '-n', NS_A, CHART, '--set', 'api.replica=3']);
  expect(res.code).not.toBe(0);
  expect(res.stderr).toContain("additional properties 'replica' not allowed");
  expect((await tool('helm', ['status', 'bad', '-n', NS_A])).code).not.toBe(0);
  const left = await kubectlJson(['-n', NS_A, 'get', 'all,configmaps,secrets,serviceaccounts,poddisruptionbudgets', '-l', selector('bad')]);
  expect(left.items).toEqual([]);
});

test('helm uninstall leaves nothing of the release (Pods and ReplicaSets collected too); the other release stays', async () => {
  await ok('helm', ['uninstall', 'r1', '-n', NS_A, '--wait']);
  const kinds = 'deployments,replicasets,pods,services,configmaps,secrets,serviceaccounts,poddisruptionbudgets,horizontalpodautoscalers';
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
