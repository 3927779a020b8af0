"""
The service's access API over one HTTP connection pool per process: single decisions
(``GET access/``) and batches (``POST access/batch/``). Any answer but a decision, or none
within the timeout, is ``ServiceUnavailable``; the pipeline steps turn that into the configured
fail mode. The token (the LMS's own short-lived JWT, or a configured SERVICE_TOKEN) is sent in
a header and appears in no message.
"""

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


class AccessClient:
    def __init__(self, service_url, token, timeout, pool_size):
        if not service_url:
            raise ServiceUnavailable("COURSE_ACCESS_GROUPS['SERVICE_URL'] is not set")
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

    def _call(self, method, path, body=None):
        headers = self._headers
        if self._signed is not None:
            try:
                headers = {**headers, "Authorization": f"JWT {self._signed.current()}"}
            except TokenUnavailable as exc:
                raise ServiceUnavailable(str(exc)) from None
        try:
            response = self._pool.request(method, self._prefix + path, body=body, headers=headers)
        except urllib3.exceptions.HTTPError as exc:
            raise ServiceUnavailable(type(exc).__name__) from None
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
