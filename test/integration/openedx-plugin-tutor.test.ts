// The Tutor plugin (integrations/tutor/) with the real tutor 20, 21 and 22 from PyPI: its wheel
// (with RELEASE_DIR, as `npm test` sets it, the release's own, copied out of the repository;
// else one built as the release builds it: scripts/tutor-plugin-wheel.sh, staged, then `python -m
// build`), then its pytest suite run in each Tutor's pinned Python 3.12 environment
// (scripts/tutor-plugin.sh 20|21|22, which also installs Debian's docker-compose when missing),
// each installing the plugin from that wheel into a temporary TUTOR_ROOT and checking what Tutor
// rendered with docker-compose, the Kubernetes API schemas and the LMS plugin's own settings code
// (run by the LMS plugin's Python 3.11 environment): Tutor 21 every test, Tutor 20 and 22 those
// that differ between releases (EVERY_TUTOR), and Tutor 22 the upgrade from Tutor 21 and the
// previous release (UPGRADE). For every Tutor, tests/test_openedx_image.py runs
// the openedx image's rendered install lines in a fresh environment of that image's Python (3.11
// for Tutor 20 and 21, 3.12 for 22) under the setuptools it pins. Every version renders the same
// service build context (by hash). Needs no stack. The suites' assertions are the test; this one
// checks pytest's exit code and that every expected test ran and passed.
import { execFile, execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const TUTORS = ['20', '21', '22'] as const;
const EXPECTED = [
  'test_config_save_makes_the_jwt_secret_once_and_keeps_it',
  'test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb[own-kafka]',
  'test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb[external-kafka]',
  'test_the_rendered_kubernetes_manifests_match_the_api_schemas[own-kafka]',
  'test_the_rendered_kubernetes_manifests_match_the_api_schemas[external-kafka]',
  'test_the_services_credentials_reach_its_pods_from_a_secret_never_a_deployments_env',
  'test_the_openedx_image_installs_the_lms_plugin_it_carries_and_confluent_kafka',
  'test_tutor_builds_the_service_image_from_the_context_it_renders_and_names_the_openedx_image',
  'test_the_own_kafkas_data_folder_is_made_writable_by_tutors_permissions_service',
  'test_studio_sends_catalog_events_on_teak_and_init_brings_existing_courses_and_learners',
  'test_installing_the_wheel_beside_this_tutor_changes_no_tutor',
  'test_a_missing_organization_stops_rendering_with_one_line_and_no_other_command',
  'test_compose_waits_for_healthy_services_routes_a_host_and_keeps_dollar_signs',
  'test_the_rendered_settings_leave_the_lms_on_kafka_with_the_services_topics_and_filters_first',
  'test_the_service_trusts_the_lmss_own_tokens_and_the_lms_holds_no_service_token',
  'test_the_init_task_registers_the_consoles_oauth2_application_at_the_callback_the_service_sends',
  'test_the_service_image_is_built_from_a_git_repository_and_version_the_operator_names',
  'test_an_external_kafka_over_sasl_ssl_reaches_the_lmss_producer_and_the_service',
  'test_kafka_settings_that_cannot_work_stop_rendering_with_one_line_naming_the_setting',
  'test_the_service_can_be_left_to_the_chart_while_the_lms_calls_it_where_the_operator_says',
  'test_the_kubernetes_pods_have_the_charts_probes_resources_and_replicas_and_the_own_kafka_a_volume',
].map((t) => `tests/test_tutor_plugin.py::${t}`);
// Tutor 20 and 22 run what differs between Tutor releases (rendering, compose, images, the carried
// sources, Teak's toggle, pip beside that Tutor, the organization, the LMS's key set rendered from
// that Tutor's key); Tutor 21 runs every other test (the git source's Dockerfile among them: every Tutor
// calls the plugin's IMAGES_BUILD callback in the image test above).
const EVERY_TUTOR = [
  'test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb[own-kafka]',
  'test_the_openedx_image_installs_the_lms_plugin_it_carries_and_confluent_kafka',
  'test_tutor_builds_the_service_image_from_the_context_it_renders_and_names_the_openedx_image',
  'test_the_own_kafkas_data_folder_is_made_writable_by_tutors_permissions_service',
  'test_studio_sends_catalog_events_on_teak_and_init_brings_existing_courses_and_learners',
  'test_installing_the_wheel_beside_this_tutor_changes_no_tutor',
  'test_a_missing_organization_stops_rendering_with_one_line_and_no_other_command',
  'test_the_service_trusts_the_lmss_own_tokens_and_the_lms_holds_no_service_token',
  'test_the_init_task_registers_the_consoles_oauth2_application_at_the_callback_the_service_sends',
].map((t) => `tests/test_tutor_plugin.py::${t}`);
// The openedx image's rendered install lines, in that Tutor's image's Python: for every Tutor.
const OPENEDX_IMAGE = ['tests/test_openedx_image.py::test_the_rendered_install_lines_install_the_carried_lms_plugin_in_the_images_python'];
// Tutor 22 only: a root saved by the previous release's plugin with Tutor 21 (TUTOR_21_PYTHON), saved
// again by this plugin with Tutor 22 (35 s on a 2-core machine).
const UPGRADE = ['tests/test_tutor_plugin.py::test_an_upgrade_from_tutor_21_and_the_previous_release_moves_the_images_and_keeps_an_operators_name'];
const suite = (tutor: string) => (tutor === '21' ? [...EXPECTED, ...OPENEDX_IMAGE] : [...EVERY_TUTOR, ...OPENEDX_IMAGE, ...(tutor === '22' ? UPGRADE : [])]);

const script = (name: string, ...args: string[]) => execFileSync('bash', [path.join(ROOT, 'scripts', name), ...args], { encoding: 'utf8' }).trim();

function pytest(python: string, args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      python,
      // -rap: a line per test with its outcome; "no:cacheprovider": no cache files in the source tree.
      ['-m', 'pytest', '-rap', '-p', 'no:cacheprovider', ...args],
      {
        cwd: path.join(ROOT, 'integrations/tutor'),
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env },
        timeout: 1_200_000, // a bound for a hang: Tutor 21 (every test) took more than 900 s at a load average of 55
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
}

function expectAllPassed({ code, output }: { code: number; output: string }, expected: string[], what: string) {
  const passed = new Set([...output.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]));
  if (code !== 0 || expected.some((t) => !passed.has(t))) throw new Error(`${what}: pytest exited with ${code}:\n${output}`);
  const summary = /^=+ (.*) in [\d.]+s/m.exec(output.split('\n').reverse().join('\n'))?.[1];
  expect(summary).toMatch(new RegExp(`^${expected.length} passed(, \\d+ warnings?)?$`));
}

