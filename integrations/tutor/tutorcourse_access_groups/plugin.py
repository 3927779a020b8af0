"""
Course Access Groups on Tutor: builds the service's image from the build context this package
carries and the openedx image with the LMS plugin (also carried) and confluent-kafka, moves the LMS
and Studio to the Kafka event bus (every platform producer, not only this one's), publishes
registration, login and Studio's catalog changes to the service's topics, runs the service (its
api and consumer roles) on Tutor's MongoDB, against an external Kafka and schema registry or a
single-node pair of its own, routes a host of its own to the API and console through Caddy, and
brings existing courses and learners to the service in `tutor local do init`. The service trusts
the LMS's own JWTs (the issuer, audience and public key set Tutor gives the LMS, rendered into the
service's environment), so the LMS plugin calls it with short-lived tokens the LMS signs itself, as
a service user the init task creates (not staff: the tokens carry the service role, decisions
only): no token is shared between them. The init task also
registers the admin console's OAuth2 application with the LMS (create_dot_application), whose client
id and secret the service gets, so administrators sign in to the console through the LMS. The
service's own JWT secret (CONFIG_UNIQUE) stays for the tokens `npm run token` mints (scripts).
"""

import hashlib
import json
import os
import re
import shlex
from glob import glob
from urllib.parse import quote

import click
from tutor import config as tutor_config
from tutor import exceptions, fmt, hooks, utils

from . import __version__, kafka

HERE = os.path.dirname(__file__)
PATCHES = os.path.join(HERE, "patches")
TEMPLATES = os.path.join(HERE, "templates")
# Carried byte-for-byte (staged by scripts/stage-tutor-plugin.sh): the service's build context, and
# the LMS plugin's source inside the openedx image's build context. Their TypeScript and Python hold
# `{{`, `{%` and `{#`, which Jinja would otherwise take for its own.
SERVICE_CONTEXT = "course-access-groups/build/course-access-groups/"
LMS_PLUGIN_CONTEXT = "build/openedx/course-access-groups-openedx/"
UNRENDERED = (SERVICE_CONTEXT, LMS_PLUGIN_CONTEXT)
# The images' namespace under Tutor's DOCKER_REGISTRY. Tutor's own are under overhangio/, which
# Tutor's authors own on Docker Hub; this project owns no namespace there, and any other one could
# be registered by someone else, whose image a pull (or compose starting a missing image) would
# then run. library/ is Docker's own on Docker Hub (a pull fails, a push is refused) and a plain
# path elsewhere (Harbor's default project), where DOCKER_REGISTRY moves both images with Tutor's.
NAMESPACE = "library/"


