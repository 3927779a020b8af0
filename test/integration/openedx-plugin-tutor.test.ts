// The Tutor plugin (integrations/tutor/) with the real tutor package: its pytest suite, in its
// pinned Python 3.12 environment (scripts/tutor-plugin.sh, which also installs Debian's
// docker-compose when missing), saves a configuration in a temporary TUTOR_ROOT and checks what
// Tutor rendered with docker-compose, the Kubernetes API schemas, and the LMS plugin's own settings
// code (run by the LMS plugin's Python 3.11 environment). Needs no stack. The suite's assertions
// are the test; this one checks pytest's exit code and that every expected test ran and passed.
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const EXPECTED = [
  'test_config_save_makes_the_jwt_secret_once_and_keeps_it',
  'test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb[own-kafka]',
  'test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb[external-kafka]',
  'test_the_rendered_kubernetes_manifests_match_the_api_schemas[own-kafka]',
  'test_the_rendered_kubernetes_manifests_match_the_api_schemas[external-kafka]',
  'test_the_services_credentials_reach_its_pods_from_a_secret_never_a_deployments_env',
  'test_the_openedx_image_installs_the_lms_plugin_and_confluent_kafka',
  'test_the_rendered_settings_leave_the_lms_on_kafka_with_the_services_topics_and_filters_first',
].map((t) => `tests/test_tutor_plugin.py::${t}`);

const script = (name: string, ...args: string[]) => execFileSync('bash', [path.join(ROOT, 'scripts', name), ...args], { encoding: 'utf8' }).trim();

test('the Tutor plugin renders a valid compose file, Kubernetes manifests and LMS settings with the real tutor', async () => {
  const tutorPython = script('tutor-plugin.sh');
  const lmsPython = script('openedx-plugin.sh', '3.11');
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      tutorPython,
      // -rap: a line per test with its outcome; "no:cacheprovider": no cache files in the source tree.
      ['-m', 'pytest', '-rap', '-p', 'no:cacheprovider'],
      {
        cwd: path.join(ROOT, 'integrations/tutor'),
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', LMS_PYTHON: lmsPython },
        timeout: 240_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
  const passed = new Set([...output.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]));
  if (code !== 0 || EXPECTED.some((t) => !passed.has(t))) throw new Error(`pytest exited with ${code}:\n${output}`);
  const summary = /^=+ (.*) in [\d.]+s/m.exec(output.split('\n').reverse().join('\n'))?.[1];
  expect(summary).toMatch(new RegExp(`^${EXPECTED.length} passed(, \\d+ warnings?)?$`));
}, 600_000);
