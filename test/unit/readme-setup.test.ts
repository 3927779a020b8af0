// Issue 35, item 10: the README's set-up names every tool `npm test` needs. Tried as a new user
// would, with exactly the listed tools, `npm test` stopped at "Python 3.11 is needed": the
// versions and tools are read here from the scripts `npm test` runs, and each must be named.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** The README's set-up: its "Two commands" section. */
const setup =
  read('README.md')
    .split(/^## Two commands$/m)[1]
    ?.split(/^## /m)[0] ?? '';

/** Every Python minor version the scripts of `npm test` ask python-env.sh (directly or not) for. */
function pythonVersions(): string[] {
  const versions = new Set<string>();
  const testSh = read('scripts/test.sh');
  for (const m of testSh.matchAll(/openedx-plugin\.sh (3\.\d+)/g)) versions.add(m[1]!);
  for (const script of ['scripts/tutor-plugin.sh', 'scripts/openedx-producer.sh', 'scripts/lms-oauth.sh', 'scripts/tutor-lms-oauth.sh']) {
    expect(testSh).toContain(path.basename(script));
    const call = read(script).match(/python-env\.sh" \S+ \S+(?: (3\.\d+))?$/m);
    expect(call).not.toBeNull();
    // No version given: python-env.sh's default.
    versions.add(call![1] ?? read('scripts/python-env.sh').match(/VERSION="\$\{3:-(3\.\d+)\}"/)![1]!);
  }
  return [...versions].sort();
}

test('the set-up names every Python version the scripts of npm test ask for (3.11 and 3.12)', () => {
  const versions = pythonVersions();
  expect(versions).toEqual(expect.arrayContaining(['3.11', '3.12']));
  const named = setup.match(/Python ([\d., and]+)/)?.[1] ?? '';
  for (const v of versions) expect(named).toContain(v);
});

test('the set-up names the other tools the scripts use: Node 20, Java 17+, Maven, Go, and the Debian packages installed when missing', () => {
  const engines = JSON.parse(read('package.json')).engines.node as string;
  expect(engines).toBe('>=20');
  const stack = read('scripts/stack.sh');
  const uses: [boolean, string][] = [
    [true, 'Node 20'],
    [/\bjava\b/.test(stack), 'Java 17+'],
    [/\bmvn\b/.test(stack), 'Maven'],
    [/\bgo build\b/.test(stack), 'Go'],
    [/apt_install chromium/.test(read('scripts/browser.sh')), 'chromium'],
    [/apt_install docker-compose/.test(read('scripts/tutor-plugin.sh')), 'docker-compose'],
    [/docker\.io/.test(read('scripts/lib/docker-engine.sh')), 'docker.io'],
  ];
  for (const [used, name] of uses) {
    expect(used).toBe(true);
    expect(setup).toContain(name);
  }
});

test('`npm run stack:start` before `npm ci` says to run it, instead of every server "did not come up"', () => {
  // A copy of the scripts with no node_modules beside or above them (the repository's would be found).
  const dir = mkdtempSync(path.join(tmpdir(), 'cag-stack-'));
  try {
    cpSync(path.join(ROOT, 'scripts'), path.join(dir, 'scripts'), { recursive: true });
    const { MONGO_URL: _m, KAFKA_BROKERS: _k, ...env } = process.env;
    let failure: { status: number; output: string } | null = null;
    try {
      execFileSync('bash', ['scripts/stack.sh', 'start'], { cwd: dir, env: { ...env, STACK_DIR: path.join(dir, '.stack') }, stdio: 'pipe' });
    } catch (err) {
      const e = err as { status: number; stdout: Buffer; stderr: Buffer };
      failure = { status: e.status, output: `${e.stdout}${e.stderr}` };
    }
    expect(failure).toEqual({ status: 1, output: expect.stringContaining('run `npm ci` first') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
