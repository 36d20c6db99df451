"""An instant query's answer, decoded from the bytes Prometheus sent (pure).

The shape is Prometheus's HTTP API (``/api/v1/query``)::

    {"status": "success", "data": {"resultType": "vector",
     "result": [{"metric": {"instance": "node-a"}, "value": [1700000000.1, "0.42"]}]},
     "warnings": ["..."]}

or ``{"status": "error", "errorType": "bad_data", "error": "..."}``. Values travel as
strings (``"NaN"``, ``"+Inf"`` included) and are read as floats. Only a vector's samples are
kept; another result type is reported with its type, so the caller can say what it got
(upstream: "expected query results to be of type "vector", got "matrix" instead"). Anything
else is a ``BadAnswer`` naming what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.prometheus.errors import BadAnswer

VECTOR = "vector"
MAX_LABEL_BYTES = 4096
"""A label value longer than this is cut (a node name is at most 253 bytes)."""


@dataclass(frozen=True, slots=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class QueryAnswer:
    result_type: str
    samples: tuple[Sample, ...] = ()
    """The vector's samples (empty for another result type)."""
    warnings: tuple[str, ...] = ()


def decode_answer(data: bytes) -> QueryAnswer:
    """The answer in ``data``, or ``BadAnswer`` saying why it is none."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise BadAnswer(f"the answer is not JSON: {_short(error)}") from error
    return answer_from(body)


def answer_from(body: Any) -> QueryAnswer:
    """The answer in parsed JSON (a file that holds one, say), or ``BadAnswer``."""
    if not isinstance(body, dict):
        raise BadAnswer("the answer is not a JSON object")
    if body.get("status") == "error":
        raise BadAnswer(f"{body.get('errorType') or 'error'}: {_short(body.get('error'))}")
    if body.get("status") != "success":
        raise BadAnswer(f"the answer's status is {_short(body.get('status'))}, not success")
    data_field = body.get("data")
    if not isinstance(data_field, dict):
        raise BadAnswer("the answer has no data object")
    result_type = data_field.get("resultType")
    if not isinstance(result_type, str):
        raise BadAnswer("the answer has no resultType")
    warnings = tuple(_short(w) for w in body.get("warnings") or () if isinstance(w, str))
    if result_type != VECTOR:
        return QueryAnswer(result_type, (), warnings)
    result = data_field.get("result")
    if not isinstance(result, list):
        raise BadAnswer("the vector's result is not a list")
    return QueryAnswer(VECTOR, tuple(_sample(i, item) for i, item in enumerate(result)), warnings)


def _sample(index: int, item: Any) -> Sample:
    if not isinstance(item, dict):
        raise BadAnswer(f"result[{index}] is not an object")
    metric = item.get("metric") or {}
    value = item.get("value")
    if not isinstance(metric, dict):
        raise BadAnswer(f"result[{index}].metric is not an object")
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
        raise BadAnswer(f'result[{index}].value is not [time, "number"]')
    try:
        number = float(value[1])
    except ValueError:
        raise BadAnswer(f"result[{index}].value {_short(value[1])} is not a number") from None
    labels = {
        str(key)[:MAX_LABEL_BYTES]: str(label)[:MAX_LABEL_BYTES]
        for key, label in metric.items()
        if isinstance(label, str)
    }
    return Sample(labels, number)


def _short(value: object) -> str:
    """A value from the answer for a message: one line, at most 200 characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= 200 else text[:197] + "..."
