"""
The Tutor plugin with the real tutor package: installed as an operator installs it, enabled, and
`tutor config save` run in a temporary TUTOR_ROOT; then what Tutor rendered is checked as the
platform would use it: docker-compose's own validation (`docker-compose config -q`), the
Kubernetes API's schemas (kubernetes-validate, offline), and the rendered Python settings
executed, in the LMS's order, over the LMS plugin's own settings (tests/lms_settings_probe.py,
run by the LMS plugin's Python 3.11 environment, given as LMS_PYTHON).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import kubernetes_validate
import pytest
import yaml
# The Tutor of this environment (the test's Python), whose version the openedx image's name carries.
from tutor.__about__ import __version__ as TUTOR_VERSION

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT.parent.parent
# The Kubernetes release whose API schemas the manifests are checked against.
KUBERNETES = "1.30"


def run_tutor(root, *args, python=sys.executable, site=None):
    """`tutor` with this environment's Tutor and plugin, or another Python's Tutor (`python`) with the plugin in `site`."""
    env = {**os.environ, "TUTOR_ROOT": str(root), "TUTOR_PLUGINS_ROOT": str(root / "plugins")}
    if site:
        env["PYTHONPATH"] = str(site)
    # The `tutor` command's entry point (the package has no __main__; the environment's cached
    # console script names the folder it was made in).
    command = "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())"
    # Run outside the source tree: `python -c` puts its folder first on sys.path, where the plugin's
    # source would shadow the wheel's.
    return subprocess.run([python, "-c", command, *args], env=env, capture_output=True, text=True, cwd=root.parent)


def tutor(root, *args, **kwargs):
    done = run_tutor(root, *args, **kwargs)
    assert done.returncode == 0, f"tutor {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The plugin installed from its wheel (TUTOR_PLUGIN_WHEEL, built by scripts/tutor-plugin-wheel.sh) where this Python finds it."""
    wheel = os.environ.get("TUTOR_PLUGIN_WHEEL")
    if not wheel:
        wheel = subprocess.run(["bash", str(REPO / "scripts" / "tutor-plugin-wheel.sh"), sys.executable,
                                str(tmp_path_factory.mktemp("wheel"))], check=True, capture_output=True, text=True).stdout.strip()
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-index", "--target", str(site), wheel], check=True, capture_output=True, text=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return SimpleNamespace(site=site, wheel=wheel, package=site / "tutorcourse_access_groups")


_SAVED = {}
_ENABLED = []


def saved(installed, tmp_path, *settings, fresh=False):
    """A TUTOR_ROOT with the plugin enabled and `config save` run with an organization and `settings`.

    Roots are shared by the tests that read the same settings (each tutor command takes seconds);
    `fresh` for a test that changes its root. `tutor plugins enable` runs once (the first root),
    and later roots start as a copy of what it left: it only writes config.yml (the plugin in
    PLUGINS, Tutor's generated secrets) and renders env/, which `config save` renders again; it
    took two seconds of CPU a root, most of it making the RSA key.
    """
    if not fresh and settings in _SAVED:
        return _SAVED[settings]
    root = tmp_path / "tutor"
    if _ENABLED:
        shutil.copytree(_ENABLED[0], root)
    else:
        tutor(root, "plugins", "enable", "course-access-groups")
        _ENABLED.append(tmp_path / "enabled")
        shutil.copytree(root, _ENABLED[0])
    tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX",
          *[arg for s in settings for arg in ("--set", s)])
    if not fresh:
        _SAVED[settings] = root
    return root


EXTERNAL_KAFKA = (
    "COURSE_ACCESS_GROUPS_RUN_KAFKA=false",
    "COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS=kafka-1.example.org:9092",
    "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL=https://registry.example.org",
)


def git_ignored(path):
    """What git ignores is never staged: bytecode, and the metadata a build of the LMS plugin (as
    the release makes before the tests run) leaves in its src/."""
    return any(part == "__pycache__" or part.endswith(".egg-info") for part in path.parts)


def tree_hash(folder, only=None):
    """The SHA-256 of a folder's files (or of its paths `only`): their paths and bytes, in path order."""
    digest = hashlib.sha256()
    folder = Path(folder)
    tops = [folder / name for name in only] if only else [folder]
    files = [p for top in tops for p in ([top] if top.is_file() else top.rglob("*")) if p.is_file()]
    for path in sorted(p for p in files if not git_ignored(p)):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def compose(root, *args):
    """docker-compose on the rendered files (with the production overrides), as Tutor runs it."""
    return subprocess.run(["docker-compose", "-f", "docker-compose.yml", "-f", "docker-compose.prod.yml", *args],
                          cwd=root / "env" / "local", check=True, capture_output=True, text=True).stdout


def config(root):
    return yaml.safe_load((root / "config.yml").read_text())


def k8s_objects(root, manifest):
    return [doc for doc in yaml.safe_load_all((root / "env" / "k8s" / manifest).read_text()) if doc]


def test_config_save_makes_the_jwt_secret_once_and_keeps_it(installed, tmp_path):
    root = saved(installed, tmp_path, fresh=True)
    secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    assert len(secret) == 48
    tutor(root, "config", "save")
    assert config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"] == secret
    assert config(root)["COURSE_ACCESS_GROUPS_ORGANIZATION"] == "AcmeX"


@pytest.mark.parametrize("own_kafka", [True, False], ids=["own-kafka", "external-kafka"])
def test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb(installed, tmp_path, own_kafka):
    root = saved(installed, tmp_path, *(() if own_kafka else EXTERNAL_KAFKA))
    local = root / "env" / "local"
    subprocess.run(["docker-compose", "-f", "docker-compose.yml", "-f", "docker-compose.prod.yml", "config", "-q"],
                   cwd=local, check=True, capture_output=True, text=True)
    services = yaml.safe_load((local / "docker-compose.yml").read_text())["services"]
    secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    for role in ("api", "consumer"):
        env = services[f"course-access-groups-{role}"]["environment"]
        assert env["SERVICE_ROLE"] == role
        assert env["MONGO_URL"] == "mongodb://mongodb:27017/"
        assert env["JWT_SECRET"] == secret
        assert json.loads(env["LMS_JWT_ISSUERS"]) == [lms_jwt_issuer(root)]
        assert env["DEFAULT_ORGANIZATION"] == "AcmeX"
        assert env["KAFKA_TOPICS"] == "openedx-user-account-activated,openedx-user-lifecycle,openedx-course-catalog"
        assert env["KAFKA_BROKERS"] == ("course-access-groups-kafka:9092" if own_kafka else "kafka-1.example.org:9092")
    assert ("course-access-groups-kafka" in services) is own_kafka
    assert ("course-access-groups-registry" in services) is own_kafka


@pytest.mark.parametrize("own_kafka", [True, False], ids=["own-kafka", "external-kafka"])
def test_the_rendered_kubernetes_manifests_match_the_api_schemas(installed, tmp_path, own_kafka):
    root = saved(installed, tmp_path, *(() if own_kafka else EXTERNAL_KAFKA))
    names = set()
    for manifest in ("deployments.yml", "services.yml", "volumes.yml"):
        for doc in k8s_objects(root, manifest):
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
            names.add((doc["kind"], doc["metadata"]["name"]))
    ours = {n for n in names if n[1].startswith("course-access-groups")}
    expected = {("Deployment", "course-access-groups-api"), ("Deployment", "course-access-groups-consumer"),
                ("Service", "course-access-groups-api"), ("Secret", "course-access-groups")}
    if own_kafka:
        expected |= {(kind, f"course-access-groups-{name}") for kind in ("Deployment", "Service") for name in ("kafka", "registry")}
        expected |= {("PersistentVolumeClaim", "course-access-groups-kafka")}
    assert ours == expected


