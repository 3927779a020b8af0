// Issue 26 on the control plane of issue 28 (scripts/k8s/test.sh, step 2): the Tutor plugin's own
// Kubernetes objects (its Secret, Deployments and Services), rendered by the real tutor in a
// temporary TUTOR_ROOT (scripts/k8s/tutor-render.sh), applied to a real kube-apiserver in a
// namespace that enforces PodSecurity "restricted": strict server-side validation first, then a
// real apply whose ReplicaSets must create every Pod (no node runs them; see control-plane.test.ts).
// That the same admission refuses a Pod that is not restricted is shown there, with the chart.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type K8sObject, ok, parseObjects, tool } from './tools';

const suffix = randomBytes(3).toString('hex');
const NS = `cag-tutor-${suffix}`;
const NS_BASELINE = `cag-tutor-baseline-${suffix}`;
let tutorRoot = '';
/** The plugin's own objects; `everyDeployment` is Tutor's deployments.yml whole (Tutor core's and the plugin's). */
const objects: K8sObject[] = [];
let everyDeployment = '';

const kubectlJson = async (args: string[]) => JSON.parse(await ok('kubectl', [...args, '-o', 'json'])) as { items: K8sObject[] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  tutorRoot = await mkdtemp(path.join(os.tmpdir(), 'cag-tutor-'));
  await promisify(execFile)('bash', [path.resolve(__dirname, '../../scripts/k8s/tutor-render.sh'), tutorRoot]);
  for (const manifest of ['deployments.yml', 'services.yml', 'volumes.yml']) {
    const text = await readFile(path.join(tutorRoot, 'env/k8s', manifest), 'utf8');
    if (manifest === 'deployments.yml') everyDeployment = text;
    objects.push(...parseObjects(text).filter((o) => o.metadata.name.startsWith('course-access-groups')));
  }
  // Both warn and enforce: a Deployment's template is only warned about, its Pods are refused.
  await ok('kubectl', ['create', 'namespace', NS]);
  await ok('kubectl', ['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted']);
  await ok('kubectl', ['create', 'namespace', NS_BASELINE]);
  await ok('kubectl', ['label', 'namespace', NS_BASELINE, 'pod-security.kubernetes.io/warn=baseline']);
}, 120000);

afterAll(async () => {
  await tool('kubectl', ['delete', 'namespace', NS, NS_BASELINE, '--wait=false']);
  if (tutorRoot) await rm(tutorRoot, { recursive: true, force: true });
});

const input = () => objects.map((o) => JSON.stringify(o)).join('\n');
const deployments = () => objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name);

test("the plugin renders its Secret, both roles and its own Kafka (with its volume's claim) and registry", () => {
  expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
    [
      'Secret/course-access-groups',
      'PersistentVolumeClaim/course-access-groups-kafka',
      ...['api', 'consumer', 'kafka', 'registry'].map((n) => `Deployment/course-access-groups-${n}`),
      ...['api', 'kafka', 'registry'].map((n) => `Service/course-access-groups-${n}`),
    ].sort(),
  );
});

test('kubectl apply --dry-run=server --validate=strict accepts every object, with no PodSecurity warning', async () => {
  const res = await tool('kubectl', ['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], { input: input() });
  expect(res).toMatchObject({ code: 0, stderr: '' });
  expect(res.stdout.trim().split('\n')).toHaveLength(objects.length);
});

test('a real apply: every Deployment gets its Pod in the restricted namespace, none refused (FailedCreate)', async () => {
  await ok('kubectl', ['apply', '--validate=strict', '-n', NS, '-f', '-'], { input: input() });
  const names = deployments();
  const owners = async () => (await kubectlJson(['-n', NS, 'get', 'pods'])).items.map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, ''));
  const deadline = Date.now() + 60000;
  let created = await owners();
  while (!names.every((n) => created.includes(n)) && Date.now() < deadline) {
    await sleep(500);
    created = await owners();
  }
  expect([...new Set(created)].sort()).toEqual(names.sort());
  const refused = (await kubectlJson(['-n', NS, 'get', 'events', '--field-selector', 'reason=FailedCreate'])).items;
  expect(refused.map((e) => e.message)).toEqual([]);
});

test("Tutor core's own Deployments break restricted (the check above can fail) and meet baseline, as the plugin's do", async () => {
  const dryRun = (ns: string) => tool('kubectl', ['apply', '--dry-run=server', '-n', ns, '-f', '-'], { input: everyDeployment });
  const restricted = await dryRun(NS);
  expect(restricted.code).toBe(0);
  const refused = [...restricted.stderr.matchAll(/restricted:latest": .*?container "([^"]+)"/g)].map((m) => m[1]);
  expect(refused).toContain('lms');
  expect(refused.filter((c) => ['course-access-groups', 'kafka', 'registry'].includes(c!))).toEqual([]);
  expect(await dryRun(NS_BASELINE)).toMatchObject({ code: 0, stderr: '' });
});