hooks.Filters.CONFIG_DEFAULTS.add_items([
    ("COURSE_ACCESS_GROUPS_VERSION", __version__),
    # The images' names are defaults, as tutor-notes names NOTES_DOCKER_IMAGE: Tutor renders them at
    # each load and never writes them to config.yml, so they follow DOCKER_REGISTRY and an upgrade of
    # Tutor or of this plugin, and a name an operator sets (`config save --set`) stays theirs.
    # The service's image, built by `tutor images build course-access-groups` (and by `tutor local
    # launch`) from the build context this package carries; pushed and pulled under DOCKER_REGISTRY.
    ("COURSE_ACCESS_GROUPS_DOCKER_IMAGE", "{{ DOCKER_REGISTRY }}" + NAMESPACE + "course-access-groups:{{ COURSE_ACCESS_GROUPS_VERSION }}"),
    # The openedx image gets a name of its own: it is built here (with the LMS plugin this package
    # carries, hence this package's version), so neither `tutor images pull` nor `tutor local launch
    # -p` may put the stock overhangio/openedx back. Tutor's own default of the same name comes
    # first (config.get_defaults is a dict of the filter's items: the last one wins).
    ("DOCKER_IMAGE_OPENEDX", "{{ DOCKER_REGISTRY }}" + NAMESPACE + "course-access-groups-openedx:{{ TUTOR_VERSION }}-" + __version__),
    # Empty: the image is built from the build context this package carries. A git repository (and
    # a branch, tag or commit of it) instead: its sources fetched by BuildKit (`ADD <repo>#<version>`),
    # as Tutor's openedx image takes EDX_PLATFORM_REPOSITORY and EDX_PLATFORM_VERSION.
    ("COURSE_ACCESS_GROUPS_REPOSITORY", ""),
    ("COURSE_ACCESS_GROUPS_REPOSITORY_VERSION", "v{{ COURSE_ACCESS_GROUPS_VERSION }}"),
    # Extra requirements pip installs into the openedx image beside the carried LMS plugin.
    ("COURSE_ACCESS_GROUPS_CONFLUENT_KAFKA", "confluent-kafka[avro,schemaregistry]>=2.0,<3"),
    # Required: the organization of every learner of a single-site platform (the service's
    # DEFAULT_ORGANIZATION, the LMS plugin's ORGANIZATION). Empty stops rendering (`tutor config save`).
    ("COURSE_ACCESS_GROUPS_ORGANIZATION", ""),
    # The host Caddy routes to the service's API and admin console.
    ("COURSE_ACCESS_GROUPS_HOST", "course-access-groups.{{ LMS_HOST }}"),
    ("COURSE_ACCESS_GROUPS_MONGODB_DATABASE", "course_access_groups"),
    # Empty: a single-node Kafka and schema registry of the plugin's own (RUN_KAFKA).
    ("COURSE_ACCESS_GROUPS_RUN_KAFKA", True),
    ("COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS", "{% if COURSE_ACCESS_GROUPS_RUN_KAFKA %}course-access-groups-kafka:9092{% endif %}"),
    ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL",
     "{% if COURSE_ACCESS_GROUPS_RUN_KAFKA %}http://course-access-groups-registry:8080/apis/ccompat/v7{% endif %}"),
    # The versions the project's local stack runs and its tests use (scripts/kafka, scripts/registry).
    ("COURSE_ACCESS_GROUPS_KAFKA_DOCKER_IMAGE", "apache/kafka:3.9.1"),
    ("COURSE_ACCESS_GROUPS_REGISTRY_DOCKER_IMAGE", "apicurio/apicurio-registry-mem:2.4.2.Final"),
    # An external Kafka's security, for the service (src/kafka-security.ts) and the LMS's producer
    # (edx-event-bus-kafka), checked together at render (kafka.py). TLS, and its CA as PEM text when
    # not a public one (the service's KAFKA_SSL_CA_FILE; the LMS's library has no setting for it).
    ("COURSE_ACCESS_GROUPS_KAFKA_SSL", False),
    ("COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT", ""),
    # The service's SASL user: plain, scram-sha-256 or scram-sha-512.
    ("COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM", ""),
    ("COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME", ""),
    ("COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD", ""),
    # The LMS's and Studio's: edx-event-bus-kafka's EVENT_BUS_KAFKA_API_KEY and _API_SECRET (the
    # Confluent API key pair, SASL PLAIN over TLS, its only secured form); the service's own user
    # when that is PLAIN, else a PLAIN user of the LMS's own.
    ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY",
     "{% if COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM|lower == 'plain' %}{{ COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME }}{% endif %}"),
    ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET",
     "{% if COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM|lower == 'plain' %}{{ COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD }}{% endif %}"),
    # The schema registry's basic auth (a Confluent API key pair): the service's
    # SCHEMA_REGISTRY_USERNAME/_PASSWORD, the LMS's EVENT_BUS_KAFKA_SCHEMA_REGISTRY_API_KEY/_SECRET.
    ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME", ""),
    ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD", ""),
    # EVENT_BUS_TOPIC_PREFIX of the LMS and Studio: topics are <prefix>-user-lifecycle and so on.
    ("COURSE_ACCESS_GROUPS_TOPIC_PREFIX", "openedx"),
    # The LMS user (not staff, no password) whose LMS-signed tokens the LMS plugin's calls carry,
    # with the service role; the init task creates it.
    ("COURSE_ACCESS_GROUPS_SERVICE_USERNAME", "course_access_groups_service"),
    ("COURSE_ACCESS_GROUPS_SERVICE_EMAIL", "course_access_groups_service@openedx"),
    # The console's sign-in through the LMS: the OAuth2 application (authorization code, confidential)
    # the init task creates for the service, owned by the service user, as tutor-discovery's "-sso" one.
    ("COURSE_ACCESS_GROUPS_OAUTH2_KEY_SSO", "course-access-groups-sso"),
    # False: the service runs elsewhere (its Helm chart, deploy/helm/): no service containers,
    # Deployments or Caddy route here; the LMS calls it at SERVICE_URL and both share the Kafka.
    ("COURSE_ACCESS_GROUPS_RUN_SERVICE", True),
    # Where the LMS plugin calls the service's API (its COURSE_ACCESS_GROUPS["SERVICE_URL"]).
    ("COURSE_ACCESS_GROUPS_SERVICE_URL", "http://course-access-groups-api:8000"),
    # `tutor k8s`: the roles' replicas (as the chart's defaults: two API pods, one consumer) and the
    # own Kafka's volume.
    ("COURSE_ACCESS_GROUPS_API_REPLICAS", 2),
    ("COURSE_ACCESS_GROUPS_CONSUMER_REPLICAS", 1),
    ("COURSE_ACCESS_GROUPS_KAFKA_VOLUME_SIZE", "5Gi"),
])