def test_the_services_credentials_reach_its_pods_from_a_secret_never_a_deployments_env(installed, tmp_path):
    root = saved(installed, tmp_path, "MONGODB_USERNAME=cag", "MONGODB_PASSWORD=p@ss/w:rd", fresh=True)
    objects = k8s_objects(root, "deployments.yml")
    [secret] = [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "course-access-groups"]
    jwt_secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    # The password URL-encoded, so the driver reads it back whole.
    oauth_secret = config(root)["COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO"]
    assert secret["stringData"] == {"MONGO_URL": "mongodb://cag:p%40ss%2Fw%3Ard@mongodb:27017/?authSource=admin",
                                    "JWT_SECRET": jwt_secret, "LMS_OAUTH_CLIENT_SECRET": oauth_secret}
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    rendered = yaml.safe_dump(deployments)
    for value in (jwt_secret, oauth_secret, "p%40ss", "p@ss"):
        assert value not in rendered
    ours = {d["metadata"]["name"]: d for d in deployments if d["metadata"]["name"].startswith("course-access-groups")}
    for role in ("api", "consumer"):
        pod = ours[f"course-access-groups-{role}"]["spec"]["template"]
        [container] = pod["spec"]["containers"]
        assert container["envFrom"] == [{"secretRef": {"name": "course-access-groups"}}]
        assert {e["name"] for e in container["env"]}.isdisjoint({"MONGO_URL", "JWT_SECRET", "LMS_OAUTH_CLIENT_SECRET"})
        assert {"LMS_JWT_ISSUERS", "LMS_JWT_PUBLIC_SIGNING_JWK_SET"} <= {e["name"] for e in container["env"]}
        checksum = pod["metadata"]["annotations"]["checksum/secret"]
    # A new secret rolls the pods: the annotation follows the Secret's data.
    tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_JWT_SECRET=another-secret-of-enough-length")
    pod = next(o for o in k8s_objects(root, "deployments.yml") if o["metadata"]["name"] == "course-access-groups-api")
    assert pod["spec"]["template"]["metadata"]["annotations"]["checksum/secret"] != checksum
    # Every pod of the plugin's own meets PodSecurity "restricted" (test:k8s has a real API server admit them).
    for deployment in ours.values():
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] > 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in spec["containers"]:
            assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def openedx_install_lines(dockerfile):
    """The plugin's lines of the rendered openedx Dockerfile (its post-python-requirements patch)."""
    start = dockerfile.index("# Course Access Groups: the LMS plugin")
    return dockerfile[start:dockerfile.index("\n\n", start)]


# Finding 1: the LMS plugin comes from the build context the Tutor plugin renders (no PyPI, no host path).
def test_the_openedx_image_installs_the_lms_plugin_it_carries_and_confluent_kafka(installed, tmp_path):
    root = saved(installed, tmp_path)
    build = root / "env" / "build" / "openedx"
    dockerfile = (build / "Dockerfile").read_text()
    lines = openedx_install_lines(dockerfile)
    assert "COPY course-access-groups-openedx /tmp/course-access-groups-openedx" in lines
    assert "${PIP_COMMAND:-pip} install 'confluent-kafka[avro,schemaregistry]>=2.0,<3' /tmp/course-access-groups-openedx" in lines
    # After edx-platform's requirements, under the setuptools Tutor pins (69.1.1 in Tutor 20 and 21;
    # Tutor 22 pins 80.9.0 as a build constraint).
    pin = re.search(r"setuptools==\d+\.\d+\.\d+", dockerfile)
    assert pin and pin.start() < dockerfile.index("requirements/edx/base.txt") < dockerfile.index(lines)
    # The LMS plugin's source, byte for byte as the wheel carries it (Jinja left its `{{`/`{%` alone).
    carried = installed.package / "templates" / "build" / "openedx" / "course-access-groups-openedx"
    assert (carried / "pyproject.toml").is_file() and (carried / "src" / "course_access_groups_openedx" / "apps.py").is_file()
    assert tree_hash(build / "course-access-groups-openedx") == tree_hash(carried)
    assert tree_hash(carried) == tree_hash(REPO / "integrations" / "openedx", only=("pyproject.toml", "README.md", "src"))


# Finding 2: the service's image is Tutor's to build, pull and push; launch builds it and the openedx
# image, which has a name of the plugin's own.
def test_tutor_builds_the_service_image_from_the_context_it_renders_and_names_the_openedx_image(installed, tmp_path):
    root = saved(installed, tmp_path)
    version = plugin_version(installed)
    # Under Tutor's DOCKER_REGISTRY, named from this Tutor's and this plugin's versions, as each load
    # renders them: not written into config.yml, where an upgrade would not move them (issue 46).
    assert tutor(root, "images", "printtag", "course-access-groups").strip() == f"docker.io/library/course-access-groups:{version}"
    openedx = tutor(root, "images", "printtag", "openedx").strip()
    assert openedx == f"docker.io/library/course-access-groups-openedx:{TUTOR_VERSION}-{version}"
    assert not {"DOCKER_IMAGE_OPENEDX", "COURSE_ACCESS_GROUPS_DOCKER_IMAGE"} & set(config(root))
    services = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]
    assert services["lms"]["image"] == services["cms"]["image"] == openedx
    hooks = json.loads(python_in_tutor(root, """
from tutor import hooks
print(json.dumps({
    "required": hooks.Filters.IMAGES_BUILD_REQUIRED.apply([], "local"),
    "build": [[n, list(p), t] for n, p, t, _ in hooks.Filters.IMAGES_BUILD.iterate(config)],
    "pull": [list(i) for i in hooks.Filters.IMAGES_PULL.iterate(config)],
    "push": [list(i) for i in hooks.Filters.IMAGES_PUSH.iterate(config)],
    "init": [list(t) for t in hooks.Filters.CLI_DO_INIT_TASKS.iterate()],
}))"""))
    assert {"openedx", "course-access-groups"} <= set(hooks["required"])
    assert ["course-access-groups", ["plugins", "course-access-groups", "build", "course-access-groups"],
            "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"] in hooks["build"]
    assert ["course-access-groups", "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"] in hooks["pull"]
    assert ["course-access-groups", "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"] in hooks["push"]
    # The build context, byte for byte as the wheel carries it and as the repository has it.
    context = root / "env" / "plugins" / "course-access-groups" / "build" / "course-access-groups"
    carried = installed.package / "templates" / "course-access-groups" / "build" / "course-access-groups"
    assert tree_hash(context) == tree_hash(carried)
    assert tree_hash(carried) == tree_hash(REPO, only=("Dockerfile", "package.json", "package-lock.json", "tsconfig.json",
                                                       "tsconfig.build.json", "src", "consumers", "scripts/build-console.cjs"))
    if os.environ.get("CAG_CONTEXT_HASH_FILE"):  # compared across Tutor versions by the Jest test
        Path(os.environ["CAG_CONTEXT_HASH_FILE"]).write_text(tree_hash(context))


# Finding 3: the own Kafka's data folder is given to its user by Tutor's permissions service.
def test_the_own_kafkas_data_folder_is_made_writable_by_tutors_permissions_service(installed, tmp_path):
    root = saved(installed, tmp_path)
    services = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]
    assert "../../data/course-access-groups/kafka:/mounts/course-access-groups-kafka" in services["permissions"]["volumes"]
    assert "setowner 1000 /mounts/course-access-groups-kafka" in (root / "env" / "apps" / "permissions" / "setowners.sh").read_text()
    kafka = services["course-access-groups-kafka"]
    assert kafka["user"] == "1000:1000"
    assert kafka["depends_on"] == {"permissions": {"condition": "service_completed_successfully"}}


