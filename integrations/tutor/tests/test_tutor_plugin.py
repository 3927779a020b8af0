"""
The Tutor plugin with the real tutor package: installed as an operator installs it, enabled, and
`tutor config save` run in a temporary TUTOR_ROOT; then what Tutor rendered is checked as the
platform would use it: docker-compose's own validation (`docker-compose config -q`), the
Kubernetes API's schemas (kubernetes-validate, offline), and the rendered Python settings
executed, in the LMS's order, over the LMS plugin's own settings (tests/lms_settings_probe.py,
run by the LMS plugin's Python 3.11 environment, given as LMS_PYTHON).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT.parent.parent
# The Kubernetes release whose API schemas the manifests are checked against.
KUBERNETES = "1.30"


def tutor(root, *args):
    env = {**os.environ, "TUTOR_ROOT": str(root), "TUTOR_PLUGINS_ROOT": str(root / "plugins")}
    # The `tutor` command's entry point (the package has no __main__; the environment's cached
    # console script names the folder it was made in).
    command = "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", command, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"tutor {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The plugin installed (built from its source, as pip installs it) where this Python finds it."""
    site = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("source") / "tutor"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(site), str(source)],
                   check=True, capture_output=True, text=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return site


def saved(installed, tmp_path, *settings):
    root = tmp_path / "tutor"
    tutor(root, "plugins", "enable", "course-access-groups")
    tutor(root, "config", "save", *[arg for s in settings for arg in ("--set", s)])
    return root


def config(root):
    return yaml.safe_load((root / "config.yml").read_text())


def k8s_objects(root, manifest):
    return [doc for doc in yaml.safe_load_all((root / "env" / "k8s" / manifest).read_text()) if doc]


def test_config_save_makes_the_jwt_secret_once_and_keeps_it(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX")
    secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    assert len(secret) == 48
    tutor(root, "config", "save")
    assert config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"] == secret
    assert config(root)["COURSE_ACCESS_GROUPS_ORGANIZATION"] == "AcmeX"


@pytest.mark.parametrize("own_kafka", [True, False], ids=["own-kafka", "external-kafka"])
def test_the_rendered_compose_file_is_valid_and_runs_both_roles_on_tutors_mongodb(installed, tmp_path, own_kafka):
    external = [] if own_kafka else [
        "COURSE_ACCESS_GROUPS_RUN_KAFKA=false",
        "COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS=kafka-1.example.org:9092",
        "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL=https://registry.example.org",
    ]
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX", *external)
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
        assert env["DEFAULT_ORGANIZATION"] == "AcmeX"
        assert env["KAFKA_TOPICS"] == "openedx-user-account-activated,openedx-user-lifecycle,openedx-course-catalog"
        assert env["KAFKA_BROKERS"] == ("course-access-groups-kafka:9092" if own_kafka else "kafka-1.example.org:9092")
    assert ("course-access-groups-kafka" in services) is own_kafka
    assert ("course-access-groups-registry" in services) is own_kafka


@pytest.mark.parametrize("own_kafka", [True, False], ids=["own-kafka", "external-kafka"])
def test_the_rendered_kubernetes_manifests_match_the_api_schemas(installed, tmp_path, own_kafka):
    root = saved(installed, tmp_path, *([] if own_kafka else ["COURSE_ACCESS_GROUPS_RUN_KAFKA=false"]))
    names = set()
    for manifest in ("deployments.yml", "services.yml"):
        for doc in k8s_objects(root, manifest):
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
            names.add((doc["kind"], doc["metadata"]["name"]))
    ours = {n for n in names if n[1].startswith("course-access-groups")}
    expected = {("Deployment", "course-access-groups-api"), ("Deployment", "course-access-groups-consumer"),
                ("Service", "course-access-groups-api"), ("Secret", "course-access-groups")}
    if own_kafka:
        expected |= {(kind, f"course-access-groups-{name}") for kind in ("Deployment", "Service") for name in ("kafka", "registry")}
    assert ours == expected


def test_the_services_credentials_reach_its_pods_from_a_secret_never_a_deployments_env(installed, tmp_path):
    root = saved(installed, tmp_path, "MONGODB_USERNAME=cag", "MONGODB_PASSWORD=p@ss/w:rd")
    objects = k8s_objects(root, "deployments.yml")
    [secret] = [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "course-access-groups"]
    jwt_secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    # The password URL-encoded, so the driver reads it back whole.
    assert secret["stringData"] == {"MONGO_URL": "mongodb://cag:p%40ss%2Fw%3Ard@mongodb:27017/?authSource=admin",
                                    "JWT_SECRET": jwt_secret}
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    rendered = yaml.safe_dump(deployments)
    for value in (jwt_secret, "p%40ss", "p@ss"):
        assert value not in rendered
    ours = {d["metadata"]["name"]: d for d in deployments if d["metadata"]["name"].startswith("course-access-groups")}
    for role in ("api", "consumer"):
        pod = ours[f"course-access-groups-{role}"]["spec"]["template"]
        [container] = pod["spec"]["containers"]
        assert container["envFrom"] == [{"secretRef": {"name": "course-access-groups"}}]
        assert {e["name"] for e in container["env"]}.isdisjoint({"MONGO_URL", "JWT_SECRET"})
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


def test_the_openedx_image_installs_the_lms_plugin_and_confluent_kafka(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_OPENEDX_PLUGIN=/mnt/course-access-groups-openedx")
    dockerfile = (root / "env" / "build" / "openedx" / "Dockerfile").read_text()
    assert "$PIP_COMMAND install 'confluent-kafka[avro,schemaregistry]>=2.0,<3' '/mnt/course-access-groups-openedx'" in dockerfile
    # After edx-platform's requirements, under the build constraint that pins setuptools 69.1.1.
    assert dockerfile.index("setuptools==69.1.1") < dockerfile.index("requirements/edx/base.txt") < dockerfile.index("confluent-kafka")


def settings_blocks(production_py):
    """Tutor's common block from its Redis event bus lines to its end, and the plugin's LMS block, as rendered."""
    text = production_py.read_text()
    common = text[text.index("# edx-event-bus-redis settings"):text.index("######## End of settings common to LMS and CMS")]
    start = text.index("# Course Access Groups: the LMS plugin's settings")
    lms = text[start:text.index("\n}\n", start) + 3]
    return common, lms


def test_the_rendered_settings_leave_the_lms_on_kafka_with_the_services_topics_and_filters_first(installed, tmp_path):
    root = saved(installed, tmp_path, "COURSE_ACCESS_GROUPS_ORGANIZATION=AcmeX", "COURSE_ACCESS_GROUPS_TOPIC_PREFIX=prod")
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
    # The LMS's token is one the service accepts: verified by the service's own JWT library.
    secret = config(root)["COURSE_ACCESS_GROUPS_JWT_SECRET"]
    verify = ("const { jwtVerify } = require('jose');"
              "jwtVerify(process.argv[1], new TextEncoder().encode(process.argv[2]), { requiredClaims: ['exp'] })"
              ".then((r) => console.log(JSON.stringify(r.payload)), (e) => { console.error(e.message); process.exit(1); });")
    payload = subprocess.run(["node", "-e", verify, cag["SERVICE_TOKEN"], secret], cwd=REPO, check=True,
                             capture_output=True, text=True).stdout
    assert json.loads(payload)["roles"] == ["service"]