hooks.Filters.CONFIG_UNIQUE.add_items([
    ("COURSE_ACCESS_GROUPS_JWT_SECRET", "{{ 48|random_string }}"),
    # The OAuth2 application's client secret: the LMS and the service both hold it (the service posts
    # it with the code it exchanges), made once as tutor-discovery makes DISCOVERY_OAUTH2_SECRET_SSO.
    ("COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO", "{{ 48|random_string }}"),
])

# Release 0.1.0 wrote the openedx image's name into config.yml (a CONFIG_OVERRIDES item, which Tutor
# renders and saves), where it outlived upgrades. A value of exactly the form it wrote,
# `course-access-groups-openedx:<Tutor X.Y.Z>-<plugin X.Y.Z>`, is taken as that release's, not the
# operator's, and removed from config.yml, so the default above applies; any other value is kept.
FROZEN_OPENEDX_IMAGE = re.compile(r"course-access-groups-openedx:\d+\.\d+\.\d+-\d+\.\d+\.\d+")


# Low priority: this module is imported by Tutor's own PROJECT_ROOT_READY callback (which loads the
# enabled plugins), and a callback added after it runs in the same pass, before any command loads
# the configuration.
@hooks.Actions.PROJECT_ROOT_READY.add(priority=hooks.priorities.LOW)
def _forget_the_openedx_image_name_an_earlier_release_wrote(root):
    path = tutor_config.config_path(root)
    if not os.path.exists(path):
        return
    saved = tutor_config.get_yaml_file(path)
    value = saved.get("DOCKER_IMAGE_OPENEDX")
    if not isinstance(value, str) or not FROZEN_OPENEDX_IMAGE.fullmatch(value):
        return
    del saved["DOCKER_IMAGE_OPENEDX"]
    fmt.echo_info(f"Course Access Groups: removing DOCKER_IMAGE_OPENEDX={value} from config.yml, written there by "
                  "release 0.1.0; the openedx image's name now follows Tutor's and the plugin's versions")
    tutor_config.save_config_file(root, saved)


ORGANIZATION_REQUIRED = (
    "COURSE_ACCESS_GROUPS_ORGANIZATION is required: the organization of this platform's learners and courses in "
    "Course Access Groups, e.g. `tutor config save --set COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX`"
)
_ALERTED = []


def _enabling_plugins():
    """Whether this is `tutor plugins enable` (which saves the environment before a setting can be given)."""
    context = click.get_current_context(silent=True)
    while context is not None:
        if context.info_name == "enable" and context.parent is not None and context.parent.info_name == "plugins":
            return True
        context = context.parent
    return False