# Finding 4: Teak's Studio sends its catalog events; existing courses and learners come in by an init task.
def test_studio_sends_catalog_events_on_teak_and_init_brings_existing_courses_and_learners(installed, tmp_path):
    root = saved(installed, tmp_path)
    for service in ("lms", "cms"):
        settings = (root / "env" / "apps" / "openedx" / "settings" / service / "production.py").read_text()
        assert "\nSEND_CATALOG_INFO_SIGNAL = True\n" in settings
    tasks = json.loads(python_in_tutor(root, "from tutor import hooks\nprint(json.dumps([list(t) for t in hooks.Filters.CLI_DO_INIT_TASKS.iterate()]))"))
    ours = [command for service, command in tasks if "course_access_groups" in command]
    assert len(ours) == 1 and ["lms", ours[0]] in tasks
    assert "./manage.py lms course_access_groups_sync" in rendered_init_task(root, ours[0])


# Finding 5: installed beside any of Tutor 20, 21 and 22, pip keeps the Tutor it has.
def test_installing_the_wheel_beside_this_tutor_changes_no_tutor(installed, tmp_path):
    report = tmp_path / "report.json"
    # --no-index: anything pip would fetch (another Tutor) fails the install instead.
    # Without the tests' PYTHONPATH, where the plugin is installed already.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--disable-pip-version-check",
                           "--report", str(report), installed.wheel], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert names == ["tutor-contrib-course-access-groups"]


# Finding 6: no silent empty organization; and (issue 46, item 5) a missing one stops only rendering,
# with one line naming the setting, never every command with a function's repr.
def test_a_missing_organization_stops_rendering_with_one_line_and_no_other_command(installed, tmp_path):
    root = tmp_path / "tutor"
    enabled = run_tutor(root, "plugins", "enable", "course-access-groups")
    assert enabled.returncode == 0, enabled.stderr
    assert (enabled.stdout + enabled.stderr).count("COURSE_ACCESS_GROUPS_ORGANIZATION is required") == 1
    # Commands that render nothing work: the issue's examples, with what Tutor knows.
    from tutor.config import load_defaults
    assert tutor(root, "config", "printvalue", "LMS_HOST").strip() == load_defaults()["LMS_HOST"]
    assert tutor(root, "images", "printtag", "openedx").strip()
    assert tutor(root, "images", "printtag", "course-access-groups").strip()
    assert tutor(root, "config", "printvalue", "COURSE_ACCESS_GROUPS_ORGANIZATION").strip() == ""
    # Rendering stops: exit 1, one line naming the setting (beside Tutor's own lines: config.yml saved
    # first, and the warning about running as root).
    done = run_tutor(root, "config", "save")
    assert done.returncode == 1
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line and "running Tutor as root" not in line and not line.startswith("Configuration saved to ")]
    assert lines == ["Error: COURSE_ACCESS_GROUPS_ORGANIZATION is required: the organization of this platform's learners and "
                     "courses in Course Access Groups, e.g. `tutor config save --set COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX`"]
    tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX")
    lms = (root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py").read_text()
    assert '"ORGANIZATION": "AcmeX",' in lms


# Finding 8: health-conditioned start, a route for browsers, and secrets with `$` passed as they are.
def test_compose_waits_for_healthy_services_routes_a_host_and_keeps_dollar_signs(installed, tmp_path):
    secret = "a$b$$c${HOME}d-long-enough-secret-0123456789"
    root = saved(installed, tmp_path, f"COURSE_ACCESS_GROUPS_JWT_SECRET={secret}", "MONGODB_USERNAME=cag",
                 "MONGODB_PASSWORD=pa$$word")
    rendered = yaml.safe_load(compose(root, "config"))["services"]
    for role in ("api", "consumer"):
        service = rendered[f"course-access-groups-{role}"]
        # docker-compose prints values escaped again ($ as $$): read back, the value is the secret.
        assert service["environment"]["JWT_SECRET"].replace("$$", "$") == secret
        assert service["environment"]["MONGO_URL"] == "mongodb://cag:pa%24%24word@mongodb:27017/?authSource=admin"
        assert "/readyz" in " ".join(service["healthcheck"]["test"])
        assert service["depends_on"]["course-access-groups-kafka"] == {"condition": "service_healthy"}
        assert service["depends_on"]["course-access-groups-registry"] == {"condition": "service_healthy"}
    for name in ("course-access-groups-kafka", "course-access-groups-registry"):
        assert rendered[name]["healthcheck"]["test"]
    caddyfile = (root / "env" / "apps" / "caddy" / "Caddyfile").read_text()
    assert 'course-access-groups.local.openedx.io{$default_site_port} {\n    import proxy "course-access-groups-api:8000"' in caddyfile
    # The LMS's trust values, JSON, reach the service as they are.
    env = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]["course-access-groups-api"]["environment"]
    for name in ("LMS_JWT_ISSUERS", "LMS_JWT_PUBLIC_SIGNING_JWK_SET"):
        assert rendered["course-access-groups-api"]["environment"][name].replace("$$", "$") == env[name]
        json.loads(env[name])


def plugin_version(installed):
    """The installed plugin's __version__ (the LMS plugin and the images carry the same)."""
    return re.search(r'__version__ = "([^"]+)"', (installed.package / "__init__.py").read_text()).group(1)


