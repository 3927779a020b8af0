// The Open edX LMS plugin (integrations/openedx/) against the real service: this file starts the
// service on the local stack (HTTP and the consumer, the schema registry set), fills an
// organization through its events and REST API, then runs the plugin's pytest suite in both of its
// pinned environments (scripts/openedx-plugin.sh): Python 3.11 with the versions edx-platform pins,
// Python 3.12 with the libraries' newest releases, each with the real openedx-filters,
// openedx-events and edx-event-bus-kafka. The suite's own assertions are the test; this one
// checks pytest's exit code and that every expected test ran and passed on both.
import { execFile, execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import path from 'node:path';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  produce,
  startEventService,
  structured,
  TYPES,
  userData,
  waitCaughtUp,
} from '../helpers/events';
import { client } from '../helpers/http';
import { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, uniqueName } from '../helpers/stack';
import { serviceToken, siteAdminToken } from '../helpers/tokens';

const ROOT = path.resolve(__dirname, '../..');
const PLUGIN = path.join(ROOT, 'integrations/openedx');

const VERSIONS = ['3.11', '3.12'] as const;
/** The plugin's test environments: made (or found in their cache) by scripts/openedx-plugin.sh. */
const python = (version: string) => execFileSync('bash', [path.join(ROOT, 'scripts/openedx-plugin.sh'), version], { encoding: 'utf8' }).trim();

// Every test of the suite, by file: a test that disappears or is skipped fails this one.
const EXPECTED = {
  'tests/test_enforcement.py': [
    'test_a_group_member_enrolls_in_a_linked_course_and_the_reason_is_logged_at_debug',
    'test_an_outsider_is_refused_enrollment_in_a_private_course',
    'test_a_public_course_is_open_to_anyone_and_an_unknown_course_to_no_one',
    'test_a_private_about_page_is_the_lms_404_for_outsiders_and_anonymous_visitors',
    'test_an_about_page_is_shown_to_a_member_and_a_public_one_to_anyone',
    'test_a_hidden_about_page_redirects_when_a_redirect_is_configured',
    'test_a_dashboard_keeps_what_one_batch_decision_allows',
    'test_enrollment_and_about_page_cost_one_call_each',
    'test_with_the_service_unreachable_enrollment_and_about_pages_fail_closed_and_listings_open[closed_port]',
    'test_with_the_service_unreachable_enrollment_and_about_pages_fail_closed_and_listings_open[silent_port]',
    'test_the_fail_mode_is_configurable_per_action',
    'test_a_refused_token_is_the_service_unavailable_and_no_token_or_email_is_logged',
  ],
  'tests/test_activation.py': [
    'test_an_activation_ends_as_a_membership_through_the_event_bus',
    'test_without_an_organization_nothing_is_published_and_a_warning_names_the_user',
    'test_a_failing_organization_lookup_is_logged_and_never_reaches_the_request',
    'test_an_unreachable_schema_registry_is_logged_by_the_producer_and_never_reaches_the_request',
    'test_a_multi_site_lms_takes_the_organization_of_the_site_the_account_was_created_on',
  ],
  'tests/test_lms_paths.py': [
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[activation-service-refuses]',
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[activation-service-unreachable]',
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[registration-without-activation-email-service-refuses]',
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[registration-without-activation-email-service-unreachable]',
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[email-change-service-refuses]',
    'test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls[email-change-service-unreachable]',
    'test_an_activation_without_the_signal_is_published_once_after_commit[password-reset]',
    'test_an_activation_without_the_signal_is_published_once_after_commit[django-admin]',
    'test_registration_activate_is_one_activation_though_the_save_and_the_signal_both_say_it',
    'test_a_rolled_back_activation_sends_nothing',
    'test_the_topic_and_switch_are_read_when_an_activation_is_sent',
    'test_an_earlier_step_that_ends_the_pipeline_cannot_open_enrollment[string]',
    'test_an_earlier_step_that_ends_the_pipeline_cannot_open_enrollment[list]',
    'test_an_earlier_step_that_ends_the_pipeline_cannot_open_enrollment[dict]',
    'test_a_ccx_course_is_decided_as_its_master_course',
    'test_platform_staff_and_course_staff_pass_on_a_private_course',
    'test_the_dashboard_drops_the_recent_enrollment_banner_when_it_hides_a_course',
    'test_steps_accept_arguments_a_newer_filter_adds',
    'test_the_enrollment_api_view_is_covered_where_openedx_filters_defines_its_filter',
  ],
  'tests/test_lms_jwt.py': [
    'test_the_role_function_emits_an_admin_role_per_organization_from_org_level_course_access_roles',
    'test_plugin_settings_add_the_role_function_once_after_the_lms_own',
    'test_ready_says_when_later_settings_dropped_the_role_function',
    'test_calls_carry_a_short_lived_token_the_lms_signs_and_the_service_takes',
    'test_a_token_with_only_the_service_role_gets_decisions_and_no_admin_call',
    'test_a_refused_token_is_signed_again_and_the_call_made_once_more',
    'test_a_service_clock_behind_the_lms_by_the_leeway_is_taken_further_is_refused_after_one_retry[1s]',
    'test_a_service_clock_behind_the_lms_by_the_leeway_is_taken_further_is_refused_after_one_retry[5s]',
    'test_a_configured_service_token_is_not_retried',
    'test_service_url_is_https_unless_it_names_something_inside_the_deployment',
    'test_an_http_service_url_outside_the_deployment_is_never_called',
    'test_without_the_service_user_or_the_lms_key_no_call_is_made[user]',
    'test_without_the_service_user_or_the_lms_key_no_call_is_made[key]',
  ],
  'tests/test_plugin.py': [
    'test_the_package_builds_with_tutors_setuptools_and_installs_as_an_lms_plugin_with_a_working_kafka_producer',
    'test_settings_phases_leave_the_steps_first_and_never_touch_the_event_bus_producer_config',
    'test_a_tutor_patch_that_replaces_the_filters_after_every_phase_stops_start_up',
    'test_configure_filters_off_in_a_tutor_patch_after_every_phase_takes_the_steps_out_at_start_up',
    'test_edx_platforms_test_settings_turn_enforcement_and_publishing_off',
    'test_plugin_settings_put_the_step_first_not_silent_and_apply_once',
    'test_ready_refuses_to_start_when_later_settings_undid_the_steps[replaced0]',
    'test_ready_refuses_to_start_when_later_settings_undid_the_steps[replaced1]',
    'test_ready_refuses_to_start_when_later_settings_undid_the_steps[replaced2]',
    'test_ready_refuses_to_start_when_another_package_owns_the_activation_event_type',
    'test_ready_says_when_activations_cannot_reach_kafka',
    'test_an_activation_signal_that_cannot_be_imported_stops_start_up',
    'test_ready_warns_when_an_mfe_replaces_a_page_the_plugin_filters',
  ],
  'tests/test_console_link.py': [
    'test_the_page_is_the_plugins_url_in_the_lms',
    'test_staff_and_organization_administrators_see_the_link_to_the_consoles_sign_in_and_no_one_else',
    'test_a_visitor_who_is_not_signed_in_is_sent_to_the_lms_sign_in_first',
    'test_without_the_services_public_url_there_is_no_page_and_a_trailing_slash_is_not_doubled',
    'test_the_page_escapes_what_it_shows',
  ],
  'tests/test_sync.py': [
    'test_the_sync_command_brings_existing_courses_and_active_learners_to_the_service',
    'test_the_sync_command_skips_learners_without_an_organization',
  ],
};

