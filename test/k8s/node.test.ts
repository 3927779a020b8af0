// Issue 36, step 3: the chart on a real node (scripts/k8s/node.sh: Debian's containerd and crun,
// kubelet and kube-scheduler v1.34.4, pods on the host network), what only a node proves: pods
// Ready in the EndpointSlice, `helm test`, the uid and memory limit on the node, the preStop pause
// and exit 0 in a rollout, the upgrade Job run to completion, an eviction refused and allowed by
// the PDB. The pods use the local stack's MongoDB and Kafka (MONGO_URL, KAFKA_BROKERS on
// 127.0.0.1: host networking) and three ports of K8S_NODE_APP_PORTS.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { CHART, type K8sObject, ok, tool } from './tools';

const NODE_IP = readFileSync(path.join(process.env.K8S_DIR ?? '', 'node/ip'), 'utf8').trim();
const [API_PORT, CONSUMER_PORT, NEXT_API_PORT] = (process.env.K8S_NODE_APP_PORTS || '18301,18302,18303').split(',').map(Number) as [number, number, number];
const MONGO_URL = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
const KAFKA_BROKERS = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const suffix = randomBytes(3).toString('hex');
const NS = `cag-node-${suffix}`;
const DB = `cag_node_${suffix}`;
const RELEASE = 'cag';
const tmp = mkdtempSync(path.join(tmpdir(), 'cag-node-'));
const values = path.join(tmp, 'node-values.yaml');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kubectlJson = async (args: string[]) => JSON.parse(await ok('kubectl', [...args, '-o', 'json']));
const podsOf = async (role: string) =>
  (await kubectlJson(['-n', NS, 'get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${role}`])).items as K8sObject[];
/** `helm upgrade` of the release with the test's values, `--set` for each of `sets`, then `flags`. */
const upgrade = (sets: string[], flags: string[] = []) =>
  ok('helm', ['upgrade', RELEASE, CHART, '-n', NS, '-f', values, ...sets.flatMap((set) => ['--set', set]), ...flags]);
const ready = (p: K8sObject) => p.status.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

async function waitFor<T>(probe: () => Promise<T>, until: (v: T) => boolean, timeoutMs = 180000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (until(value) || Date.now() > deadline) return value;
    await sleep(1000);
  }
}

beforeAll(async () => {
  expect(NODE_IP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  const version = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')).version;
  writeFileSync(
    values,
    JSON.stringify({
      // The image scripts/k8s/node.sh imported into the node's containerd (no registry here).
      image: { repository: 'docker.io/library/course-access-groups', tag: version, pullPolicy: 'Never' },
      config: { kafkaBrokers: KAFKA_BROKERS, mongoDb: DB },
      secrets: { mongoUrl: MONGO_URL },
      auth: { jwtSecret: 'node-test-secret-that-is-long-enough' },
      hostNetwork: true,
      api: { replicas: 1, containerPort: API_PORT },
      consumer: { containerPort: CONSUMER_PORT },
      tests: { apiUrl: `http://${NODE_IP}:${API_PORT}` },
      // A start takes Node.js more than the chart's 20 s on two cores shared with other test
      // suites (load average 40): restarted by its startup probe, it never came up here.
      probes: { startup: { periodSeconds: 1, timeoutSeconds: 3, failureThreshold: 180 } },
    }),
  );
  // Host networking is what baseline and restricted refuse: a namespace that allows it.
  await ok('kubectl', ['create', 'namespace', NS]);
  await ok('kubectl', ['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=privileged']);
  // --wait: every Deployment's pods Ready and the Job complete, or the install fails.
  await ok('helm', ['install', RELEASE, CHART, '-n', NS, '-f', values, '--wait', '--wait-for-jobs', '--timeout', '300s']);
}, 360000);

afterAll(async () => {
  await tool('helm', ['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '120s']);
  await tool('kubectl', ['delete', 'namespace', NS, '--wait=false']);
  const client = new MongoClient(MONGO_URL);
  await client
    .db(DB)
    .dropDatabase()
    .catch(() => undefined);
  await client.close();
  rmSync(tmp, { recursive: true, force: true });
}, 180000);

test("every pod runs on the node and is Ready; each role's EndpointSlice lists it ready at the node's address and the role's port", async () => {
  for (const [role, port] of [
    ['api', API_PORT],
    ['consumer', CONSUMER_PORT],
  ] as const) {
    const [pod] = await podsOf(role);
    expect({ role, ready: ready(pod!), ip: pod!.status.podIP, node: pod!.spec.nodeName }).toEqual({ role, ready: true, ip: NODE_IP, node: NODE_IP });
    const slices = (await kubectlJson(['-n', NS, 'get', 'endpointslices', '-l', `app.kubernetes.io/instance=${RELEASE}`])).items as K8sObject[];
    const slice = slices.find((s) => s.metadata.labels!['kubernetes.io/service-name']!.endsWith(role === 'api' ? '-api' : '-consumer-metrics'));
    expect(slice!.ports.map((p: { port: number }) => p.port)).toEqual([port]);
    expect(slice!.endpoints).toEqual([expect.objectContaining({ addresses: [NODE_IP], conditions: expect.objectContaining({ ready: true }) })]);
  }
});

test('the upgrade Job ran `cag upgrade` to completion: exit 0, and its log says the stored data is current', async () => {
  const [job] = (await kubectlJson(['-n', NS, 'get', 'jobs', '-l', `app.kubernetes.io/instance=${RELEASE}`])).items as K8sObject[];
  expect(job!.status.succeeded).toBe(1);
  const [pod] = await podsOf('upgrade');
  expect(pod!.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
  const log = await ok('kubectl', ['-n', NS, 'logs', pod!.metadata.name]);
  expect(log).toMatch(/stored data (upgraded; it is current|is current; nothing to upgrade)/);
});

test('helm test: the test Pod asks the running API for an access decision, signed and unsigned, and passes', async () => {
  const out = await ok('helm', ['test', RELEASE, '-n', NS, '--timeout', '120s']);
  expect(out).toMatch(/TEST SUITE:\s+cag-course-access-groups-test-access[\s\S]*Phase:\s+Succeeded/);
});

test("on the node: the service's process runs as uid 1000, in a memory cgroup limited to the chart's 512Mi", async () => {
  const [pod] = await podsOf('api');
  const id = (pod!.status.containerStatuses[0].containerID as string).replace('containerd://', '');
  // The container's cgroup, under the kubelet's cgroup root (cgroup v1).
  const find = (dir: string, depth: number): string | undefined => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name === id) return path.join(dir, e.name);
      const found = depth > 0 ? find(path.join(dir, e.name), depth - 1) : undefined;
      if (found) return found;
    }
    return undefined;
  };
  const cgroup = find('/sys/fs/cgroup/memory', 5);
  expect(cgroup).toBeDefined();
  expect(readFileSync(path.join(cgroup!, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(String(512 * 1024 * 1024));
  const pids = readFileSync(path.join(cgroup!, 'cgroup.procs'), 'utf8').trim().split('\n');
  expect(pids.length).toBeGreaterThan(0);
  for (const pid of pids) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)![1]).toBe('1000');
  }
  expect(readFileSync(`/proc/${pids[0]}/cmdline`, 'utf8').split('\0')).toEqual(['node', 'dist/src/main.js', '']);
});

test('a rollout: the new pod turns Ready first, then the old one gets its preStop pause (10 s) and exits 0 on SIGTERM', async () => {
  const [old] = await podsOf('api');
  // Every state the old pod goes through until it is gone, as the API server reports them.
  const watch = spawn(path.join(process.env.K8S_TOOLS!, 'kubectl'), ['-n', NS, 'get', 'pod', old!.metadata.name, '--watch', '-o', 'json'], {
    env: process.env,
  });
  let seen = '';
  watch.stdout.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  try {
    await upgrade([`api.containerPort=${NEXT_API_PORT}`, `tests.apiUrl=http://${NODE_IP}:${NEXT_API_PORT}`], ['--wait', '--timeout', '300s']);
    const states = () => {
      const out: K8sObject[] = [];
      let rest = seen.trim();
      while (rest) {
        // kubectl prints one JSON object per change, back to back.
        let depth = 0;
        let end = 0;
        for (let i = 0; i < rest.length; i++) {
          if (rest[i] === '{') depth++;
          else if (rest[i] === '}' && --depth === 0) {
            end = i + 1;
            break;
          }
        }
        if (end === 0) break;
        out.push(JSON.parse(rest.slice(0, end)));
        rest = rest.slice(end).trim();
      }
      return out;
    };
    const terminated = (await waitFor(
      async () => states().find((s) => s.status.containerStatuses?.[0]?.state?.terminated),
      (s) => s !== undefined,
      120000,
    ))!;
    const state = terminated.status.containerStatuses[0].state.terminated;
    expect(state).toMatchObject({ exitCode: 0, reason: 'Completed' });
    // Deletion began at deletionTimestamp minus the grace period; the preStop pause came first.
    const deletedAt = Date.parse(terminated.metadata.deletionTimestamp!) - terminated.spec.terminationGracePeriodSeconds * 1000;
    expect(Date.parse(state.finishedAt) - deletedAt).toBeGreaterThanOrEqual(10000);
    // The new pod (the old one may still be listed, terminated, until the kubelet removes it).
    const current = (await podsOf('api')).filter((p) => p.metadata.name !== old!.metadata.name);
    expect(current).toHaveLength(1);
    expect(ready(current[0]!)).toBe(true);
  } finally {
    watch.kill();
  }
}, 400000);

test("an eviction against the PDB: refused while it would break the budget, allowed within it (the drain's path)", async () => {
  const evict = async (name: string) =>
    tool('kubectl', ['create', '--raw', `/api/v1/namespaces/${NS}/pods/${name}/eviction`, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: NS } }),
    });
  const [consumer] = await podsOf('consumer');
  await upgrade([`api.containerPort=${NEXT_API_PORT}`, 'consumer.pdb.maxUnavailable=0']);
  const pdb = `${RELEASE}-course-access-groups-consumer`;
  await waitFor(
    () => kubectlJson(['-n', NS, 'get', 'pdb', pdb]),
    (p) =>
      p.spec.maxUnavailable === 0 &&
      p.status.observedGeneration === p.metadata.generation &&
      p.status.disruptionsAllowed === 0 &&
      p.status.currentHealthy === 1,
  );
  const refused = await evict(consumer!.metadata.name);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain("Cannot evict pod as it would violate the pod's disruption budget");
  await upgrade([`api.containerPort=${NEXT_API_PORT}`]);
  await waitFor(
    () => kubectlJson(['-n', NS, 'get', 'pdb', pdb]),
    (p) => p.spec.maxUnavailable === 1 && p.status.disruptionsAllowed === 1,
  );
  const allowed = await evict(consumer!.metadata.name);
  expect(allowed).toMatchObject({ code: 0 });
  // Evicted: the pod is being deleted (its preStop pause, then SIGTERM), the ReplicaSet replaces it.
  const evicted = await kubectlJson(['-n', NS, 'get', 'pod', consumer!.metadata.name]).catch(() => null);
  expect(evicted === null || evicted.metadata.deletionTimestamp !== undefined).toBe(true);
}, 400000);