/** The Tutor plugin's wheel in `dir`: the release's own (RELEASE_DIR), copied out of it; else built as the release builds it. */
async function pluginWheel(dir: string): Promise<string> {
  const release = process.env.RELEASE_DIR;
  if (!release) return script('tutor-plugin-wheel.sh', pythons['21'], dir);
  const version = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')).version as string;
  const name = `tutor_contrib_course_access_groups-${version}-py3-none-any.whl`;
  await mkdir(dir, { recursive: true });
  await copyFile(path.join(release, name), path.join(dir, name));
  return path.join(dir, name);
}

let work = '';
const pythons = {} as Record<(typeof TUTORS)[number], string>;
let lmsPython = '';
let lmsOauthPython = '';
let lmsPython312 = '';
let uv = '';
let wheel = '';
beforeAll(() => {
  // Made once (a minute or more each the first time), not inside the test's timeout.
  for (const tutor of TUTORS) pythons[tutor] = script('tutor-plugin.sh', tutor);
  lmsPython = script('openedx-plugin.sh', '3.11');
  lmsOauthPython = script('tutor-lms-oauth.sh');
  lmsPython312 = script('openedx-plugin.sh', '3.12');
  // uv (the release test's environment), which Tutor 21's and 22's openedx images install with.
  uv = path.join(path.dirname(script('python-env.sh', 'release-test', path.join(ROOT, 'scripts/release/test-requirements.txt'), '3.12')), 'uv');
}, 900_000);
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test('the Tutor plugin, installed from its wheel, renders valid files and the same build context with the real tutor 20, 21 and 22', async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'cag-tutor-plugin-'));
  wheel = await pluginWheel(path.join(work, 'dist'));
  const hashFile = (tutor: string) => path.join(work, `context-${tutor}.sha256`);
  const runs = await Promise.all(
    TUTORS.map((tutor) =>
      pytest(pythons[tutor], suite(tutor), {
        LMS_PYTHON: lmsPython,
        LMS_OAUTH_PYTHON: lmsOauthPython,
        LMS_PYTHON_312: lmsPython312,
        UV: uv,
        TUTOR_PLUGIN_WHEEL: wheel,
        CAG_CONTEXT_HASH_FILE: hashFile(tutor),
        TUTOR_21_PYTHON: pythons['21'],
      }),
    ),
  );
  for (const [i, run] of runs.entries()) {
    const tutor = TUTORS[i] as string;
    expectAllPassed(run, suite(tutor), `Tutor ${tutor}`);
  }
  // One service build context, whichever Tutor rendered it.
  const hashes = await Promise.all(TUTORS.map((tutor) => readFile(hashFile(tutor), 'utf8')));
  expect(hashes[0]).toMatch(/^[0-9a-f]{64}$/);
  expect(new Set(hashes).size).toBe(1);
}, 1_500_000);
