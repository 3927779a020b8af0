// SPEC §6 "Deployment: one container image (non-root, health check, read-only root filesystem
// possible) runs every role; built and run in the project's own tests." The image that
// scripts/container/test.sh built from the Dockerfile, run as an operator runs it: host
// networking, a read-only root with a tmpfs at /tmp, one container per role against the local
// stack, probes, a token, an event, a stop. The containers are run, waited for, logged and stopped
// through testcontainers (GenericContainer); `docker` itself inspects. Run by `npm run test:container` only.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { closeProducer, cloudEvent, produce, structured, TYPES, waitFor } from '../helpers/events';
import { client } from '../helpers/http';
import { KAFKA_BROKERS, MONGO_URL, TEST_JWT_SECRET, uniqueName } from '../helpers/stack';
import { serviceToken, siteAdminToken } from '../helpers/tokens';

const ROOT = path.resolve(__dirname, '../..');
const DOCKER = process.env.CAG_DOCKER ?? 'docker';
const IMAGE = process.env.CAG_IMAGE ?? '';
const MB = 1e6;
const run = promisify(execFile);

async function docker(...args: string[]): Promise<string> {
  return (await run(DOCKER, args, { maxBuffer: 64 * MB })).stdout.trim();
}

/** A port nothing listens on now (the containers share the host's network). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Figures for the report (the size, the resident memory), on stderr beside jest's lines. */
const report = (line: string) => process.stderr.write(`[container] ${line}\n`);

const org = uniqueName('org');
const deployment = {
  MONGO_URL,
  MONGO_DB: uniqueName('image'),
  KAFKA_BROKERS,
  KAFKA_GROUP_ID: uniqueName('g'),
  KAFKA_TOPICS: uniqueName('catalog'),
  JWT_SECRET: TEST_JWT_SECRET,
  CHANGES_TOPIC: '',
};
const containers: Record<'api' | 'consumer', { name: string; port: number }> = {
  api: { name: uniqueName('cag-api'), port: 0 },
  consumer: { name: uniqueName('cag-consumer'), port: 0 },
};

/**
 * testcontainers' GenericContainer with `--read-only`, which it has no builder method for; its
 * HostConfig is what its own modules extend.
 */
class ServiceContainer extends GenericContainer {
  withReadOnlyRootFilesystem(): this {
    this.hostConfig.ReadonlyRootfs = true;
    return this;
  }
}
const started: Partial<Record<'api' | 'consumer', StartedTestContainer>> = {};
/** Each container's output, as testcontainers streams it (kept after the container stops). */
const logs: Record<'api' | 'consumer', string[]> = { api: [], consumer: [] };

/**
 * Runs a role as an operator would (host network, read-only root, a tmpfs for what must be
 * written), through testcontainers: started once Docker's own health check (the image's
 * HEALTHCHECK on /healthz) says healthy. Ryuk, its reaper, is off (TESTCONTAINERS_RYUK_DISABLED:
 * its image cannot be pulled here); the test stops and removes its containers itself.
 */
async function start(role: 'api' | 'consumer'): Promise<void> {
  const c = containers[role];
  c.port = await freePort();
  const env = { ...deployment, SERVICE_ROLE: role, PORT: String(c.port) };
  started[role] = await new ServiceContainer(IMAGE)
    .withName(c.name)
    .withLabels({ 'course-access-groups.test': '1' })
    .withNetworkMode('host')
    .withReadOnlyRootFilesystem()
    .withTmpFs({ '/tmp': 'rw,size=16m' })
    .withEnvironment(env)
    .withLogConsumer((stream) => stream.on('data', (line) => logs[role].push(String(line))))
    // Wait.forHttp needs a mapped port, which host networking has none of.
    .withWaitStrategy(Wait.forHealthCheck())
    .withStartupTimeout(60000)
    .start();
}

const url = (role: 'api' | 'consumer') => `http://127.0.0.1:${containers[role].port}`;
const inspect = async (name: string, format: string) => docker('inspect', '--format', format, name);

