"""
The service's access API over one HTTP connection pool per process: single decisions
(``GET access/``) and batches (``POST access/batch/``). Any answer but a decision, or none
within the timeout, is ``ServiceUnavailable``; the pipeline steps turn that into the configured
fail mode. The token (the LMS's own short-lived JWT, or a configured SERVICE_TOKEN) is sent in
a header and appears in no message. A signed token the service refuses (401: the service's clock
further behind than its leeway, a key rotated) is signed again and the call made once more.

SERVICE_URL must be https, except for a name that only resolves inside the deployment, where the
traffic never leaves it: a single-label host (Docker Compose's and Tutor local's service names,
``http://course-access-groups-api:8000``), a Kubernetes Service name (``*.svc`` or
``*.svc.cluster.local``), or a loopback address (``localhost``, ``127.0.0.1``, ``::1``).
"""

import ipaddress
import json
import threading
from typing import NamedTuple
from urllib.parse import urlencode, urlsplit

import urllib3
from django.core.signals import setting_changed
from django.dispatch import receiver

from .conf import setting
from .service_token import SignedTokens, TokenUnavailable

API_PREFIX = "/course_access_groups/api/v1"
# The service refuses larger batches (400).
BATCH_LIMIT = 1000


class Decision(NamedTuple):
    course_id: str
    allowed: bool
    reason: str


class ServiceUnavailable(Exception):
    """The service gave no decision: unreachable, too slow, or an error status (the message says which)."""


def why_not_service_url(service_url):
    """None when SERVICE_URL may be used (https, or http to an in-deployment name); else why not."""
    if not service_url:
        return "COURSE_ACCESS_GROUPS['SERVICE_URL'] is not set"
    parts = urlsplit(service_url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return f"COURSE_ACCESS_GROUPS['SERVICE_URL'] must be an http(s) URL, not {parts.scheme or 'a bare name'}"
    if parts.scheme == "https" or _in_deployment(host):
        return None
    return (
        f"COURSE_ACCESS_GROUPS['SERVICE_URL'] must be https: http is allowed only to a name inside the deployment "
        f"(a single-label name, *.svc, *.svc.cluster.local, localhost), not {host}"
    )


def _in_deployment(host):
    """A name (or address) that does not leave the deployment: loopback, one label, or a Kubernetes Service."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    return host == "localhost" or "." not in host or host.endswith((".svc", ".svc.cluster.local"))


class AccessClient:
    def __init__(self, service_url, token, timeout, pool_size):
        problem = why_not_service_url(service_url)
        if problem:
            raise ServiceUnavailable(problem)
        parts = urlsplit(service_url)
        self._prefix = parts.path.rstrip("/") + API_PREFIX
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        # A configured token as it is; else the LMS's own signed tokens, with Open edX's prefix.
        self._signed = None if token else SignedTokens()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._headers = headers
        # One pool to the one host. A retry only when the connection could not be made (the request
        # was never sent), so a call is at most two connection attempts and one request.
        self._pool = urllib3.connection_from_url(
            f"{parts.scheme}://{parts.netloc}",
            maxsize=pool_size,
            block=False,
            headers=headers,
            timeout=urllib3.Timeout(total=timeout),
            retries=urllib3.Retry(total=1, connect=1, read=0, status=0, other=0, redirect=0, raise_on_status=False),
        )

    def __repr__(self):
        return f"<AccessClient {self._pool.host}:{self._pool.port}>"

    def _send(self, method, path, body):
        """One request: (response, the signed token it carried, or None)."""
        headers = self._headers
        token = None
        if self._signed is not None:
            try:
                token = self._signed.current()
            except TokenUnavailable as exc:
                raise ServiceUnavailable(str(exc)) from None
            headers = {**headers, "Authorization": f"JWT {token}"}
        try:
            return self._pool.request(method, self._prefix + path, body=body, headers=headers), token
        except urllib3.exceptions.HTTPError as exc:
            raise ServiceUnavailable(type(exc).__name__) from None

    def _call(self, method, path, body=None):
        response, token = self._send(method, path, body)
        if response.status == 401 and token is not None:
            # Once, with a newly signed token: never a loop, and a configured SERVICE_TOKEN is not retried.
            self._signed.forget(token)
            response, _ = self._send(method, path, body)
        if response.status == 404 and method == "GET":
            return None
        if response.status != 200:
            raise ServiceUnavailable(f"HTTP {response.status}")
        try:
            return json.loads(response.data)
        except ValueError:
            raise ServiceUnavailable("an answer that is not JSON") from None

    def decide(self, course_id, action, user_id):
        """One decision; an unknown course (404) is refused, as a batch refuses it."""
        query = {"course_id": course_id, "action": action}
        if user_id is not None:
            query["user_id"] = user_id
        answer = self._call("GET", "/access/?" + urlencode(query))
        if answer is None:
            return Decision(course_id, False, "unknown_course")
        return _decision(course_id, answer)

    def decide_many(self, course_ids, action, user_id):
        """Decisions in the order of ``course_ids``: one call for up to 1000 courses."""
        decisions = []
        for start in range(0, len(course_ids), BATCH_LIMIT):
            chunk = course_ids[start:start + BATCH_LIMIT]
            body = json.dumps({"action": action, "user_id": user_id, "course_ids": chunk})
            answer = self._call("POST", "/access/batch/", body=body)
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list) or [r.get("course_id") if isinstance(r, dict) else None for r in results] != chunk:
                raise ServiceUnavailable("a batch answer that does not match the request")
            decisions += [_decision(r["course_id"], r) for r in results]
        return decisions


def _decision(course_id, answer):
    if not isinstance(answer, dict) or not isinstance(answer.get("allowed"), bool):
        raise ServiceUnavailable("an answer that is not a decision")
    return Decision(course_id, answer["allowed"], str(answer.get("reason", "")))


_client = None
_lock = threading.Lock()


def get_client():
    """The process's client, made on first use from the settings."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = AccessClient(setting("SERVICE_URL"), setting("SERVICE_TOKEN"), setting("TIMEOUT"), setting("POOL_SIZE"))
    return _client


@receiver(setting_changed)
def _forget_client(setting, **kwargs):
    """Settings changed (tests do it): the next call makes a client from the new ones."""
    global _client
    if setting == "COURSE_ACCESS_GROUPS":
        with _lock:
            _client = None