def required_organization(organization):
    """The organization, for the templates that render it (the service's and the LMS plugin's settings).

    Only rendering needs it, so only rendering stops without it (`config save`, `launch`): every other
    command (`config printvalue`, `images printtag`, `local status`...) loads the configuration as it
    is. It stops with SystemExit, whose message Python prints as one line: a TutorError raised here
    would come after Tutor's dump of the whole patch being rendered and the template's name, and
    anything raised from a hook (CONFIG_LOADED) after a line with the callback's repr. `plugins
    enable` renders before a setting can be given: it says so once and renders it empty.
    """
    if str(organization or "").strip():
        return organization
    if not _enabling_plugins():
        raise SystemExit(f"Error: {ORGANIZATION_REQUIRED}")
    if not _ALERTED:
        _ALERTED.append(True)
        fmt.echo_alert(ORGANIZATION_REQUIRED)
    return ""


hooks.Filters.ENV_TEMPLATE_ROOTS.add_item(TEMPLATES)
# env/plugins/course-access-groups/build/course-access-groups: the service's build context. The LMS
# plugin's source is under the core's build/ target already (env/build/openedx/).
hooks.Filters.ENV_TEMPLATE_TARGETS.add_items([("course-access-groups/build", "plugins"), ("course-access-groups/apps", "plugins")])


@hooks.Filters.IS_FILE_RENDERED.add()
def _copy_carried_sources_as_they_are(rendered, path):
    return rendered and not path.startswith(UNRENDERED)


IMAGE = "course-access-groups"


@hooks.Filters.IMAGES_BUILD.add()
def _build_the_service_image(images, config):
    """From the carried build context, or from the git repository the operator named (its own rendered folder)."""
    context = "course-access-groups-git" if str(config.get("COURSE_ACCESS_GROUPS_REPOSITORY") or "").strip() else IMAGE
    images.append((IMAGE, ("plugins", "course-access-groups", "build", context), "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}", ()))
    return images


hooks.Filters.IMAGES_PULL.add_item((IMAGE, "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"))
hooks.Filters.IMAGES_PUSH.add_item((IMAGE, "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"))


@hooks.Filters.IMAGES_BUILD_REQUIRED.add()
def _build_at_launch(images, context_name):
    """`tutor local launch` builds the service's image and the openedx image with the LMS plugin (dev: the service's)."""
    wanted = ("openedx", IMAGE) if context_name == "local" else (IMAGE,)
    if not _runs_the_service():
        wanted = tuple(name for name in wanted if name != IMAGE)
    return images + [name for name in wanted if name not in images]


def _runs_the_service():
    """COURSE_ACCESS_GROUPS_RUN_SERVICE of the project the current command loaded (true when none is)."""
    context = click.get_current_context(silent=True)
    root = getattr(getattr(context, "obj", None), "root", None) if context else None
    if not root:
        return True
    value = tutor_config.load_full(root).get("COURSE_ACCESS_GROUPS_RUN_SERVICE", True)
    return value is True or str(value).lower() in ("true", "1", "yes")


# `tutor local do init` (and launch): brings existing courses and learners to the service.
with open(os.path.join(TEMPLATES, "course-access-groups", "tasks", "lms", "init"), encoding="utf-8") as task:
    hooks.Filters.CLI_DO_INIT_TASKS.add_item(("lms", task.read()))


def lms_jwk_set(private_key):
    """The LMS's JWT_PUBLIC_SIGNING_JWK_SET, the very string Tutor renders into the LMS from JWT_RSA_PRIVATE_KEY.

    As Tutor's settings partial common_all.py writes it (Tutor 20, 21 and 22): the key's public half,
    kid `openedx`, through Tutor's own rsa_import_key and long_to_base64, dumped by json.dumps.
    """
    key = utils.rsa_import_key(private_key)
    return json.dumps({"keys": [{"kid": "openedx", "kty": "RSA", "e": utils.long_to_base64(key.e),
                                 "n": utils.long_to_base64(key.n)}]})


def lms_jwt_issuers(issuer, audience):
    """The service's LMS_JWT_ISSUERS: the LMS's JWT_ISSUERS entry (Tutor's issuer and audience) without its secret."""
    return json.dumps([{"ISSUER": str(issuer), "AUDIENCE": str(audience)}])


