"""The three PATCH formats: JSON patch (RFC 6902), JSON merge patch (RFC 7386), strategic merge.

Agents patch taints, conditions, labels and finalizers; whether a list is merged by key or
replaced whole decides whether a patch clobbers another writer's entries, so the strategic
merge here follows the `patchStrategy`/`patchMergeKey` tags of the fields agents touch.
Strategic merge is a simplification: list strategies come from the table below (by path
suffix) rather than from the Go struct tags of every type, and `$retainKeys` and
`$setElementOrder` directives are accepted but ignored.
"""

from __future__ import annotations

from typing import Any, Final

from .objects import canonical, deep_copy
from .status import ApiError, bad_request, unprocessable

JSON = dict[str, Any]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"

# (path suffix) -> merge key, or "" for a set-like list of primitives. Lists not named here
# are atomic (replaced whole), which is the real behaviour for e.g. spec.taints and
# spec.tolerations.
_LIST_STRATEGIES: dict[tuple[str, ...], str] = {
    ("metadata", "ownerReferences"): "uid",
    ("metadata", "finalizers"): "",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("containers", "env"): "name",
    ("initContainers", "env"): "name",
    ("containers", "ports"): "containerPort",
    ("initContainers", "ports"): "containerPort",
    ("containers", "volumeMounts"): "mountPath",
    ("initContainers", "volumeMounts"): "mountPath",
    ("containers", "volumeDevices"): "devicePath",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "podCIDRs"): "",
    ("spec", "ports"): "port",
    ("status", "conditions"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("status", "addresses"): "type",
}

_DELETE: Final = object()


def list_strategy(path: tuple[str, ...]) -> str | None:
    """The merge key of the list at `path`, `""` for a primitive set, None when atomic."""
    for suffix, key in _LIST_STRATEGIES.items():
        if path[-len(suffix) :] == suffix:
            return key
    return None


# --- JSON pointer / JSON patch -------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise bad_request(f"invalid JSON patch path: {path!r}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"JSON pointer must be empty or start with '/': {path!r}")
    return [segment.replace("~1", "/").replace("~0", "~") for segment in path[1:].split("/")]


def _list_index(container: list[Any], segment: str, *, allow_end: bool) -> int:
    if allow_end and segment == "-":
        return len(container)
    if not segment.isdigit() or (len(segment) > 1 and segment.startswith("0")):
        raise unprocessable(f"invalid array index {segment!r}")
    index = int(segment)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise unprocessable(f"array index {index} out of bounds")
    return index


def _resolve_parent(doc: Any, tokens: list[str]) -> Any:
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict):
            if token not in current:
                raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")
            current = current[token]
        elif isinstance(current, list):
            current = current[_list_index(current, token, allow_end=False)]
        else:
            raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")
    return current


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise unprocessable(f"doc is missing key: /{'/'.join(tokens)}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_list_index(parent, last, allow_end=False)]
    raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, last, allow_end=True), value)
    else:
        raise unprocessable(
            f"add operation does not apply: doc is missing path: /{'/'.join(tokens)}"
        )
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise unprocessable("remove operation does not apply to the whole document")
    parent = _resolve_parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise unprocessable(
                f"remove operation does not apply: doc is missing path: /{'/'.join(tokens)}"
            )
        del parent[last]
    elif isinstance(parent, list):
        del parent[_list_index(parent, last, allow_end=False)]
    else:
        raise unprocessable(
            f"remove operation does not apply: doc is missing path: /{'/'.join(tokens)}"
        )
    return doc


def _op_add(doc: Any, op: JSON) -> Any:
    return _add(doc, _pointer(op.get("path")), deep_copy(op["value"]))


def _op_remove(doc: Any, op: JSON) -> Any:
    return _remove(doc, _pointer(op.get("path")))


def _op_replace(doc: Any, op: JSON) -> Any:
    tokens = _pointer(op.get("path"))
    _get(doc, tokens)  # the target must exist
    if not tokens:
        return deep_copy(op["value"])
    return _add(_remove(doc, tokens), tokens, deep_copy(op["value"]))


def _op_move(doc: Any, op: JSON) -> Any:
    source = _pointer(op.get("from"))
    value = deep_copy(_get(doc, source))
    return _add(_remove(doc, source), _pointer(op.get("path")), value)


def _op_copy(doc: Any, op: JSON) -> Any:
    value = deep_copy(_get(doc, _pointer(op.get("from"))))
    return _add(doc, _pointer(op.get("path")), value)


def _op_test(doc: Any, op: JSON) -> Any:
    tokens = _pointer(op.get("path"))
    try:
        actual = _get(doc, tokens)
    except ApiError:
        actual = None
    if canonical(actual) != canonical(op["value"]):
        # json-patch's wording, which the API server passes on in details.causes.
        raise unprocessable(f"testing value {op.get('path')} failed: test failed")
    return doc


_OPERATIONS = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def apply_json_patch(doc: JSON, operations: Any) -> JSON:
    """Apply an RFC 6902 patch; malformed patches are 400, failing operations 422."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result: Any = deep_copy(doc)
    for op in operations:
        handler = _OPERATIONS.get(str(op.get("op"))) if isinstance(op, dict) else None
        if handler is None:
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        if op["op"] in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"missing value for {op['op']} operation")
        result = handler(result, op)
    if not isinstance(result, dict):
        raise unprocessable("the patch replaced the object with a non-object value")
    return result


# --- JSON merge patch ------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result = deep_copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- Strategic merge patch -------------------------------------------------------------------


def _is_directive_key(key: str) -> bool:
    return key == "$retainKeys" or key.startswith("$setElementOrder/")


def _merge_list(original: Any, patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    strategy = list_strategy(path)
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [
            _strategic(None, i, path) if isinstance(i, dict) else deep_copy(i)
            for i in patch
            if not (isinstance(i, dict) and i.get("$patch") == "replace")
        ]
    if strategy is None:
        return [_strategic(None, i, path) if isinstance(i, dict) else deep_copy(i) for i in patch]
    result: list[Any] = deep_copy(original) if isinstance(original, list) else []
    if strategy == "":
        result.extend(deep_copy(i) for i in patch if i not in result)
        return result
    for item in patch:
        if not isinstance(item, dict) or strategy not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {strategy}")
        index = next(
            (
                i
                for i, e in enumerate(result)
                if isinstance(e, dict) and e.get(strategy) == item[strategy]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append(_strategic(None, item, path))
        else:
            result[index] = _strategic(result[index], item, path)
    return result


def _strategic(original: Any, patch: JSON, path: tuple[str, ...]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if k != "$patch"}
    result: JSON = deep_copy(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if key == "$patch" or _is_directive_key(key):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            target = key.split("/", 1)[1]
            if isinstance(result.get(target), list) and isinstance(value, list):
                result[target] = [v for v in result[target] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        child_path = (*path, key)
        if isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child_path)
        elif isinstance(value, dict):
            merged = _strategic(result.get(key), value, child_path)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


def strategic_merge_patch(original: JSON, patch: Any) -> JSON:
    """Apply a strategic merge patch to a built-in object."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    merged = _strategic(original, patch, ())
    if merged is _DELETE:
        raise unprocessable("a strategic merge patch cannot delete the whole object")
    result: JSON = merged
    return result
