// Issue 35, "a release": what `npm run release` wrote into RELEASE_DIR, checked as a user receives
// it (uv makes the environments and installs into them: seconds with its cache warm). The files are copied out of the repository first and every check runs from there, so nothing
// can come from integrations/ or the working tree: the checksums (`sha256sum -c`), the changelog's
// section, the packaged chart's and the image archive's versions, and both wheels installed into
// fresh Python 3.11 and 3.12 environments (`uv venv`, then setuptools==69.1.1, the one
// Tutor's openedx image builds with), their other requirements from PyPI, run isolated (`python -I`,
// a working directory outside the repository). The LMS plugin is found as edx-platform finds
// plugins (edx_django_utils' get_plugin_apps over the `lms.djangoapp` entry points) and its sdist
// is built and installed too on 3.11 by that environment's setuptools 69.1.1; the Tutor plugin is listed, enabled and configured by the real tutor
// from PyPI. `npm run test:container` runs the image archive; `npm run test:k8s` installs the chart.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const RELEASE_DIR = process.env.RELEASE_DIR ?? '';
const PYTHONS = { '3.11': process.env.RELEASE_PYTHON_311 ?? '', '3.12': process.env.RELEASE_PYTHON_312 ?? '' };
/** uv (scripts/release/test-requirements.txt): fresh environments and installs in seconds. */
const UV = process.env.RELEASE_UV ?? '';
if (!RELEASE_DIR || !PYTHONS['3.11'] || !PYTHONS['3.12'] || !UV) throw new Error('run these checks with `npm run test:release`');
const BUILD_SETUPTOOLS = 'setuptools==69.1.1';
const version = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;

/** The release as a user downloads it: a copy outside the repository. */
const WORK = mkdtempSync(path.join(tmpdir(), 'cag-release-'));
const DOWNLOADED = path.join(WORK, 'downloaded');
mkdirSync(DOWNLOADED);
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

