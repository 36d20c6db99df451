"""``PrometheusClient``: one instant query (``/api/v1/query``) over urllib3, blocking.

As upstream's client (``prometheus/client_golang``) sends it: a form-encoded POST of
``query`` and ``time``, again as a GET when the server answers 405 or 501 (a read-only
proxy in front), with ``Authorization: Bearer <token>`` when there is a token. The token is
asked of its source at every query, so a rotated one (a projected service-account token, a
Secret that changed) is used from the next query on, as upstream re-reads its own.

What upstream leaves to defaults is set here: every attempt has a connect and a read
timeout; the answer is read up to ``max_response_bytes`` and refused beyond; TLS trusts the
system's CAs plus the service-account CA when the process runs in a pod (upstream trusts
that CA alone), or only ``ca_file`` when one is given, or nothing when
``insecure_skip_tls_verify``; a failure without an answer, a 5xx or a 429 is tried again
after the one retry policy's backoff (``agent.retrying``), at most ``attempts`` times in all.

Why urllib3: the official Kubernetes client depends on it already, so the descheduler gets
a pooled, TLS-capable HTTP client without a new dependency (docs/dependencies.md).
"""

from __future__ import annotations

import json
import ssl
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import urllib3

from agent import __version__
from agent.kubesemantics.wellknown import SERVICE_ACCOUNT_DIR
from agent.prometheus.answer import QueryAnswer, decode_answer
from agent.prometheus.errors import (
    BadAnswer,
    PrometheusError,
    Refused,
    TLSProblem,
    Unavailable,
    certificate_problem,
)
from agent.retrying import Backoff, RetryPolicy

QUERY_PATH = "/api/v1/query"
IN_CLUSTER_CA = Path(SERVICE_ACCOUNT_DIR) / "ca.crt"
"""The service-account CA upstream trusts for Prometheus in a pod."""
DEFAULT_ATTEMPTS = 3
DEFAULT_MAX_RESPONSE_BYTES = 32 * 2**20
"""A vector of one sample per node is about 150 bytes a node: 32 MiB is 200,000 nodes."""
USER_AGENT = f"kubelet-companion-descheduler/{__version__}"

TokenSource = Callable[[], str]
"""Returns the bearer token ("" for none); may raise ``TokenUnavailable``."""


def no_token() -> str:
    return ""


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    """The server's base URL (a path prefix is kept: ``https://host/prometheus``)."""
    timeout: float
    """Seconds for each attempt's connect, and again for its answer (the descheduler's
    ``--prometheus-timeout``)."""
    token: TokenSource = no_token
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    attempts: int = DEFAULT_ATTEMPTS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


def tls_context(
    settings: PrometheusSettings, in_cluster_ca: Path = IN_CLUSTER_CA
) -> ssl.SSLContext:
    """What the client trusts (see the module docstring)."""
    if settings.insecure_skip_tls_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if settings.ca_file:
        return ssl.create_default_context(cafile=settings.ca_file)
    context = ssl.create_default_context()
    if in_cluster_ca.is_file():
        context.load_verify_locations(cafile=str(in_cluster_ca))
    return context


class PrometheusClient:
    """Instant queries against one server; thread-safe (urllib3's pool is)."""

    def __init__(
        self,
        settings: PrometheusSettings,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        context: ssl.SSLContext | None = None,
    ) -> None:
        self.settings = settings
        self.endpoint = settings.url.rstrip("/") + QUERY_PATH
        self.retry = retry or RetryPolicy(
            backoff=Backoff(initial=0.5, cap=5.0), attempts=settings.attempts
        )
        self._sleep = sleep
        self._pool = urllib3.PoolManager(
            ssl_context=context or tls_context(settings),
            retries=False,
            timeout=urllib3.Timeout(connect=settings.timeout, read=settings.timeout),
            maxsize=2,
        )

    def close(self) -> None:
        self._pool.clear()

    def query(self, promql: str, at: float) -> QueryAnswer:
        """The answer to ``promql`` evaluated at Unix time ``at``; ``PrometheusError``
        when there is none after the retries."""
        token = self.settings.token()
        failures = 0
        while True:
            try:
                return self._attempt(promql, at, token)
            except Unavailable as error:
                failures += 1
                wait = self.retry.next_wait(failures, retry_after=error.retry_after)
                if wait is None:
                    raise
                self._sleep(wait)

    def _attempt(self, promql: str, at: float, token: str) -> QueryAnswer:
        form = {"query": promql, "time": f"{at:.3f}"}
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        status, data, retry_after = self._send(
            "POST",
            self.endpoint,
            body=urlencode(form).encode(),
            headers={**headers, "Content-Type": "application/x-www-form-urlencoded"},
        )
        if status in (405, 501):  # upstream's client falls back to GET the same way
            status, data, retry_after = self._send(
                "GET", f"{self.endpoint}?{urlencode(form)}", body=None, headers=headers
            )
        if 200 <= status <= 299:
            return decode_answer(data)
        raise _error_for(status, data, retry_after, self.endpoint)

    def _send(
        self, method: str, url: str, *, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, float | None]:
        limit = self.settings.max_response_bytes
        try:
            with warnings.catch_warnings():
                # The operator chose insecure-skip-tls-verify; the flag's help says so once.
                warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                response = self._pool.request(
                    method,
                    url,
                    body=body,
                    headers=headers,
                    preload_content=False,
                    redirect=False,
                )
            try:
                data = response.read(limit + 1)
            finally:
                response.release_conn()
        except (urllib3.exceptions.HTTPError, OSError) as error:
            if problem := certificate_problem(error):
                raise TLSProblem(
                    f"{method} {self.endpoint}: TLS certificate problem: {problem}"
                ) from error
            raise Unavailable(f"{method} {self.endpoint} failed: {_one_line(error)}") from error
        if len(data) > limit:
            raise BadAnswer(f"{method} {self.endpoint}: the answer is larger than {limit} bytes")
        return response.status, data, _retry_after(response.headers.get("Retry-After"))


def _error_for(
    status: int, data: bytes, retry_after: float | None, endpoint: str
) -> PrometheusError:
    """Our error for a non-2xx answer, with the body's ``errorType`` and ``error`` when it
    is Prometheus's, else its first characters."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        body = None
    error_type = ""
    if isinstance(body, dict) and "error" in body:
        error_type = str(body.get("errorType") or "")
        detail = (
            f"{error_type}: {_one_line(body['error'])}" if error_type else _one_line(body["error"])
        )
    else:
        detail = _one_line(data[:300].decode("utf-8", "replace")) or "no body"
    message = f"{endpoint}: HTTP {status}: {detail}"
    if status == 429 or status >= 500:
        return Unavailable(message, retry_after=retry_after)
    return Refused(message, status=status, error_type=error_type)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 300 else text[:297] + "..."
