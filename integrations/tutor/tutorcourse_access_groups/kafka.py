"""
The Kafka and schema registry settings of the LMS's producer and of the service, checked at render.

The service refuses at start-up what it cannot use (src/config.ts, src/kafka-security.ts) and
edx-event-bus-kafka silently drops every event it cannot send (a missing registry URL, a key
without its secret, plaintext to a TLS listener): so the same mistakes stop rendering here, with
one line naming the setting, before either runs. Only rendering stops (`tutor config save`,
`launch`): every other command loads the configuration as it is.
"""

import re
from urllib.parse import urlsplit

from jinja2 import pass_context

MECHANISMS = ("plain", "scram-sha-256", "scram-sha-512")
# As the service's KAFKA_BROKERS check (src/config.ts, checkKafkaBrokers): host:port, comma-separated.
BROKER = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?:\d{1,5}")
# Where both roles find the CA (docker compose: a read-only bind mount; Kubernetes: a ConfigMap volume).
CA_PATH = "/etc/course-access-groups/kafka/ca.pem"

SECURITY = ("COURSE_ACCESS_GROUPS_KAFKA_SSL", "COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT", "COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM",
            "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME", "COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD",
            "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY", "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET")


def _text(values, name):
    value = values.get(name)
    return "" if value is None else str(value).strip()


def _on(values, name):
    value = values.get(name)
    return value is True or str(value).strip().lower() in ("true", "yes", "on", "1")


def problem(values):
    """The first setting that cannot work, as one sentence naming it; None when they all can."""
    t = lambda name: _text(values, name)  # noqa: E731
    if _on(values, "COURSE_ACCESS_GROUPS_RUN_KAFKA"):
        extra = [name for name in SECURITY if (_on(values, name) if name.endswith("_SSL") else t(name))]
        if extra:
            return (f"{', '.join(extra)}: set, but COURSE_ACCESS_GROUPS_RUN_KAFKA is true (the plugin's own Kafka is plaintext "
                    "without users): set COURSE_ACCESS_GROUPS_RUN_KAFKA=false for an external Kafka")
    brokers = t("COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS")
    if not brokers:
        return ("COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS is required with COURSE_ACCESS_GROUPS_RUN_KAFKA=false: "
                "the external Kafka's brokers, host:port[,host:port...]")
    for broker in brokers.split(","):
        if not BROKER.fullmatch(broker.strip()) or not 1 <= int(broker.rsplit(":", 1)[1]) <= 65535:
            return f'COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS: "{broker}" is not host:port (a host name or IPv4 address, a port from 1 to 65535)'
    registry = t("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL")
    if not registry:
        return ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL is required with COURSE_ACCESS_GROUPS_RUN_KAFKA=false: the schema "
                "registry's Confluent-compatible API (the LMS drops every event without one)")
    parts = urlsplit(registry)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in registry):
        return "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL: must be an http or https URL"
    if bool(t("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME")) != bool(t("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD")):
        return "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME and COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD: set both (basic auth, a Confluent API key pair), or neither"
    if t("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME") and parts.scheme == "http":
        # As the service refuses it at start-up (src/registry-settings.ts): the LMS would send the key pair in clear.
        return ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME: basic auth over an http:// COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL "
                "would send the password in clear: use the https:// URL of the registry")

    ssl = _on(values, "COURSE_ACCESS_GROUPS_KAFKA_SSL")
    ca = t("COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT")
    if ca and not ssl:
        return "COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT: set, but COURSE_ACCESS_GROUPS_KAFKA_SSL is false (set it to true to use TLS)"
    if ca and not pem_certificates(ca):
        return "COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT: holds no PEM certificate (the CA's certificate itself, not a file name)"
    mechanism = t("COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM").lower()
    credentials = [name for name in ("COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME", "COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD") if t(name)]
    if not mechanism and credentials:
        return f"{', '.join(credentials)}: set, but COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM is not (plain, scram-sha-256 or scram-sha-512)"
    if mechanism and mechanism not in MECHANISMS:
        return f"COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM: {mechanism!r} is not one of plain, scram-sha-256, scram-sha-512"
    if mechanism and len(credentials) < 2:
        missing = "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME" if not t("COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME") else "COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD"
        return f"{missing}: required with COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM={mechanism}"

    # The LMS: edx-event-bus-kafka's only secured form is its API key pair, as SASL PLAIN over TLS
    # (load_common_settings); a key without its secret, or no pair for a secured cluster, and it
    # connects in plaintext and drops every event.
    key, secret = t("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY"), t("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET")
    if bool(key) != bool(secret):
        return "COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY and COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET: set both (the LMS's SASL PLAIN user and password), or neither"
    if key and not ssl:
        return ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY: the LMS's event bus uses it for SASL PLAIN over TLS only, but "
                "COURSE_ACCESS_GROUPS_KAFKA_SSL is false")
    if (ssl or mechanism) and not key:
        return ("COURSE_ACCESS_GROUPS_LMS_KAFKA_API_KEY and COURSE_ACCESS_GROUPS_LMS_KAFKA_API_SECRET are required for a Kafka "
                "with TLS or SASL: the LMS's event bus (edx-event-bus-kafka) reaches one only as a SASL PLAIN user over TLS "
                "(they default to COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME and _PASSWORD when its mechanism is plain)")
    return None


PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)


def pem_certificates(text):
    """The certificates of a PEM text, each wrapped as PEM is (64 columns): `tutor config save --set`
    reads its value as YAML, which folds the lines of a pasted PEM into one."""
    blocks = []
    for body in PEM.findall(str(text or "")):
        body = "".join(body.split())
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        blocks.append("\n".join(["-----BEGIN CERTIFICATE-----", *lines, "-----END CERTIFICATE-----"]) + "\n")
    return "".join(blocks)


@pass_context
def checked_brokers(context, brokers):
    """The brokers, once every Kafka and registry setting is known to work (else rendering stops with one line)."""
    found = problem(context)
    if found:
        raise SystemExit(f"Error: {found}")
    return brokers


def service_environment(values):
    """The service's Kafka and registry settings that are not secret (the passwords go to the Secret, or compose's environment)."""
    env = {"KAFKA_SSL": "on" if _on(values, "COURSE_ACCESS_GROUPS_KAFKA_SSL") else "off"}
    if _text(values, "COURSE_ACCESS_GROUPS_KAFKA_SSL_CA_CERT"):
        env["KAFKA_SSL_CA_FILE"] = CA_PATH
    mechanism = _text(values, "COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM").lower()
    if mechanism:
        env["KAFKA_SASL_MECHANISM"] = mechanism
        env["KAFKA_SASL_USERNAME"] = _text(values, "COURSE_ACCESS_GROUPS_KAFKA_SASL_USERNAME")
    if _text(values, "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME"):
        env["SCHEMA_REGISTRY_USERNAME"] = _text(values, "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_USERNAME")
    return env


def service_secrets(values):
    """The service's Kafka and registry passwords, when set."""
    secrets = {}
    if _text(values, "COURSE_ACCESS_GROUPS_KAFKA_SASL_MECHANISM"):
        secrets["KAFKA_SASL_PASSWORD"] = _text(values, "COURSE_ACCESS_GROUPS_KAFKA_SASL_PASSWORD")
    if _text(values, "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD"):
        secrets["SCHEMA_REGISTRY_PASSWORD"] = _text(values, "COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_PASSWORD")
    return secrets


@pass_context
def kafka_environment(context, which):
    """`service` or `secrets`, as (name, value) pairs in a stable order, for the templates."""
    found = problem(context)
    if found:
        raise SystemExit(f"Error: {found}")
    return sorted((service_environment if which == "service" else service_secrets)(context).items())