def python_in_tutor(root, code):
    """Python run with the project's configuration loaded and its plugins enabled, as a tutor command has them."""
    # As tutor's main() and its root option do: plugins discovered, the project's enabled ones loaded.
    prelude = ("import json, sys\nfrom tutor import config as tutor_config, hooks\n"
               f"hooks.Actions.CORE_READY.do()\nhooks.Actions.PROJECT_ROOT_READY.do({str(root)!r})\n"
               f"config = tutor_config.load({str(root)!r})\n")
    env = {**os.environ, "TUTOR_ROOT": str(root), "TUTOR_PLUGINS_ROOT": str(root / "plugins")}
    done = subprocess.run([sys.executable, "-c", prelude + code], env=env, capture_output=True, text=True, cwd=root.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout


def settings_blocks(production_py):
    """Tutor's common block from its Redis event bus lines to its end, and the plugin's LMS block, as rendered."""
    text = production_py.read_text()
    common = text[text.index("# edx-event-bus-redis settings"):text.index("######## End of settings common to LMS and CMS")]
    start = text.index("# Course Access Groups: the LMS plugin's settings")
    lms = text[start:text.index("\n}\n", start) + 3]
    return common, lms


def test_the_rendered_settings_leave_the_lms_on_kafka_with_the_services_topics_and_filters_first(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_TOPIC_PREFIX=prod")
    common, lms = settings_blocks(root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py")
    probe = subprocess.run(
        [os.environ["LMS_PYTHON"], str(Path(__file__).with_name("lms_settings_probe.py"))],
        input=json.dumps({"common": common, "lms": lms}), check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "integrations" / "openedx" / "src")},
    )
    final = json.loads(probe.stdout)
    assert final["EVENT_BUS_PRODUCER"] == "edx_event_bus_kafka.create_producer"
    assert final["EVENT_BUS_KAFKA_BOOTSTRAP_SERVERS"] == "course-access-groups-kafka:9092"
    assert final["EVENT_BUS_TOPIC_PREFIX"] == "prod"
    producer = final["EVENT_BUS_PRODUCER_CONFIG"]
    assert producer["org.openedx.learning.student.registration.completed.v1"]["user-lifecycle"]["enabled"] is True
    assert producer["org.openedx.learning.auth.session.login.completed.v1"]["user-lifecycle"]["enabled"] is True
    assert producer["org.openedx.content_authoring.course.catalog_info.changed.v1"] == {
        "course-catalog-info-changed": {"event_key_field": "catalog_info.course_key", "enabled": False},
        "course-catalog": {"event_key_field": "catalog_info.course_key", "enabled": True},
    }
    assert "org.openedx.learning.user.account.activated.v1" not in producer
    cag = final["COURSE_ACCESS_GROUPS"]
    assert cag["SERVICE_URL"] == "http://course-access-groups-api:8000" and cag["ORGANIZATION"] == "AcmeX"
    assert cag["ACTIVATION_TOPIC"] == "from-yaml"  # the YAML's keys survive the patch
    assert final["ready_errors"] == []  # the plugin's start-up checks pass on the final settings
    # No service token in the LMS: it signs its own calls as the service user the init task creates.
    assert "SERVICE_TOKEN" not in cag
    assert cag["SERVICE_USERNAME"] == "course_access_groups_service"
    # The LMS's /course_access_groups/ page links administrators to the console on the service's host.
    assert cag["PUBLIC_URL"] == "http://course-access-groups.local.openedx.io"


def rendered_init_task(root, task):
    """The init task's lines as Tutor renders them with the project's configuration."""
    return json.loads(python_in_tutor(root, f"from tutor import env\nprint(json.dumps(env.render_str(config, {task!r}).splitlines()))"))


def lms_jwt_issuer(root):
    """The issuer and audience Tutor rendered into the LMS's JWT_AUTH (the `iss` and `aud` the LMS signs)."""
    settings = (root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py").read_text()
    return {"ISSUER": re.search(r'\nJWT_AUTH\["JWT_ISSUER"\] = "([^"]+)"', settings).group(1),
            "AUDIENCE": re.search(r'\nJWT_AUTH\["JWT_AUDIENCE"\] = "([^"]+)"', settings).group(1)}


def lms_public_jwk_set(root):
    """The JWT_PUBLIC_SIGNING_JWK_SET string Tutor rendered into the LMS's settings (its own partial, evaluated)."""
    settings = (root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py").read_text()
    start = settings.index('JWT_AUTH["JWT_PUBLIC_SIGNING_JWK_SET"] = ')
    expression = settings[start:settings.index("\n)\n", start) + 2].split(" = ", 1)[1]
    return eval(expression, {"json": json})  # noqa: S307  pylint: disable=eval-used  (Tutor's own rendered json.dumps)


# Sign its calls with a key of the LMS's own; the service trusts that key: no LMS-service secret.
def test_the_service_trusts_the_lmss_own_tokens_and_the_lms_holds_no_service_token(installed, tmp_path):
    root = saved(installed, tmp_path)
    # Tutor's issuer (its LMS_HOST: local.openedx.io from Tutor 21, www.myopenedx.com in 20) and audience.
    assert lms_jwt_issuer(root)["ISSUER"] in ("http://local.openedx.io/oauth2", "http://www.myopenedx.com/oauth2")
    issuers = json.dumps([lms_jwt_issuer(root)])
    key_set = lms_public_jwk_set(root)
    assert json.loads(key_set)["keys"][0]["kid"] == "openedx"
    services = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]
    k8s = {o["metadata"]["name"]: o for o in k8s_objects(root, "deployments.yml")}
    for role in ("api", "consumer"):
        # The very string the LMS has, in compose and in the pods' env.
        env = services[f"course-access-groups-{role}"]["environment"]
        assert (env["LMS_JWT_ISSUERS"], env["LMS_JWT_PUBLIC_SIGNING_JWK_SET"]) == (issuers, key_set)
        [container] = k8s[f"course-access-groups-{role}"]["spec"]["template"]["spec"]["containers"]
        pod_env = {e["name"]: e.get("value") for e in container["env"]}
        assert (pod_env["LMS_JWT_ISSUERS"], pod_env["LMS_JWT_PUBLIC_SIGNING_JWK_SET"]) == (issuers, key_set)
    # Its key is the public half of Tutor's JWT_RSA_PRIVATE_KEY: a token the LMS signs with it
    # (RS512, no kid, as the LMS signs) verifies against the rendered set with PyJWT; one signed
    # with another key does not.
    verify = """
import json, sys, time, jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
given = json.load(sys.stdin)
issuer = json.loads(given["issuers"])[0]
claims = {"iss": issuer["ISSUER"], "aud": issuer["AUDIENCE"], "iat": int(time.time()), "exp": int(time.time()) + 300,
          "user_id": 1, "administrator": True, "version": "1.2.0"}
another = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
def verdict(token):
    for key in jwt.PyJWKSet.from_json(given["key_set"]).keys:
        try:
            return jwt.decode(token, key.key, algorithms=["RS512"], audience=issuer["AUDIENCE"], issuer=issuer["ISSUER"])["user_id"]
        except jwt.InvalidSignatureError:
            pass
    return "refused"
tokens = [jwt.encode(claims, private_key, algorithm="RS512") for private_key in (given["private_key"], another)]
print(json.dumps({"tokens": tokens, "verdicts": [verdict(token) for token in tokens]}))
"""
    done = subprocess.run([os.environ["LMS_PYTHON"], "-c", verify], check=True, capture_output=True, text=True,
                          input=json.dumps({"issuers": issuers, "key_set": key_set,
                                            "private_key": config(root)["JWT_RSA_PRIVATE_KEY"]}))
    signed = json.loads(done.stdout)
    assert signed["verdicts"] == [1, "refused"]
    # The service's own start-up parsers take the rendered values, and its verifier agrees.
    service = """
import { parseLmsIssuers, parseLmsKeySet } from './src/lms-jwt-settings';
import { createLmsTokenVerifier } from './src/http/lms-tokens';
const [issuers, keySet, ...tokens] = JSON.parse(process.argv[1]);
const verify = createLmsTokenVerifier(parseLmsIssuers(issuers), parseLmsKeySet(keySet));
Promise.all(tokens.map((t) => verify(t).then((p) => p.userId, () => 'refused'))).then((v) => console.log(JSON.stringify(v)));
"""
    done = subprocess.run([str(REPO / "node_modules" / ".bin" / "tsx"), "-e", service, json.dumps([issuers, key_set, *signed["tokens"]])],
                          cwd=REPO, check=True, capture_output=True, text=True)
    assert json.loads(done.stdout) == [1, "refused"]
    # The LMS signs for the service user the init task creates, not staff, idempotently (manage_user).
    lms = (root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py").read_text()
    assert '"SERVICE_USERNAME": "course_access_groups_service",' in lms
    tasks = json.loads(python_in_tutor(root, "from tutor import hooks\nprint(json.dumps([c for s, c in hooks.Filters.CLI_DO_INIT_TASKS.iterate() if s == 'lms']))"))
    lines = [line for task in tasks for line in rendered_init_task(root, task)]
    assert "./manage.py lms manage_user course_access_groups_service course_access_groups_service@openedx --unusable-password" in lines
    assert not any("--staff" in line or "--superuser" in line for line in lines)
    # No rendered file (beyond the carried sources, which hold the LMS plugin's development setting's
    # name) carries a service token, nor the year-2100 expiry the HS256 token had.
    carried = (root / "env" / "plugins" / "course-access-groups" / "build", root / "env" / "build" / "openedx" / "course-access-groups-openedx")
    files = [p for p in [root / "config.yml", *(root / "env").rglob("*")] if p.is_file() and not any(c in p.parents for c in carried)]
    assert len(files) > 20  # the whole environment, not an empty folder
    for path in files:
        text = path.read_text(errors="replace")
        assert "SERVICE_TOKEN" not in text and "4102444800" not in text, path


CONSOLE_CALLBACK = "/course_access_groups/console/oauth/callback"
LMS_OAUTH = Path(__file__).with_name("lms_oauth")
# Owner, LMS state and readback of the init task's OAuth2 application, in the LMS-shaped project of
# tests/lms_oauth/ (Django set up as its manage.py sets it up).
LMS_OAUTH_SETUP = """
import django, sys
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
call_command("migrate", run_syncdb=True, verbosity=0)
get_user_model().objects.create(username=sys.argv[1], email=sys.argv[1] + "@openedx", is_staff=True)
"""
LMS_OAUTH_STATE = """
import django, json, sys
django.setup()
from oauth2_provider.models import get_application_model
from oauth2_provider.scopes import get_scopes_backend
from openedx.core.djangoapps.oauth_dispatch.models import ApplicationAccess
given = json.loads(sys.argv[1])
apps = list(get_application_model().objects.all())
app = apps[0]
app.full_clean()  # DOT's own validation of the redirect URIs and the rest
print(json.dumps({
    "applications": len(apps), "accesses": ApplicationAccess.objects.count(), "id": app.id, "name": app.name,
    "owner": app.user.username, "client_id": app.client_id, "client_secret": app.client_secret,
    "client_type": app.client_type, "grant": app.authorization_grant_type, "redirect_uris": app.redirect_uris,
    "skip_authorization": app.skip_authorization, "scopes": app.access.scopes,
    "available_scopes": sorted(get_scopes_backend().get_available_scopes(application=app)),
    "allowed": {uri: app.redirect_uri_allowed(uri) for uri in given["uris"]},
}))
"""


def create_dot_application_command(task_lines):
    """The init task's `./manage.py lms create_dot_application` command, with its continuation lines."""
    start = next(i for i, line in enumerate(task_lines) if line.startswith("./manage.py lms create_dot_application"))
    end = start
    while task_lines[end].endswith("\\"):
        end += 1
    return "\n".join(task_lines[start:end + 1])


def in_the_lms(database, *args, script=None):
    """A command in tests/lms_oauth as the lms-job container runs an init task (`sh -e -c`, the LMS's python first on PATH), or Python there."""
    lms_python = os.environ["LMS_OAUTH_PYTHON"]
    env = {**os.environ, "PATH": f"{Path(lms_python).parent}{os.pathsep}{os.environ['PATH']}", "LMS_OAUTH_DATABASE": str(database),
           "DJANGO_SETTINGS_MODULE": "lms_oauth_settings", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    command = ["sh", "-e", "-c", script] if script else [lms_python, "-c", *args]
    done = subprocess.run(command, cwd=LMS_OAUTH, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rendered_with(root, overrides):
    """The plugin's init task as the project's configuration renders it; then, with `overrides`, the task
    again and the plugin's service and LMS settings patches (one Tutor start for all)."""
    code = f"""
from tutor import env
[task] = [c for s, c in hooks.Filters.CLI_DO_INIT_TASKS.iterate() if s == "lms" and "course_access_groups" in c]
names = ("COURSE_ACCESS_GROUPS_OAUTH2_KEY_SSO", "COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO", "COURSE_ACCESS_GROUPS_SERVICE_USERNAME")
rendered = {{"config": {{name: config[name] for name in names}}, "task": env.render_str(config, task).splitlines()}}
config.update({overrides!r})
rendered["overridden"] = {{name: env.render_str(config, content) for name, content in hooks.Filters.ENV_PATCHES.iterate()
                          if name in ("local-docker-compose-services", "k8s-deployments", "openedx-lms-common-settings")}}
rendered["overridden"]["task"] = env.render_str(config, task).splitlines()
print(json.dumps(rendered))"""
    return json.loads(python_in_tutor(root, code))


def lms_public_url(lms_settings):
    """The LMS plugin's PUBLIC_URL as the openedx-lms-common-settings patch renders it."""
    return json.loads(re.search(r'\n    "PUBLIC_URL": ("[^"\n]*"),\n', lms_settings).group(1))


# The console's sign-in: the init task registers the OAuth2 application (create_dot_application, as
# Tutor and tutor-discovery do) whose redirect URI is, character for character, the callback the
# service sends from its PUBLIC_URL; the service's other OAuth2 settings reach it in compose and k8s.
def test_the_init_task_registers_the_consoles_oauth2_application_at_the_callback_the_service_sends(installed, tmp_path):
    root = saved(installed, tmp_path)
    # With HTTPS, and a secret holding what a shell or compose would read ($, quotes, spaces), the
    # task and the plugin's settings patches are rendered again below.
    odd_secret = "a$HOME 'b' \"c\" `d` \\e $$f"
    rendered = rendered_with(root, {"ENABLE_HTTPS": True, "COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO": odd_secret})
    client_id, secret, owner = (rendered["config"][name] for name in (
        "COURSE_ACCESS_GROUPS_OAUTH2_KEY_SSO", "COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO", "COURSE_ACCESS_GROUPS_SERVICE_USERNAME"))
    assert client_id == "course-access-groups-sso" and owner == "course_access_groups_service"
    # The secret is made once and kept in config.yml (CONFIG_UNIQUE), as tutor-discovery's.
    assert re.fullmatch(r"[A-Za-z0-9]{48}", secret) and config(root)["COURSE_ACCESS_GROUPS_OAUTH2_SECRET_SSO"] == secret
    issuer = lms_jwt_issuer(root)["ISSUER"]
    lms_host = re.fullmatch(r"http://([^/]+)/oauth2", issuer).group(1)

    # As rendered for this project (http), from the files Tutor wrote.
    compose_env = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]
    k8s = {o["metadata"]["name"]: o for o in k8s_objects(root, "deployments.yml")}
    lms_settings = (root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py").read_text()
    public_url = lms_public_url(lms_settings)
    assert public_url == f"http://course-access-groups.{lms_host}"
    callback = public_url + CONSOLE_CALLBACK
    for role in ("api", "consumer"):
        env = compose_env[f"course-access-groups-{role}"]["environment"]
        [container] = k8s[f"course-access-groups-{role}"]["spec"]["template"]["spec"]["containers"]
        pod_env = {e["name"]: e.get("value") for e in container["env"]}
        for values in (env, pod_env):
            assert values["PUBLIC_URL"] + CONSOLE_CALLBACK == callback
            # Browsers authorize at the LMS's public root (its JWT issuer's root); the service posts
            # the code to the LMS inside the deployment.
            assert values["LMS_OAUTH_URL"] + "/oauth2" == issuer
            assert values["LMS_OAUTH_INTERNAL_URL"] == "http://lms:8000"
            assert values["LMS_OAUTH_CLIENT_ID"] == client_id
        assert env["LMS_OAUTH_CLIENT_SECRET"].replace("$$", "$") == secret
        assert "LMS_OAUTH_CLIENT_SECRET" not in pod_env  # in the Secret (envFrom), never a Deployment's env
    [k8s_secret] = [o for o in k8s_objects(root, "deployments.yml") if o["kind"] == "Secret"]
    assert k8s_secret["stringData"]["LMS_OAUTH_CLIENT_SECRET"] == secret
    # The LMS takes http://lms:8000 as its Host: Tutor's ALLOWED_HOSTS names "lms" (Django drops the port).
    allowed_hosts = lms_settings[lms_settings.index("\nALLOWED_HOSTS = [") + 1:]
    allowed_hosts = allowed_hosts[:allowed_hosts.index("\n]\n")]
    assert '\n    "lms",' in allowed_hosts

    # With HTTPS and the odd secret.
    https = rendered["overridden"]
    https_public_url = lms_public_url(https["openedx-lms-common-settings"])
    assert https_public_url == f"https://course-access-groups.{lms_host}"
    https_compose = yaml.safe_load(https["local-docker-compose-services"])
    https_pods = {o["metadata"]["name"]: o for o in yaml.safe_load_all(https["k8s-deployments"]) if o}
    for role in ("api", "consumer"):
        env = https_compose[f"course-access-groups-{role}"]["environment"]
        [container] = https_pods[f"course-access-groups-{role}"]["spec"]["template"]["spec"]["containers"]
        pod_env = {e["name"]: e.get("value") for e in container["env"]}
        for values in (env, pod_env):
            assert values["PUBLIC_URL"] == https_public_url
            assert values["LMS_OAUTH_URL"] == f"https://{lms_host}"
        assert env["LMS_OAUTH_CLIENT_SECRET"].replace("$$", "$") == odd_secret
    assert https_pods["course-access-groups"]["stringData"]["LMS_OAUTH_CLIENT_SECRET"] == odd_secret

    # The rendered create_dot_application line, run as the init task runs it, over DOT 1.7.1 and the
    # LMS's ApplicationAccess (tests/lms_oauth): after the manage_user line made its owner.
    http_line = create_dot_application_command(rendered["task"])
    https_line = create_dot_application_command(https["task"])
    assert "--public" not in http_line  # a confidential client: the service holds its secret
    database = tmp_path / "lms.sqlite3"
    in_the_lms(database, LMS_OAUTH_SETUP, owner)
    in_the_lms(database, script=http_line)
    in_the_lms(database, script=http_line)  # `tutor local do init` again
    uris = {"uris": [callback, callback + "/", https_public_url + CONSOLE_CALLBACK]}
    state = json.loads(in_the_lms(database, LMS_OAUTH_STATE, json.dumps(uris)))
    assert state == {
        "applications": 1, "accesses": 1, "id": state["id"], "name": "course-access-groups-sso", "owner": owner,
        "client_id": client_id, "client_secret": secret, "client_type": "confidential", "grant": "authorization-code",
        "redirect_uris": callback, "skip_authorization": True, "scopes": ["user_id", "profile"],
        "available_scopes": ["email", "profile", "read", "user_id", "write"],
        "allowed": {callback: True, callback + "/": False, https_public_url + CONSOLE_CALLBACK: False},
    }
    # Turning HTTPS on and running init again updates the same application in place.
    in_the_lms(database, script=https_line)
    after = json.loads(in_the_lms(database, LMS_OAUTH_STATE, json.dumps(uris)))
    assert (after["applications"], after["accesses"], after["id"]) == (1, 1, state["id"])
    assert (after["redirect_uris"], after["client_secret"]) == (https_public_url + CONSOLE_CALLBACK, odd_secret)
    assert after["allowed"][https_public_url + CONSOLE_CALLBACK] is True


GIT_SOURCE = ("COURSE_ACCESS_GROUPS_REPOSITORY=https://git.example.org/acme/course-access-groups.git",
              "COURSE_ACCESS_GROUPS_REPOSITORY_VERSION=v9.8.7")


# The issue's "or from a git repository and version the operator may name instead": the carried
# Dockerfile, its sources fetched by BuildKit's `ADD <repo>#<version>` as Tutor's openedx image
# fetches edx-platform (scripts/container/test.sh builds and runs what this renders).
def test_the_service_image_is_built_from_a_git_repository_and_version_the_operator_names(installed, tmp_path):
    root = saved(installed, tmp_path, *GIT_SOURCE)
    build = json.loads(python_in_tutor(root, "from tutor import hooks\n"
                                             "print(json.dumps([[n, list(p), t] for n, p, t, _ in hooks.Filters.IMAGES_BUILD.iterate(config)]))"))
    ours = [image for image in build if image[0] == "course-access-groups"]
    assert ours == [["course-access-groups", ["plugins", "course-access-groups", "build", "course-access-groups-git"],
                     "{{ COURSE_ACCESS_GROUPS_DOCKER_IMAGE }}"]]
    dockerfile = (root / "env" / "plugins" / "course-access-groups" / "build" / "course-access-groups-git" / "Dockerfile").read_text()
    carried = (installed.package / "templates" / "course-access-groups" / "build" / "course-access-groups" / "Dockerfile").read_text()
    stage = ("FROM scratch AS course-access-groups-sources\n"
             "ARG COURSE_ACCESS_GROUPS_REPOSITORY=https://git.example.org/acme/course-access-groups.git\n"
             "ARG COURSE_ACCESS_GROUPS_REPOSITORY_VERSION=v9.8.7\n"
             "ADD --keep-git-dir=false $COURSE_ACCESS_GROUPS_REPOSITORY#$COURSE_ACCESS_GROUPS_REPOSITORY_VERSION /\n")
    assert stage in dockerfile
    # BuildKit's Dockerfile syntax that has `ADD <git URL>` (1.6 and later), as Tutor's Dockerfiles name it.
    assert dockerfile.startswith("# syntax=docker/dockerfile:1\n")
    # Apart from that stage, the carried Dockerfile, every COPY from the build context now from the sources.
    without_stage = [line for line in dockerfile.splitlines()
                     if line not in stage.splitlines() and not line.startswith("# The service's sources")
                     and not line.startswith("# `ADD <git URL>")]
    assert [line for line in without_stage if line] == [
        re.sub(r"^COPY (?!--from=)", "COPY --from=course-access-groups-sources ", line) for line in carried.splitlines() if line]
    assert "COPY --from=course-access-groups-sources src ./src" in dockerfile
    assert "COPY --from=build /app/dist ./dist" in dockerfile
    # A value that would break the Dockerfile's line is refused, naming the setting.
    done = run_tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_REPOSITORY_VERSION=v1 main")
    assert done.returncode != 0
    assert "COURSE_ACCESS_GROUPS_REPOSITORY_VERSION must be one word" in done.stderr + done.stdout


# Issue 46, items 1 and 2: an upgrade moves the images. A root saved by release 0.1.0's plugin (built
# from commit PREVIOUS_RELEASE, as the release builds it) with Tutor 21 (TUTOR_21_PYTHON), then this
# plugin with this Tutor (22) and `tutor config save`: the frozen openedx image name 0.1.0 wrote
# into config.yml is gone, both images follow this Tutor's and this plugin's versions and
# DOCKER_REGISTRY, in `images printtag` and the compose file; a name the operator set is kept.
PREVIOUS_RELEASE = "191efc6"  # the last commit whose plugin wrote DOCKER_IMAGE_OPENEDX into config.yml


def test_an_upgrade_from_tutor_21_and_the_previous_release_moves_the_images_and_keeps_an_operators_name(installed, tmp_path):
    tutor_21 = os.environ["TUTOR_21_PYTHON"]
    assert TUTOR_VERSION.startswith("22.")
    # A checkout (the staging script lists what git tracks), sharing this repository's objects.
    source = tmp_path / "previous"
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(REPO), str(source)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(source), "checkout", "--quiet", PREVIOUS_RELEASE], check=True, capture_output=True)
    wheel = subprocess.run(["bash", str(source / "scripts" / "tutor-plugin-wheel.sh"), tutor_21, str(tmp_path / "wheel")],
                           check=True, capture_output=True, text=True).stdout.strip()
    old_site = tmp_path / "old-site"
    subprocess.run([tutor_21, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index",
                    "--target", str(old_site), wheel], check=True, capture_output=True, text=True)

    def old(root, *args):
        return tutor(root, *args, python=tutor_21, site=old_site)

    default, operators = tmp_path / "default", tmp_path / "operators"
    old(default, "plugins", "enable", "course-access-groups")
    old(default, "config", "save", "--set", "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX")
    shutil.copytree(default, operators)
    old(operators, "config", "save", "--set", "DOCKER_IMAGE_OPENEDX=registry.acme.org/openedx-cag:v3",
        "--set", "COURSE_ACCESS_GROUPS_DOCKER_IMAGE=registry.acme.org/cag:v3")
    # What the issue saw: 0.1.0 froze the openedx image's name, with Tutor 21's version, in config.yml.
    assert config(default)["DOCKER_IMAGE_OPENEDX"] == "course-access-groups-openedx:21.0.9-0.1.0"

    version = plugin_version(installed)
    for root in (default, operators):
        saved_output = tutor(root, "config", "save")
        images = {name: tutor(root, "images", "printtag", name).strip() for name in ("openedx", "course-access-groups")}
        services = yaml.safe_load((root / "env" / "local" / "docker-compose.yml").read_text())["services"]
        assert services["lms"]["image"] == services["cms"]["image"] == images["openedx"]
        assert services["course-access-groups-api"]["image"] == services["course-access-groups-consumer"]["image"] == images["course-access-groups"]
        if root == default:
            assert "removing DOCKER_IMAGE_OPENEDX=course-access-groups-openedx:21.0.9-0.1.0" in saved_output
            assert "DOCKER_IMAGE_OPENEDX" not in config(root)
            assert images == {"openedx": f"docker.io/library/course-access-groups-openedx:{TUTOR_VERSION}-{version}",
                              "course-access-groups": f"docker.io/library/course-access-groups:{version}"}
        else:
            assert config(root)["DOCKER_IMAGE_OPENEDX"] == "registry.acme.org/openedx-cag:v3"
            assert images == {"openedx": "registry.acme.org/openedx-cag:v3", "course-access-groups": "registry.acme.org/cag:v3"}
    # Both follow DOCKER_REGISTRY, as Tutor's own images do; without the plugin, Tutor's openedx image is back.
    tutor(default, "config", "save", "--set", "DOCKER_REGISTRY=registry.example.org/")
    assert tutor(default, "images", "printtag", "openedx").strip() == f"registry.example.org/library/course-access-groups-openedx:{TUTOR_VERSION}-{version}"
    assert tutor(default, "images", "printtag", "course-access-groups").strip() == f"registry.example.org/library/course-access-groups:{version}"
    tutor(default, "plugins", "disable", "course-access-groups")
    assert tutor(default, "images", "printtag", "openedx").strip() == f"registry.example.org/overhangio/openedx:{TUTOR_VERSION}"


def a_ca_certificate(tmp_path):
    """A CA certificate (PEM) made with openssl, as an external Kafka's private CA."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=external kafka CA",
                    "-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "ca.pem")], check=True, capture_output=True)
    return (tmp_path / "ca.pem").read_text()


def lms_settings(root):
    """The rendered LMS settings executed over the LMS plugin's settings code, then read by edx-event-bus-kafka's config reader."""
    common, lms = settings_blocks(root / "env" / "apps" / "openedx" / "settings" / "lms" / "production.py")
    probe = subprocess.run(
        [os.environ["LMS_PYTHON"], str(Path(__file__).with_name("lms_settings_probe.py"))],
        input=json.dumps({"common": common, "lms": lms}), check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "integrations" / "openedx" / "src")},
    )
    return json.loads(probe.stdout)


# An external Kafka over SASL_SSL: the service as a SCRAM user behind a private CA, the LMS as a PLAIN
# user of its own (edx-event-bus-kafka's API key pair), the registry behind basic auth.
def external_sasl_ssl(ca):
    return EXTERNAL_KAFKA + (
        "COURSE_ACCESS_GROUPS_KAFKA_SSL=true",
        f"COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT={ca}",
        "COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=SCRAM-SHA-512",
        "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME=cag",
        "COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD=s$cram pass",
        "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY=LMSKEY",
        "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET=lms$secret",
        "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME=REGKEY",
        "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD=reg$secret",
    )


def test_an_external_kafka_over_sasl_ssl_reaches_the_lmss_producer_and_the_service(installed, tmp_path):
    ca = a_ca_certificate(tmp_path)
    # As an operator pastes it: `--set` reads the value as YAML, which folds its lines into one.
    root = saved(installed, tmp_path, *external_sasl_ssl(ca), fresh=True)
    assert "\n" not in config(root)["COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT"].strip()

    # The LMS and Studio: edx-event-bus-kafka's own reader turns the settings into SASL PLAIN over TLS.
    final = lms_settings(root)
    assert final["kafka_common"] == {"bootstrap.servers": "kafka-1.example.org:9092", "security.protocol": "SASL_SSL",
                                     "sasl.mechanism": "PLAIN", "sasl.username": "LMSKEY", "sasl.password": "lms$secret"}
    assert final["registry"] == {"url": ["https://registry.example.org"], "auth": ["REGKEY", "reg$secret"]}
    assert final["ready_errors"] == []

    # The service, with docker compose: TLS with the CA mounted where KAFKA_SSL_CA_FILE names it, SCRAM.
    local = root / "env" / "local"
    compose(root, "config", "-q")
    services = yaml.safe_load(compose(root, "config"))["services"]
    for role in ("api", "consumer"):
        service = services[f"course-access-groups-{role}"]
        env = service["environment"]
        # `docker-compose config` (1.29) shows a literal `$` as written, `$$`.
        assert {k: env[k].replace("$$", "$") for k in env if k.startswith(("KAFKA_S", "SCHEMA_REGISTRY_"))} == {
            "KAFKA_SSL": "on", "KAFKA_SSL_CA_FILE": "/etc/course-access-groups/kafka/ca.pem",
            "KAFKA_SASL_MECHANISM": "scram-sha-512", "KAFKA_SASL_USERNAME": "cag", "KAFKA_SASL_PASSWORD": "s$cram pass",
            "SCHEMA_REGISTRY_URL": "https://registry.example.org", "SCHEMA_REGISTRY_USERNAME": "REGKEY",
            "SCHEMA_REGISTRY_PASSWORD": "reg$secret"}
        [mount] = service["volumes"]  # docker-compose 1.29 writes the short form, source:target:mode
        source, target, mode = mount.split(":")
        assert (target, mode) == ("/etc/course-access-groups/kafka/ca.pem", "ro")
        assert Path(source) == (local / "../plugins/course-access-groups/apps/kafka/ca.pem").resolve()
        assert Path(source).read_text() == ca  # the PEM as openssl wrote it, lines and all

    # On Kubernetes: the passwords in the Secret, the CA in a ConfigMap mounted where the setting names it.
    objects = k8s_objects(root, "deployments.yml")
    for doc in objects:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    [secret] = [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "course-access-groups"]
    assert {k: secret["stringData"][k] for k in ("KAFKA_SASL_PASSWORD", "SCHEMA_REGISTRY_PASSWORD")} == {
        "KAFKA_SASL_PASSWORD": "s$cram pass", "SCHEMA_REGISTRY_PASSWORD": "reg$secret"}
    [ca_map] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "course-access-groups-kafka-ca"]
    assert ca_map["data"] == {"ca.pem": ca}
    deployments = yaml.safe_dump([o for o in objects if o["kind"] == "Deployment"])
    assert "s$cram pass" not in deployments and "reg$secret" not in deployments
    for role in ("api", "consumer"):
        pod = next(o for o in objects if o["metadata"]["name"] == f"course-access-groups-{role}")["spec"]["template"]["spec"]
        [container] = pod["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["KAFKA_SSL"] == "on" and env["KAFKA_SASL_MECHANISM"] == "scram-sha-512" and env["KAFKA_SASL_USERNAME"] == "cag"
        [mount] = container["volumeMounts"]
        assert f"{mount['mountPath']}/ca.pem" == env["KAFKA_SSL_CA_FILE"]
        assert pod["volumes"] == [{"name": mount["name"], "configMap": {"name": "course-access-groups-kafka-ca"}}]

    # The Confluent API key pair of the LMS defaults to the service's own user when that is PLAIN.
    tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=plain",
          "--unset", "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY", "--unset", "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET")
    common = lms_settings(root)["kafka_common"]
    assert (common["sasl.username"], common["sasl.password"]) == ("cag", "s$cram pass")


# What the service refuses at start-up, and what edx-event-bus-kafka would take without a word and then
# drop every event for, stops rendering with one line naming the setting.
REFUSED = [
    (("COURSE_ACCESS_GROUPS_RUN_KAFKA=false",),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS is required with COURSE_ACCESS_GROUPS_RUN_KAFKA=false: the external "
     "Kafka's brokers, host:port[,host:port...]"),
    (("COURSE_ACCESS_GROUPS_RUN_KAFKA=false", "COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS=kafka-1.example.org:9092"),
     "Error: COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL is required with COURSE_ACCESS_GROUPS_RUN_KAFKA=false: the schema "
     "registry's Confluent-compatible API (the LMS drops every event without one)"),
    (EXTERNAL_KAFKA[:2] + ("COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS=kafka-1.example.org",),
     'Error: COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS: "kafka-1.example.org" is not host:port (a host name or IPv4 address, '
     'a port from 1 to 65535)'),
    (("COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=plain",),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM: set, but COURSE_ACCESS_GROUPS_RUN_KAFKA is true (the plugin's own Kafka "
     "is plaintext without users): set COURSE_ACCESS_GROUPS_RUN_KAFKA=false for an external Kafka"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_KAFKA_SSL=true",),
     "Error: COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY and COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET are required for a Kafka with "
     "TLS or SASL: the LMS's event bus (edx-event-bus-kafka) reaches one only as a SASL PLAIN user over TLS (they default to "
     "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME and _PASSWORD when its mechanism is plain)"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=scram-sha-256", "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME=cag"),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD: required with COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=scram-sha-256"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM=gssapi",),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM: 'gssapi' is not one of plain, scram-sha-256, scram-sha-512"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME=cag",),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME: set, but COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM is not (plain, "
     "scram-sha-256 or scram-sha-512)"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT=not a certificate", "COURSE_ACCESS_GROUPS_KAFKA_SSL=true"),
     "Error: COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT: holds no PEM certificate (the CA's certificate itself, not a file name)"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY=LMSKEY",),
     "Error: COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY and COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET: set both (the LMS's SASL PLAIN "
     "user and password), or neither"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY=LMSKEY", "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET=s"),
     "Error: COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY: the LMS's event bus uses it for SASL PLAIN over TLS only, but "
     "COURSE_ACCESS_GROUPS_KAFKA_SSL is false"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME=REGKEY",),
     "Error: COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME and COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD: set both (basic "
     "auth, a Confluent API key pair), or neither"),
    (EXTERNAL_KAFKA + ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL=http://registry.example.org:8081",
                       "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME=REGKEY", "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD=s"),
     "Error: COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME: basic auth over an http:// COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL "
     "would send the password in clear: use the https:// URL of the registry"),
]


def test_kafka_settings_that_cannot_work_stop_rendering_with_one_line_naming_the_setting(installed, tmp_path):
    root = saved(installed, tmp_path, fresh=True)
    for settings, line in REFUSED:
        case = tmp_path / f"case-{REFUSED.index((settings, line))}"
        shutil.copytree(root, case)
        done = run_tutor(case, "config", "save", *[arg for s in settings for arg in ("--set", s)])
        lines = [out for out in (done.stdout + done.stderr).splitlines()
                 if out and "running Tutor as root" not in out and not out.startswith("Configuration saved to ")]
        assert (done.returncode, lines) == (1, [line]), settings
        # Commands that render nothing still work.
        assert tutor(case, "config", "printvalue", "COURSE_ACCESS_GROUPS_RUN_KAFKA").strip()


def test_the_service_can_be_left_to_the_chart_while_the_lms_calls_it_where_the_operator_says(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_RUN_SERVICE=false", *EXTERNAL_KAFKA,
                 "COURSE_ACCESS_GROUPS_SERVICE_URL=http://cag-course-access-groups.cag.svc:8000", fresh=True)
    # No container, Deployment, Service, Secret or Caddy route of the service; the LMS still publishes
    # to the external Kafka and calls the service where the setting says.
    services = yaml.safe_load(compose(root, "config"))["services"]
    assert not [name for name in services if name.startswith("course-access-groups")]
    k8s = [o for manifest in ("deployments.yml", "services.yml", "volumes.yml") for o in k8s_objects(root, manifest)]
    assert not [o for o in k8s if o["metadata"]["name"].startswith("course-access-groups")]
    assert "course-access-groups" not in (root / "env" / "apps" / "caddy" / "Caddyfile").read_text()
    final = lms_settings(root)
    assert final["COURSE_ACCESS_GROUPS"]["SERVICE_URL"] == "http://cag-course-access-groups.cag.svc:8000"
    assert final["kafka_common"]["bootstrap.servers"] == "kafka-1.example.org:9092"
    # `tutor local launch` builds the openedx image (the LMS plugin) but not the service's.
    code = ("import click\nfrom tutor.commands.context import Context\n"
            "with click.Context(click.Command('launch'), obj=Context(" + repr(str(root)) + ")):\n"
            "    print(json.dumps(hooks.Filters.IMAGES_BUILD_REQUIRED.apply([], 'local')))\n")
    assert json.loads(python_in_tutor(root, code)) == ["openedx"]
    tutor(root, "config", "save", "--set", "COURSE_ACCESS_GROUPS_RUN_SERVICE=true")
    assert json.loads(python_in_tutor(root, code)) == ["openedx", "course-access-groups"]


def test_the_kubernetes_pods_have_the_charts_probes_resources_and_replicas_and_the_own_kafka_a_volume(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_API_REPLICAS=3", fresh=True)
    objects = {(o["kind"], o["metadata"]["name"]): o for m in ("deployments.yml", "volumes.yml") for o in k8s_objects(root, m)}
    for o in objects.values():
        kubernetes_validate.validate(o, KUBERNETES, strict=True)
    for role, replicas, cpu in (("api", 3, "250m"), ("consumer", 1, "100m")):
        deployment = objects[("Deployment", f"course-access-groups-{role}")]
        assert deployment["spec"]["replicas"] == replicas
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": 8000}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8000}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8000}
        assert container["resources"] == {"requests": {"cpu": cpu, "memory": "320Mi"}, "limits": {"memory": "512Mi"}}
    kafka = objects[("Deployment", "course-access-groups-kafka")]["spec"]["template"]["spec"]
    [container] = kafka["containers"]
    assert {"name": "KAFKA_LOG_DIRS", "value": "/var/lib/kafka/data"} in container["env"]
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/var/lib/kafka/data"}]
    assert kafka["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "course-access-groups-kafka"}}]
    assert kafka["securityContext"]["fsGroup"] == 1000  # the volume writable by the image's user
    claim = objects[("PersistentVolumeClaim", "course-access-groups-kafka")]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
