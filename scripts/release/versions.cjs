#!/usr/bin/env node
// One version for the whole release, kept in package.json's `version`; every other place that
// names it is written from there by `npm run version:set -- X.Y.Z` and checked by `check` (the
// release script refuses a tree whose places disagree; test/unit/release-versions.test.ts too).
//   node scripts/release/versions.cjs check         prints the version, or every disagreement (exit 1)
//   node scripts/release/versions.cjs set X.Y.Z     writes X.Y.Z into every place
// CAG_VERSIONS_ROOT names another tree than this repository (the unit test's copy).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/**
 * Every place that carries the release's version, beside package.json's. The Tutor plugin's
 * default COURSE_ACCESS_GROUPS_VERSION (the image's tag, the LMS plugin's pin) is its
 * `__version__`, listed here.
 */
const PLACES = [
  { file: 'package-lock.json', what: 'version', pattern: /^( {2}"version": ")([^"]*)(")/m },
  { file: 'package-lock.json', what: 'packages[""].version', pattern: /^( {4}"": \{\n {6}"name": "[^"]*",\n {6}"version": ")([^"]*)(")/m },
  { file: 'deploy/helm/course-access-groups/Chart.yaml', what: 'version', pattern: /^(version: )(\S*)()$/m },
  { file: 'deploy/helm/course-access-groups/Chart.yaml', what: 'appVersion', pattern: /^(appVersion: ")([^"]*)(")$/m },
  { file: 'integrations/openedx/pyproject.toml', what: '[project] version', pattern: /^(version = ")([^"]*)(")$/m },
  { file: 'integrations/openedx/src/course_access_groups_openedx/__init__.py', what: '__version__', pattern: /^(__version__ = ")([^"]*)(")$/m },
  { file: 'integrations/tutor/pyproject.toml', what: '[project] version', pattern: /^(version = ")([^"]*)(")$/m },
  { file: 'integrations/tutor/tutorcourse_access_groups/__init__.py', what: '__version__', pattern: /^(__version__ = ")([^"]*)(")$/m },
];

// X.Y.Z only: a pre-release suffix is spelled differently by npm/Helm (1.0.0-rc.1) and by Python
// (1.0.0rc1), so the wheels' names would not carry the same string.
const VERSION = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

const rootOf = () => process.env.CAG_VERSIONS_ROOT || path.resolve(__dirname, '../..');
const read = (root, file) => fs.readFileSync(path.join(root, file), 'utf8');

/** The source: package.json's version. */
function sourceVersion(root = rootOf()) {
  return JSON.parse(read(root, 'package.json')).version;
}

/** Each place's version as found (null when its pattern does not match: a place moved). */
function found(root = rootOf()) {
  return PLACES.map((p) => {
    const m = read(root, p.file).match(p.pattern);
    return { file: p.file, what: p.what, version: m ? m[2] : null };
  });
}

/** Every place whose version is not package.json's, as lines for a person. */
function disagreements(root = rootOf()) {
  const version = sourceVersion(root);
  return found(root)
    .filter((f) => f.version !== version)
    .map((f) => `${f.file} ${f.what}: ${f.version === null ? 'not found' : `"${f.version}"`}, package.json says "${version}"`);
}

function setVersion(version, root = rootOf()) {
  if (!VERSION.test(version)) throw new Error(`"${version}" is not a version of the form X.Y.Z`);
  const pkgPath = path.join(root, 'package.json');
  fs.writeFileSync(pkgPath, read(root, 'package.json').replace(/^( {2}"version": ")([^"]*)(")/m, `$1${version}$3`));
  for (const p of PLACES) {
    const text = read(root, p.file);
    if (!p.pattern.test(text)) throw new Error(`${p.file}: its ${p.what} is not where versions.cjs looks for it`);
    fs.writeFileSync(path.join(root, p.file), text.replace(p.pattern, `$1${version}$3`));
  }
}

module.exports = { PLACES, VERSION, sourceVersion, found, disagreements, setVersion };

if (require.main === module) {
  const [command, version] = process.argv.slice(2);
  try {
    if (command === 'set' && version) {
      setVersion(version);
      console.log(
        `version ${version} written to package.json and ${PLACES.map((p) => p.file)
          .filter((f, i, a) => a.indexOf(f) === i)
          .join(', ')}`,
      );
    } else if (command === 'check') {
      const wrong = disagreements();
      if (wrong.length) {
        console.error(`the versions disagree (npm run version:set -- X.Y.Z writes them all):\n  ${wrong.join('\n  ')}`);
        process.exit(1);
      }
      console.log(sourceVersion());
    } else {
      console.error('usage: versions.cjs check | versions.cjs set X.Y.Z');
      process.exit(2);
    }
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