async function waitReady(role: 'api' | 'consumer') {
  await waitFor(
    () =>
      fetch(`${url(role)}/readyz`).then(
        (r) => r.status,
        () => 0,
      ),
    (status) => status === 200,
    60000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${role} container logs:\n${logs[role].join('').split('\n').slice(-30).join('\n')}`);
  });
}

/** What the image holds, read by its own node (nothing else is assumed inside). */
async function listImage(): Promise<{ app: string[]; modules: string[]; tests: string[]; git: boolean }> {
  const script = `
    const fs = require('fs'), path = require('path');
    const modules = [];
    for (const name of fs.readdirSync('node_modules')) {
      if (name === '.bin' || name === '.package-lock.json') continue;
      if (name.startsWith('@')) for (const inner of fs.readdirSync(path.join('node_modules', name))) modules.push(name + '/' + inner);
      else modules.push(name);
    }
    const tests = [];
    const walk = (dir) => { for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { if (['test', 'tests', '__tests__'].includes(e.name)) tests.push(p); else walk(p); }
      else if (/\\.(test|spec)\\.[jt]s$/.test(e.name) || /\\.ts$/.test(e.name) && !/\\.d\\.ts$/.test(e.name)) tests.push(p);
    } };
    walk('dist');
    process.stdout.write(JSON.stringify({ app: fs.readdirSync('.'), modules, tests, git: fs.existsSync('.git') || fs.existsSync('/.git') }));
  `;
  return JSON.parse(await docker('run', '--rm', '--network', 'none', '--entrypoint', 'node', IMAGE, '-e', script));
}

/** The production packages package-lock.json names at the top of node_modules. */
function productionPackages(): { required: Set<string>; allowed: Set<string> } {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
  };
  const required = new Set<string>();
  const allowed = new Set<string>();
  for (const [key, entry] of Object.entries(lock.packages)) {
    const name = key.replace(/^node_modules\//, '');
    if (!key.startsWith('node_modules/') || name.includes('node_modules/') || entry.dev) continue;
    allowed.add(name);
    // Optional packages (another platform's binary) may be left out.
    if (!entry.optional && !entry.devOptional) required.add(name);
  }
  return { required, allowed };
}

beforeAll(async () => {
  if (!IMAGE) throw new Error('CAG_IMAGE is not set: run these checks with `npm run test:container`');
  expect(process.env.TESTCONTAINERS_RYUK_DISABLED).toBe('true');
  await Promise.all([start('api'), start('consumer')]);
}, 90000);

afterAll(async () => {
  await closeProducer();
  // Stopped (and kept, for their exit codes) by the last tests; removed here whatever happened.
  await docker('rm', '--force', containers.api.name, containers.consumer.name).catch(() => undefined);
});

test('the image: a non-root user, a health check on /healthz, under 250 MB', async () => {
  const image = JSON.parse(await docker('image', 'inspect', IMAGE))[0];
  expect(image.Config.User).toBe('node');
  expect(image.Config.Healthcheck.Test.join(' ')).toMatch(/\/healthz/);
  const base = JSON.parse(await docker('image', 'inspect', process.env.CAG_BASE_IMAGE ?? IMAGE))[0];
  report(`image ${IMAGE}: ${(image.Size / MB).toFixed(0)} MB (its Node.js base ${(base.Size / MB).toFixed(0)} MB)`);
  expect(image.Size).toBeLessThan(250 * MB);
});

test('the image holds the compiled service and the production dependencies only: no dev dependency, no test, no source, no .git', async () => {
  const { app, modules, tests, git } = await listImage();
  expect(app.sort()).toEqual(['dist', 'node_modules', 'package-lock.json', 'package.json']);
  const { required, allowed } = productionPackages();
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const devOnly = modules.filter((m) => !allowed.has(m));
  expect(devOnly).toEqual([]);
  expect([...required].filter((m) => !modules.includes(m))).toEqual([]);
  for (const name of Object.keys(pkg.dependencies)) expect(modules).toContain(name);
  for (const name of Object.keys(pkg.devDependencies)) if (!allowed.has(name)) expect(modules).not.toContain(name);
  expect(tests).toEqual([]);
  expect(git).toBe(false);
  const sizes = await docker(
    'run',
    '--rm',
    '--network',
    'none',
    '--entrypoint',
    'du',
    IMAGE,
    '-sm',
    '/app/node_modules',
    '/app/dist',
    '/usr/lib/node_modules/npm',
  );
  report(`${modules.length} packages in node_modules; MB: ${sizes.replace(/\s+/g, ' ')}`);
});

test('each container runs as uid 1000 on a read-only root file system and answers /healthz and /readyz', async () => {
  for (const role of ['api', 'consumer'] as const) {
    const { name } = containers[role];
    expect(await inspect(name, '{{.HostConfig.ReadonlyRootfs}}')).toBe('true');
    expect(await docker('exec', name, 'node', '-e', 'process.stdout.write(String(process.getuid()))')).toBe('1000');
    // Nothing else may be written: the root file system refuses it.
    await expect(docker('exec', name, 'node', '-e', "require('fs').writeFileSync('/app/x', 'x')")).rejects.toThrow(/EROFS|read-only/);
    await waitReady(role);
    expect((await client(url(role)).get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await client(url(role)).get('/readyz')).body).toEqual({ status: 'ready' });
  }
}, 90000);

test('the API container answers a token-bearing admin call and an access decision; the consumer container applies an event', async () => {
  const admin = client(url('api'), await siteAdminToken(org));
  expect((await admin.post('course-access-groups/', { name: 'In a container', description: '' })).status).toBe(201);
  expect((await admin.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true })).status).toBe(200);

  const course = `course-v1:${org}+C1+2026`;
  await produce(deployment.KAFKA_TOPICS, [
    structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: course, name: 'Shipped' }, organization: org }), course),
  ]);
  const listed = await waitFor(
    () => admin.get('courses/'),
    // The page, not the count: the two are separate reads, and the count can see the course first.
    (r) => r.body.results?.length === 1,
    30000,
  );
  expect(listed.body.results[0]).toMatchObject({ id: course, name: 'Shipped' });

  const lms = client(url('api'), await serviceToken());
  const decision = await lms.get(`access/?course_id=${encodeURIComponent(course)}&action=course.enroll`);
  expect(decision.body).toEqual({ allowed: false, reason: 'no_access' });
  // Only the consumer consumed: the API container has no consumer.
  // The event is counted once its handler has made all of its writes, a moment after the course
  // is listed: on a busy machine the first read of /metrics can come before it.
  const applied = /^events_handled_total\{type="org\.openedx\.content_authoring\.course\.catalog_info\.changed\.v1",outcome="applied"\} 1$/m;
  const metrics = () => client(url('consumer')).get('/metrics');
  const consumed = await waitFor(metrics, (r) => applied.test(r.body), 10000).catch(metrics);
  expect(consumed.body).toMatch(applied);
  expect((await client(url('api')).get('/metrics')).body).not.toMatch(/^events_handled_total\{/m);
}, 60000);

test("Docker's own health check reports each container healthy", async () => {
  for (const [role, { name }] of Object.entries(containers)) {
    await waitFor(
      () => inspect(name, '{{.State.Health.Status}}'),
      (status) => status === 'healthy',
      60000,
    );
    const probes = JSON.parse(await inspect(name, '{{json .State.Health.Log}}')) as { Start: string; End: string; ExitCode: number }[];
    const took = probes.map((p) => `${p.ExitCode}/${Date.parse(p.End) - Date.parse(p.Start)} ms`);
    report(`${role} container: healthy after ${probes.length} probe(s) (exit code/duration: ${took.join(', ')})`);
  }
  for (const role of ['api', 'consumer'] as const) {
    const metrics = (await client(url(role)).get('/metrics')).body as string;
    const rss = Number(/^process_resident_memory_bytes (\d+)/m.exec(metrics)?.[1]);
    expect(rss).toBeGreaterThan(0);
    report(`${role} container, idle: RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  }
}, 90000);