def userinfo(text):
    """A MongoDB URL's user name or password, every reserved character escaped (Jinja's urlencode keeps `/`)."""
    return quote(str(text), safe="")


def checksum(text):
    """The SHA-256 of a rendered value: a pod template annotation that changes when the value does."""
    return hashlib.sha256(str(text).encode()).hexdigest()


def shell_word(text):
    """A value as one word of the init task's `sh -e -c` script: quoted, so `$`, quotes and spaces stay as they are."""
    return shlex.quote(str(text))


GIT_SOURCES_STAGE = "course-access-groups-sources"


def git_dockerfile(repository, version):
    """The carried Dockerfile with its sources from a git repository: a first stage fetches them with
    BuildKit's `ADD <repository>#<version>` (as Tutor's openedx Dockerfile fetches edx-platform), and
    every COPY from the build context copies from that stage instead."""
    repository, version = str(repository).strip(), str(version).strip()
    if not repository:
        return "# Unused: COURSE_ACCESS_GROUPS_REPOSITORY is empty, so the image is built from the carried build context.\n"
    for name, value in (("COURSE_ACCESS_GROUPS_REPOSITORY", repository), ("COURSE_ACCESS_GROUPS_REPOSITORY_VERSION", version)):
        if not value or any(c.isspace() for c in value) or "#" in value:
            raise exceptions.TutorError(f"{name} must be one word without '#' (a git URL, then a branch, tag or commit): {value!r}")
    with open(os.path.join(TEMPLATES, SERVICE_CONTEXT, "Dockerfile"), encoding="utf-8") as carried:
        lines = carried.read().splitlines()
    first_stage = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    while first_stage > 1 and lines[first_stage - 1].startswith("#"):  # with the first stage's comment
        first_stage -= 1
    sources = [
        "# The service's sources: COURSE_ACCESS_GROUPS_REPOSITORY at COURSE_ACCESS_GROUPS_REPOSITORY_VERSION (BuildKit's",
        "# `ADD <git URL>#<ref>`; `tutor images build --build-arg` may name others).",
        f"FROM scratch AS {GIT_SOURCES_STAGE}",
        f"ARG COURSE_ACCESS_GROUPS_REPOSITORY={repository}",
        f"ARG COURSE_ACCESS_GROUPS_REPOSITORY_VERSION={version}",
        "ADD --keep-git-dir=false $COURSE_ACCESS_GROUPS_REPOSITORY#$COURSE_ACCESS_GROUPS_REPOSITORY_VERSION /",
        "",
    ]
    body = [re.sub(r"^COPY (?!--from=)", f"COPY --from={GIT_SOURCES_STAGE} ", line) for line in lines[first_stage:]]
    return "\n".join(lines[:first_stage] + sources + body) + "\n"


def compose_value(text):
    """A value for docker compose's YAML, as a JSON string (valid YAML) with `$` escaped from its interpolation."""
    return json.dumps(str(text)).replace("$", "$$")


hooks.Filters.ENV_TEMPLATE_FILTERS.add_items([
    ("course_access_groups_lms_jwk_set", lms_jwk_set),
    ("course_access_groups_lms_jwt_issuers", lms_jwt_issuers),
    ("course_access_groups_checksum", checksum),
    ("course_access_groups_userinfo", userinfo),
    ("course_access_groups_compose", compose_value),
    ("course_access_groups_shell", shell_word),
    ("course_access_groups_git_dockerfile", git_dockerfile),
    ("course_access_groups_organization", required_organization),
    ("course_access_groups_kafka_brokers", kafka.checked_brokers),
    ("course_access_groups_kafka_environment", kafka.kafka_environment),
    ("course_access_groups_pem", kafka.pem_certificates),
])

for path in sorted(glob(os.path.join(PATCHES, "*"))):
    with open(path, encoding="utf-8") as patch_file:
        hooks.Filters.ENV_PATCHES.add_item((os.path.basename(path), patch_file.read()))
