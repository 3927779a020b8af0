// Issue 46, item 7: the install docs name the files a release holds and put the four commands first.
// The Tutor plugin's README named `tutor-contrib-course-access-groups-<version>-py3-none-any.whl`,
// which pip refuses: a wheel's file name spells the project's name with `_` (PEP 427, as `python -m
// build` writes it into release/<version>/), and docs/install-tutor.md gave its four commands only
// inside paragraphs about tests. test/release/artifacts.test.ts runs steps 1 to 3 from the release.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const version = JSON.parse(read('package.json')).version as string;

/** The wheel file the release writes for a pyproject.toml: its name with `-` as `_` (PEP 427), then version, py3-none-any. */
function wheelName(pyproject: string): string {
  const name = /^name = "([^"]+)"$/m.exec(read(pyproject))?.[1];
  expect(name).toBeDefined();
  return `${name!.replace(/-/g, '_')}-(<version>|${version.replace(/\./g, '\\.')})-py3-none-any\\.whl`;
}

const docs = ['README.md', 'integrations/tutor/README.md', 'integrations/openedx/README.md', 'deploy/helm/course-access-groups/README.md'].concat(
  readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
);
const shBlocks = (text: string) => [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => (m[1] ?? '').trim().split('\n'));

test('every wheel a doc names is spelled as the release writes it', () => {
  const wheels = new RegExp(`^(${wheelName('integrations/tutor/pyproject.toml')}|${wheelName('integrations/openedx/pyproject.toml')})$`);
  const named = docs.flatMap((doc) => [...read(doc).matchAll(/[\w<>.-]+\.whl\b/g)].map((m) => ({ doc, name: m[0] })));
  expect(named.length).toBeGreaterThanOrEqual(4);
  expect(named.filter(({ name }) => !wheels.test(name))).toEqual([]);
  // And the release script's listing says the same.
  expect(read('scripts/release/release.sh')).toContain('tutor_contrib_course_access_groups-<version>-*.whl');
});

test("docs/install-tutor.md opens with the four commands, the steps' own, and the Tutor README gives the same", () => {
  const doc = read('docs/install-tutor.md');
  const [intro, ...sections] = doc.split(/^## /m);
  const four = shBlocks(intro ?? '')[0];
  const steps = sections.filter((s) => /^[1-4]\. /.test(s)).flatMap((s) => shBlocks(s).flat());
  expect(four).toHaveLength(4);
  expect(four).toEqual(steps);
  expect(four?.[3]).toBe('tutor local launch');
  const readme = shBlocks(read('integrations/tutor/README.md').split(/^## Install$/m)[1] ?? '')[0];
  expect(readme).toEqual(four?.map((line) => line.replace(version, '<version>')));
});

// Issue 46, item 7: `course-access-groups-<version>.oci.tar` was `docker save`'s Docker archive (no
// index.json from the Docker 20.10 that builds it here): the name now says what it is, everywhere.
test('the image archive the release writes with docker save is named .docker.tar, and every doc and script says so', () => {
  const release = read('scripts/release/release.sh');
  expect(release).toMatch(/^docker save -o "\$WORK\/course-access-groups-\$version\.docker\.tar" "\$image"$/m);
  const files = [
    ...docs,
    '.github/workflows/release.yml',
    'scripts/container/test.sh',
    'scripts/k8s/node.sh',
    'deploy/helm/course-access-groups/templates/_helpers.tpl',
  ];
  const named = files.flatMap((file) => [...read(file).matchAll(/course-access-groups-[^\s/"`]*\.(\w+)\.tar\b/g)].map((m) => `${file}: ${m[0]}`));
  expect(named.length).toBeGreaterThanOrEqual(8);
  expect(named.filter((n) => !n.endsWith('.docker.tar'))).toEqual([]);
});
