"""The benchmark's own client of the control plane: plain HTTP through urllib3.

Why not the official client: the benchmark needs a handful of verbs, list pages, and a watch
read line by line as the server flushes it; urllib3's pool is thread-safe, so the kubelet
stand-in's workers and the pod tracker share one without a client object per thread. TLS is
verified against the API server's own self-signed certificate (``--cert-dir``), and the token
is the static one the control plane generated.

Transient answers (429, 5xx, a dropped connection) are retried a few times with a short
pause: the control plane on two CPUs is sometimes slow to answer, and a benchmark that fails
on one slow answer measures nothing.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
ATTEMPTS = 6


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        super().__init__(f"{method} {path}: {status} {str(body)[:300]}")
        self.status = status


class Api:
    def __init__(self, server: str, token: str, ca_file: Path, *, connections: int = 16) -> None:
        self.server = server.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"}
        self.http = urllib3.PoolManager(
            num_pools=2,
            maxsize=connections,
            block=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=str(ca_file),
            retries=False,
        )

    def url(self, path: str, params: dict[str, Any] | None = None) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self.server}{path}{query}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = JSON,
        params: dict[str, Any] | None = None,
        timeout: float = 60.0,
    ) -> tuple[int, Any]:
        """``(status, decoded body)``; transient failures retried, the last one returned."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        status, answer = 599, None
        for attempt in range(ATTEMPTS):
            try:
                response = self.http.request(
                    method,
                    self.url(path, params),
                    body=data,
                    headers=headers,
                    timeout=timeout,
                )
            except urllib3.exceptions.HTTPError as error:
                status, answer = 599, repr(error)
            else:
                status = response.status
                try:
                    answer = json.loads(response.data) if response.data else None
                except ValueError:
                    answer = response.data.decode(errors="replace")
                if status != 429 and status < 500:
                    return status, answer
            if attempt < ATTEMPTS - 1:
                time.sleep(0.25 * (attempt + 1))
        return status, answer

    def ok(self, method: str, path: str, body: Any = None, *, content_type: str = JSON) -> Any:
        status, answer = self.request(method, path, body, content_type=content_type)
        if status >= 300:
            raise ApiError(method, path, status, answer)
        return answer

    def list_all(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection (pages of 500) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 500}
        while True:
            status, page = self.request("GET", path, params=params)
            if status != 200:
                raise ApiError("GET", path, status, page)
            items += page.get("items") or []
            token = page["metadata"].get("continue")
            if not token:
                return items, page["metadata"].get("resourceVersion", "")
            params = {"limit": 500, "continue": token}

    def watch(
        self, path: str, resource_version: str, seconds: int = 240
    ) -> Iterator[dict[str, Any]]:
        """Watch events from ``resource_version``, each as soon as its line arrives."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": seconds,
        }
        response = self.http.request(
            "GET",
            self.url(path, params),
            headers=self.headers,
            preload_content=False,
            timeout=urllib3.Timeout(connect=10, read=seconds + 30),
        )
        try:
            if response.status != 200:
                raise ApiError("WATCH", path, response.status, response.data[:300])
            for line in response:
                if line.strip():
                    yield json.loads(line)
        finally:
            # A watch left early has unread data: close it rather than hand it back warm.
            response.close()
            response.release_conn()