test('stopping (SIGTERM, through testcontainers) ends each container with exit code 0 within 10 s', async () => {
  for (const role of ['api', 'consumer'] as const) {
    const { name } = containers[role];
    const at = Date.now();
    await started[role]!.stop({ timeout: 10000, remove: false });
    const took = Date.now() - at;
    expect(await inspect(name, '{{.State.ExitCode}}')).toBe('0');
    expect(took).toBeLessThan(10000);
    expect(logs[role].join('')).toMatch(/"msg":"stopped"/);
    report(`${name}: stop took ${took} ms, exit code 0`);
  }
}, 60000);

test('a bad setting stops the container with exit code 2 and one line naming it', async () => {
  const res = await run(DOCKER, [
    'run',
    '--rm',
    '--network',
    'none',
    '--read-only',
    '--env',
    `JWT_SECRET=${TEST_JWT_SECRET}`,
    '--env',
    'MONGO_URL=mongodb://',
    IMAGE,
  ]).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => err,
  );
  expect(res.code).toBe(2);
  expect(res.stderr).toMatch(/^Invalid configuration: MONGO_URL: [^\n]+\n$/);
});

// Issue 46, item 7: `docker run IMAGE --help` failed with "executable file not found" (no entrypoint).
// The entrypoint hands options to cag, `cag` is on the PATH, and no arguments still run CMD (the
// service: every test above runs the image without a command).
test('docker run IMAGE --help and IMAGE cag --help print cag usage; CMD is still the service', async () => {
  const help = await docker('run', '--rm', '--network', 'none', '--read-only', IMAGE, '--help');
  expect(help).toMatch(/^usage:\n {2}cag import /);
  expect(await docker('run', '--rm', '--network', 'none', '--read-only', IMAGE, 'cag', '--help')).toBe(help);
  const { Config } = JSON.parse(await docker('image', 'inspect', IMAGE))[0];
  expect(Config.Entrypoint).toEqual(['cag-entrypoint']);
  expect(Config.Cmd).toEqual(['node', 'dist/src/main.js']);
});

test("docker-compose.yml is valid for Debian's docker-compose (config -q)", async () => {
  await run('docker-compose', ['--file', path.join(ROOT, 'docker-compose.yml'), 'config', '--quiet'], {
    env: { ...process.env, JWT_SECRET: TEST_JWT_SECRET },
  });
  // And it refuses to run without a key, naming it.
  const { PATH } = process.env;
  await expect(run('docker-compose', ['--file', path.join(ROOT, 'docker-compose.yml'), 'config', '--quiet'], { env: { PATH } })).rejects.toThrow(/JWT_SECRET/);
});
