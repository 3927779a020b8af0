// docs/releasing.md: one version, package.json's, is the image's tag, the chart's version and
// appVersion, both Python packages' versions and the Tutor plugin's COURSE_ACCESS_GROUPS_VERSION;
// scripts/release/versions.cjs writes and checks them, and the release refuses a version that
// CHANGELOG.md has no section for. Fast: files and two short child processes, no stack.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const versions = require(path.join(ROOT, 'scripts/release/versions.cjs')) as {
  PLACES: { file: string; what: string }[];
  sourceVersion: (root?: string) => string;
  found: (root?: string) => { file: string; what: string; version: string | null }[];
  disagreements: (root?: string) => string[];
  setVersion: (version: string, root?: string) => void;
};

/** A copy of the files that carry the version (and the release script, for its refusal). */
function copyOfTree(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cag-versions-'));
  const files = ['package.json', 'CHANGELOG.md', 'scripts/release/release.sh', 'scripts/release/versions.cjs', ...versions.PLACES.map((p) => p.file)];
  for (const file of new Set(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    cpSync(path.join(ROOT, file), path.join(dir, file));
  }
  return dir;
}

let dir = '';
beforeEach(() => {
  dir = copyOfTree();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test("every place that carries the release's version says package.json's", () => {
  const version = versions.sourceVersion(ROOT);
  expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  expect(versions.found(ROOT)).toEqual(versions.PLACES.map((p) => ({ file: p.file, what: p.what, version })));
  expect(versions.disagreements(ROOT)).toEqual([]);
});

test("the Tutor plugin's default COURSE_ACCESS_GROUPS_VERSION is its package's __version__ (one of the places)", () => {
  const plugin = readFileSync(path.join(ROOT, 'integrations/tutor/tutorcourse_access_groups/plugin.py'), 'utf8');
  expect(plugin).toMatch(/\(\s*"COURSE_ACCESS_GROUPS_VERSION",\s*__version__\s*\)/);
  expect(plugin).toMatch(/^from \. import __version__(, \w+)*$/m);
});

test('version:set writes every place, and a place edited by hand alone is named as a disagreement', () => {
  versions.setVersion('9.8.7', dir);
  expect(versions.sourceVersion(dir)).toBe('9.8.7');
  expect(versions.found(dir).every((f) => f.version === '9.8.7')).toBe(true);
  expect(versions.disagreements(dir)).toEqual([]);
  // package-lock.json is still JSON, both of its versions changed.
  const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
  expect([lock.version, lock.packages[''].version]).toEqual(['9.8.7', '9.8.7']);

  for (const place of versions.PLACES) {
    const copy = copyOfTree();
    try {
      versions.setVersion('9.8.7', copy);
      const file = path.join(copy, place.file);
      const text = readFileSync(file, 'utf8');
      const index = versions.PLACES.filter((p) => p.file === place.file).indexOf(place);
      // The n-th "9.8.7" of the file is this place's (places of one file are listed in file order).
      let at = -1;
      for (let i = 0; i <= index; i++) at = text.indexOf('9.8.7', at + 1);
      writeFileSync(file, `${text.slice(0, at)}9.8.8${text.slice(at + 5)}`);
      expect(versions.disagreements(copy)).toEqual([`${place.file} ${place.what}: "9.8.8", package.json says "9.8.7"`]);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }
});

test('version:set refuses what is not X.Y.Z and leaves every file as it was', () => {
  const before = versions.found(dir);
  for (const bad of ['1.0', '1.0.0-rc.1', 'v1.0.0', '01.0.0']) {
    const res = spawnSync('node', ['scripts/release/versions.cjs', 'set', bad], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, CAG_VERSIONS_ROOT: dir },
    });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`"${bad}" is not a version of the form X.Y.Z`);
  }
  expect(versions.found(dir)).toEqual(before);
});

test('the release refuses a version CHANGELOG.md has no section for, and one whose places disagree, before building anything', () => {
  const release = () => spawnSync('bash', ['scripts/release/release.sh'], { cwd: dir, encoding: 'utf8', env: { ...process.env, CAG_VERSIONS_ROOT: dir } });
  // CHANGELOG.md of this repository has the current version's section (what `npm run release` needs).
  const version = versions.sourceVersion(ROOT);
  expect(readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8')).toMatch(new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'));

  versions.setVersion('9.8.7', dir);
  let res = release();
  expect(res.status).toBe(1);
  expect(res.stderr).toContain("CHANGELOG.md has no entry for 9.8.7: add a '## [9.8.7] - YYYY-MM-DD' section");
  expect(existsSync(path.join(dir, 'release'))).toBe(false);

  // A heading with nothing under it is no entry either (put just above the current version's
  // section: whatever [Unreleased] holds stays under [Unreleased]).
  const changelog = readFileSync(path.join(dir, 'CHANGELOG.md'), 'utf8');
  writeFileSync(path.join(dir, 'CHANGELOG.md'), changelog.replace(`## [${version}]`, `## [9.8.7] - 2030-01-01\n\n## [${version}]`));
  res = release();
  expect(res.status).toBe(1);
  expect(res.stderr).toContain('CHANGELOG.md has no entry for 9.8.7');

  writeFileSync(
    path.join(dir, 'integrations/tutor/pyproject.toml'),
    readFileSync(path.join(dir, 'integrations/tutor/pyproject.toml'), 'utf8').replace('"9.8.7"', '"9.8.6"'),
  );
  res = release();
  expect(res.status).toBe(1);
  expect(res.stderr).toContain('integrations/tutor/pyproject.toml [project] version: "9.8.6", package.json says "9.8.7"');
  expect(existsSync(path.join(dir, 'release'))).toBe(false);
});