interface PytestRun {
  code: number;
  output: string;
}

function runPytest(pythonPath: string, env: Record<string, string>): Promise<PytestRun> {
  return new Promise((resolve) => {
    execFile(
      pythonPath,
      // -rap: a line per test with its outcome; no bytecode or cache files in the source tree.
      ['-m', 'pytest', '-rap', '-p', 'no:cacheprovider'],
      { cwd: PLUGIN, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env }, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
}

const pythons = {} as Record<(typeof VERSIONS)[number], string>;
beforeAll(() => {
  // Made once here (about a minute each the first time), not inside a test's timeout.
  for (const version of VERSIONS) pythons[version] = python(version);
}, 600_000);

describe('the Open edX LMS plugin against the real service', () => {
  let service: EventTestService;
  const run = randomUUID().slice(0, 8);
  const org = `Org${run}`;
  const topicPrefix = uniqueName('lms');
  const activations = `${topicPrefix}-user-account-activated`;
  // Each Python publishes under a prefix of its own: two producers registering one subject's schema
  // at the same moment race in the registry, and the two openedx-events versions' schemas may differ.
  const prefixes = Object.fromEntries(VERSIONS.map((v) => [v, `${topicPrefix}-py${v.replace('.', '')}`]));

  // The LMS's signing key (Tutor's JWT_RSA_PRIVATE_KEY, kid openedx): the plugin signs its calls
  // with it (tests/settings.py JWT_AUTH), the service trusts its public half.
  const lmsKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const lmsJwt = {
    CAG_LMS_JWT_ISSUER: 'http://lms.plugin.test/oauth2',
    CAG_LMS_JWT_AUDIENCE: 'openedx',
    CAG_LMS_JWT_PRIVATE_JWK: JSON.stringify({ kid: 'openedx', ...lmsKey.privateKey.export({ format: 'jwk' }) }),
  };

  beforeAll(async () => {
    // The sync command (tests/test_sync.py) sends courses where Studio does: <prefix>-course-catalog.
    const topics = [activations, ...VERSIONS.flatMap((v) => [`${prefixes[v]}-user-account-activated`, `${prefixes[v]}-course-catalog`])];
    service = await startEventService({
      SCHEMA_REGISTRY_URL,
      KAFKA_TOPICS: topics.join(','),
      LMS_JWT_ISSUERS: JSON.stringify([{ ISSUER: lmsJwt.CAG_LMS_JWT_ISSUER, AUDIENCE: lmsJwt.CAG_LMS_JWT_AUDIENCE }]),
      LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [{ kid: 'openedx', ...lmsKey.publicKey.export({ format: 'jwk' }) }] }),
    });
  }, 60_000);
  afterAll(async () => {
    await closeProducer();
    await service.close();
  });

  test('the plugin suite passes: enrollment, about pages, a batch-filtered listing, the service unreachable, an activation through the bus', async () => {
    const admin = client(service.baseUrl, await siteAdminToken(org));
    const ruleDomain = `school-${run}.edu`;
    expect((await admin.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true })).status).toBe(200);
    const group = (await admin.post('course-access-groups/', { name: 'Plugin learners', description: '' })).body;
    expect((await admin.post('membership-rules/', { name: 'school', domain: ruleDomain, group: group.id })).status).toBe(201);

    // Learners and courses arrive as the LMS's events do; the member joins the group by the rule.
    const [member, outsider] = [newUserId(), newUserId()];
    const courses = {
      linked: `course-v1:${org}+LINKED+2026`,
      private: `course-v1:${org}+PRIVATE+2026`,
      public: `course-v1:${org}+PUBLIC+2026`,
      unknown: `course-v1:${org}+NEVER+2026`,
    };
    await produce(activations, [
      structured(cloudEvent(TYPES.activated, userData(org, { id: member, email: `member@${ruleDomain}`, is_active: true })), member),
      structured(cloudEvent(TYPES.activated, userData(org, { id: outsider, email: 'outsider@elsewhere.org', is_active: true })), outsider),
      ...[courses.linked, courses.private, courses.public].map((key) =>
        structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: key }, organization: org }), key),
      ),
    ]);
    await waitCaughtUp(service.config.KAFKA_GROUP_ID, activations);
    expect((await admin.post('group-courses/', { course: courses.linked, group: group.id })).status).toBe(201);
    expect((await admin.post('public-courses/', { course: courses.public })).status).toBe(201);
    expect((await admin.get(`users/${member}/`)).body.membership).toMatchObject({ group: { id: group.id } });

    const env = {
      CAG_SERVICE_URL: service.baseUrl,
      CAG_SERVICE_TOKEN: await serviceToken(),
      CAG_ADMIN_TOKEN: await siteAdminToken(org),
      CAG_ORGANIZATION: org,
      ...lmsJwt,
      KAFKA_BROKERS,
      SCHEMA_REGISTRY_URL,
    };
    const fixture = {
      group: { id: group.id, name: group.name },
      rule_domain: ruleDomain,
      users: { member, outsider },
      courses,
    };
    // Both Pythons at once, each with user ids of its own.
    const runs = await Promise.all(
      VERSIONS.map((version) =>
        runPytest(pythons[version], {
          ...env,
          CAG_TOPIC_PREFIX: prefixes[version] as string,
          CAG_FIXTURE: JSON.stringify({ ...fixture, new_user_ids: Array.from({ length: 40 }, () => newUserId()) }),
        }),
      ),
    );

    const expected = Object.entries(EXPECTED).flatMap(([file, tests]) => tests.map((t) => `${file}::${t}`));
    for (const [i, { code, output }] of runs.entries()) {
      // pytest -rap prints "PASSED <file>::<test>" per passed test and "N passed in ..." last.
      const passed = new Set([...output.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]));
      const summary = /^=+ (.*) in [\d.]+s/m.exec(output.split('\n').reverse().join('\n'))?.[1];
      if (code !== 0 || expected.some((t) => !passed.has(t))) throw new Error(`pytest on Python ${VERSIONS[i]} exited with ${code}:\n${output}`);
      // Warnings are allowed (the libraries' deprecations); nothing failed, errored or was skipped.
      expect(summary).toMatch(new RegExp(`^${expected.length} passed(, \\d+ warnings?)?$`));
    }
    // Learners' emails reached the service in Avro; none reached its log lines.
    expect(service.logs.join('\n')).not.toContain(`@${ruleDomain}`);
  }, 600_000);
});