// No variable of this process may point back into the repository (PYTHONPATH, a virtualenv...).
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k, v]) => !['PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV'].includes(k) && !(v ?? '').includes(ROOT)),
);
const sh = async (file: string, args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) => {
  try {
    return (await run(file, args, { cwd: opts.cwd ?? WORK, env: { ...env, ...opts.env }, maxBuffer: 64e6 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${e.message}\n${(e.stderr ?? '').slice(-3000)}`);
  }
};

const EXPECTED = [
  `course-access-groups-${version}.docker.tar`,
  `course-access-groups-${version}.tgz`,
  `course_access_groups_openedx-${version}-py3-none-any.whl`,
  `course-access-groups-openedx-${version}.tar.gz`,
  `tutor_contrib_course_access_groups-${version}-py3-none-any.whl`,
  `tutor-contrib-course-access-groups-${version}.tar.gz`,
  'CHANGELOG.md',
];
const file = (name: string) => path.join(DOWNLOADED, name);
const released = (name: string) => path.join(RELEASE_DIR, name);

/** A fresh virtual environment of that Python with Tutor's setuptools; returns its python. */
async function freshVenv(python: '3.11' | '3.12', name: string): Promise<string> {
  const venv = path.join(WORK, `${name}-py${python}`);
  await sh(UV, ['venv', '--quiet', '--python', PYTHONS[python], venv]);
  const py = path.join(venv, 'bin', 'python');
  await install(py, BUILD_SETUPTOOLS);
  return py;
}
const install = (py: string, ...args: string[]) => sh(UV, ['pip', 'install', '--quiet', '--python', py, ...args]);

const LMS_PROBE = `
import json, sys, setuptools
from importlib.metadata import distribution, entry_points
from django.conf import settings
settings.configure()
from django.utils.module_loading import import_string
from edx_django_utils.plugins import get_plugin_apps
import course_access_groups_openedx as plugin
apps = get_plugin_apps("lms.djangoapp")
config = import_string("course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig")
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix, "file": plugin.__file__,
    "version": plugin.__version__, "dist": distribution("course-access-groups-openedx").version,
    "entry_points": [ep.value for ep in entry_points(group="lms.djangoapp") if ep.name == "course_access_groups_openedx"],
    "apps": apps, "config": config.name, "setuptools": setuptools.__version__,
}))
`;

async function probeLms(py: string) {
  return JSON.parse(await sh(py, ['-I', '-c', LMS_PROBE])) as Record<string, unknown>;
}

// The Python packages, copied out of the repository (the rest is read where it is); at load, as
// concurrent tests may start before a beforeAll has run.
for (const name of EXPECTED.filter((n) => /\.(whl|tar\.gz)$/.test(n))) copyFileSync(path.join(RELEASE_DIR, name), file(name));

test('SHA256SUMS names every artifact, once, and `sha256sum -c` passes; a changed byte fails it', async () => {
  expect(readdirSync(RELEASE_DIR).sort()).toEqual([...EXPECTED, 'SHA256SUMS'].sort());
  const sums = readFileSync(released('SHA256SUMS'), 'utf8').trim().split('\n');
  expect(sums.map((l) => l.replace(/^[0-9a-f]{64} {2}/, '')).sort()).toEqual([...EXPECTED].sort());
  expect(await sh('sha256sum', ['-c', '--strict', 'SHA256SUMS'], { cwd: RELEASE_DIR })).toMatch(/CHANGELOG\.md: OK/);

  const tampered = path.join(WORK, 'tampered');
  mkdirSync(tampered);
  writeFileSync(path.join(tampered, 'CHANGELOG.md'), `${readFileSync(released('CHANGELOG.md'), 'utf8')} `);
  copyFileSync(released('SHA256SUMS'), path.join(tampered, 'SHA256SUMS'));
  await expect(sh('sha256sum', ['-c', '--ignore-missing', 'SHA256SUMS'], { cwd: tampered })).rejects.toThrow(/did NOT match/);
});

test("CHANGELOG.md is the version's section of the repository's CHANGELOG.md, and only that", () => {
  const notes = readFileSync(released('CHANGELOG.md'), 'utf8');
  expect(notes.split('\n')[0]).toMatch(new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`));
  expect(notes.match(/^## /gm)).toHaveLength(1);
  expect(readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8')).toContain(notes.trim());
});

test("the chart archive is helm's package of the chart, its version and appVersion the release's", async () => {
  const tgz = released(`course-access-groups-${version}.tgz`);
  const listing = (await sh('tar', ['-tzf', tgz])).split('\n');
  expect(listing).toEqual(expect.arrayContaining(['course-access-groups/Chart.yaml', 'course-access-groups/values.yaml']));
  expect(listing.some((f) => f.startsWith('course-access-groups/templates/'))).toBe(true);
  const chart = await sh('tar', ['-xOzf', tgz, 'course-access-groups/Chart.yaml']);
  expect(chart).toMatch(new RegExp(`^version: ${version}$`, 'm'));
  expect(chart).toMatch(new RegExp(`^appVersion: "?${version}"?$`, 'm'));
});

test('the image archive holds one image, tagged course-access-groups:<version>, in the form `docker load` reads', async () => {
  const archive = released(`course-access-groups-${version}.docker.tar`);
  const manifest = JSON.parse(await sh('tar', ['-xOf', archive, 'manifest.json'])) as { RepoTags: string[]; Config: string; Layers: string[] }[];
  expect(manifest).toHaveLength(1);
  expect(manifest[0]!.RepoTags).toEqual([`course-access-groups:${version}`]);
  const config = JSON.parse(await sh('tar', ['-xOf', archive, manifest[0]!.Config])) as {
    config: { User: string; Entrypoint: string[]; Cmd: string[]; Healthcheck?: unknown };
  };
  expect(config.config.User).toBe('node');
  expect(config.config.Entrypoint).toEqual(['cag-entrypoint']);
  expect(config.config.Cmd).toEqual(['node', 'dist/src/main.js']);
  expect(config.config.Healthcheck).toBeDefined();
});

// The four environments are made and installed at the same time (each mostly waits on PyPI and the disk).
describe('fresh environments with setuptools 69.1.1', () => {
  test.concurrent.each(['3.11', '3.12'] as const)(
    "Python %s: the LMS plugin's wheel installs with its requirements from PyPI, imports from the environment, and edx-platform's plugin discovery finds its app",
    async (python) => {
      const py = await freshVenv(python, 'lms');
      await install(py, file(`course_access_groups_openedx-${version}-py3-none-any.whl`));
      const out = await probeLms(py);
      expect(out.python).toBe(python);
      expect(String(out.file).startsWith(String(out.prefix))).toBe(true);
      expect(String(out.file)).not.toContain(ROOT);
      expect([out.version, out.dist]).toEqual([version, version]);
      expect(out.entry_points).toEqual(['course_access_groups_openedx.apps:CourseAccessGroupsOpenedxConfig']);
      expect(out.apps).toContain('course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig');
      expect(out.config).toBe('course_access_groups_openedx');
      expect(out.setuptools).toBe('69.1.1');

      if (python === '3.11') {
        // The sdist, built from source as Tutor's openedx image builds one: setuptools 69.1.1 as the
        // build backend (a build constraint), Python 3.11.
        await install(py, 'wheel==0.45.1'); // setuptools 69's bdist_wheel is wheel's
        await install(py, '--no-build-isolation', '--reinstall', '--no-deps', file(`course-access-groups-openedx-${version}.tar.gz`));
        const again = await probeLms(py);
        expect([again.version, again.entry_points, again.setuptools]).toEqual([version, out.entry_points, '69.1.1']);
        expect(again.apps).toContain('course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig');
      }
    },
  );

  test.concurrent.each(['3.11', '3.12'] as const)(
    "Python %s: the Tutor plugin's wheel installs with the real tutor from PyPI; `tutor plugins list` shows it, and enabled its version is the release's",
    async (python) => {
      const py = await freshVenv(python, 'tutor');
      await install(py, file(`tutor_contrib_course_access_groups-${version}-py3-none-any.whl`));
      const tutor = path.join(path.dirname(py), 'tutor');
      const tutorEnv = { TUTOR_ROOT: path.join(WORK, `tutor-root-${python}`) };
      const listed = await sh(tutor, ['plugins', 'list'], { env: tutorEnv });
      expect(listed).toMatch(new RegExp(`^course-access-groups\\s+.*${version.replace(/\./g, '\\.')}`, 'm'));
      await sh(tutor, ['config', 'save', '--set', 'COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX'], { env: tutorEnv });
      await sh(tutor, ['plugins', 'enable', 'course-access-groups'], { env: tutorEnv });
      expect((await sh(tutor, ['config', 'printvalue', 'COURSE_ACCESS_GROUPS_VERSION'], { env: tutorEnv })).trim()).toBe(version);
      const plugin = await sh(py, ['-I', '-c', 'import tutorcourse_access_groups as p, sys; print(p.__file__); print(sys.prefix)']);
      const [where = '', prefix = ''] = plugin.trim().split('\n');
      expect(where.startsWith(prefix)).toBe(true);
      expect(where).not.toContain(ROOT);
    },
  );
});

// docs/install-tutor.md's other step 1: `pip install "git+<repository>@<version>#subdirectory=integrations/tutor"`.
// pip builds the wheel from a checkout, where the carried sources are not staged: the Tutor plugin's
// setup.py stages them from the checkout around it. A clone outside the repository, installed by
// URL; the package it gives holds the same files as the release's wheel, and the carried ones as the
// clone has them.
test('a pip install of the Tutor plugin from a git URL carries what the release wheel carries', async () => {
  const clone = path.join(WORK, 'clone');
  // git for uv, from a PATH without the repository's folders (npx puts its node_modules/.bin first).
  const PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.startsWith(ROOT))
    .join(':');
  await sh('git', ['clone', '--quiet', ROOT, clone]);
  const installed = async (name: string, what: string) => {
    const target = path.join(WORK, name);
    await sh(UV, ['pip', 'install', '--quiet', '--no-deps', '--python', PYTHONS['3.12'], '--target', target, what], { env: { PATH } });
    const pkg = path.join(target, 'tutorcourse_access_groups');
    const files = (await sh('find', [pkg, '-type', 'f', '!', '-name', '*.pyc'])).trim().split('\n');
    return { pkg, files: files.map((f) => path.relative(pkg, f)).sort() };
  };
  const fromGit = await installed('from-git', `git+file://${clone}#subdirectory=integrations/tutor`);
  const fromWheel = await installed('from-wheel', file(`tutor_contrib_course_access_groups-${version}-py3-none-any.whl`));
  expect(fromGit.files.length).toBeGreaterThan(100);
  expect(fromGit.files).toEqual(fromWheel.files);
  for (const [carried, source] of [
    ['templates/course-access-groups/build/course-access-groups/Dockerfile', 'Dockerfile'],
    ['templates/course-access-groups/build/course-access-groups/src/main.ts', 'src/main.ts'],
    ['templates/build/openedx/course-access-groups-openedx/pyproject.toml', 'integrations/openedx/pyproject.toml'],
  ] as const) {
    expect(readFileSync(path.join(fromGit.pkg, carried), 'utf8')).toBe(readFileSync(path.join(clone, source), 'utf8'));
  }
  // The build stages into a checkout of its own: the repository it was given is left as it was.
  expect((await sh('git', ['-C', clone, 'status', '--porcelain'])).trim()).toBe('');
}, 300_000);

// docs/install-tutor.md's steps 1 to 3 as an operator types them: every line of their `sh` blocks
// run by bash in the folder holding the release's files (the copy outside the repository), with a
// fresh Python 3.12 environment (Tutor from PyPI) first on the PATH, `pip` installing into it, and a
// new TUTOR_ROOT; then what step 3 says it renders is there.
test("docs/install-tutor.md's steps 1 to 3 run as written, from the release's files", async () => {
  const doc = readFileSync(path.join(ROOT, 'docs/install-tutor.md'), 'utf8');
  const steps = doc.split(/^## /m).filter((section) => /^[123]\. /.test(section));
  const commands = steps.flatMap((section) => [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => (m[1] ?? '').trim().split('\n')));
  const wheel = /^pip install (tutor_contrib_course_access_groups-(\d+\.\d+\.\d+)-py3-none-any\.whl)$/;
  expect(commands).toEqual([
    expect.stringMatching(wheel),
    'tutor plugins enable course-access-groups',
    'tutor config save --set COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX',
  ]);
  const venv = path.join(WORK, 'operator-venv');
  await sh(UV, ['venv', '--quiet', '--python', PYTHONS['3.12'], venv]);
  // `pip` is uv's pip interface into that environment: pip itself took more than 7 minutes to
  // resolve Tutor's requirements at a load average of 60; uv, with its cache, seconds.
  const shims = path.join(WORK, 'operator-shims');
  mkdirSync(shims);
  writeFileSync(path.join(shims, 'pip'), `#!/bin/sh\nexec '${UV}' pip "$@" --python '${path.join(venv, 'bin', 'python')}'\n`, { mode: 0o755 });
  const root = path.join(WORK, 'operator-tutor-root');
  // The PATH without the repository's folders (npx puts its node_modules/.bin first).
  const PATH = [shims, path.join(venv, 'bin'), ...(process.env.PATH ?? '').split(':').filter((dir) => !dir.startsWith(ROOT))].join(':');
  const operator = { PATH, TUTOR_ROOT: root, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  for (const command of commands) {
    // The doc names the version it was written for; the release's own file is the one installed.
    await sh('bash', ['-c', command.replace(wheel, `pip install tutor_contrib_course_access_groups-${version}-py3-none-any.whl`)], {
      cwd: DOWNLOADED,
      env: operator,
    });
  }
  const env = path.join(root, 'env');
  for (const rendered of [
    'plugins/course-access-groups/build/course-access-groups/Dockerfile',
    'build/openedx/course-access-groups-openedx/pyproject.toml',
    'local/docker-compose.yml',
    'apps/caddy/Caddyfile',
  ]) {
    expect(readFileSync(path.join(env, rendered), 'utf8').length).toBeGreaterThan(0);
  }
  expect(readFileSync(path.join(env, 'build/openedx/Dockerfile'), 'utf8')).toContain('COPY course-access-groups-openedx /tmp/course-access-groups-openedx');
  const tutor = path.join(venv, 'bin', 'tutor');
  expect((await sh(tutor, ['config', 'printvalue', 'COURSE_ACCESS_GROUPS_ORGANIZATION'], { env: operator })).trim()).toBe('AcmeX');
  expect((await sh(tutor, ['images', 'printtag', 'course-access-groups'], { env: operator })).trim()).toBe(`docker.io/library/course-access-groups:${version}`);
  // Installed from the release's file, not from the repository.
  const where = await sh(path.join(venv, 'bin', 'python'), ['-I', '-c', 'import tutorcourse_access_groups as p; print(p.__file__)']);
  expect(where.trim().startsWith(venv)).toBe(true);
  // A bound for a hang: Tutor's requirements from PyPI, beside the container test.
}, 600_000);
