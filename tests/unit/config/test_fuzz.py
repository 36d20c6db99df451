"""Fuzzing the config loader: whatever the bytes, the answer is a config or a ConfigError.

Random bytes, random YAML-ish text (with the tags that crash PyYAML's constructors) and
random shapes under the real keys must never end in a traceback: the loader either returns
an ``AgentConfig`` or raises ``ConfigError`` whose errors name their fields' paths.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent.cli import main
from agent.config import AgentConfig, ConfigError, parse_document
from agent.config.schema import yaml_key

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_TOKENS = [
    "shutdownGracePeriod", "memorySwap", "swapBehavior", "readiness", "kube", "priority",
    ":", ": ", "- ", "-", "[", "]", "{", "}", ",", "\n", "  ", " ", "#", "&a", "*a", "'", '"',
    "|", ">", "?", "!!float", "!!timestamp", "!!int", "!!binary", "!!str", "!!map", "!!seq",
    "!!set", "!!null", "!!bool", "!local", "%YAML 1.1\n", "---", "...", "30s", "1e400", ".nan",
    "-.inf", "0x1f", "0o17", "~", "null", "yes", "2001-12-14t21:59:43.10-05:00", "\t", "\\",
    "\x00", "\ufeff", "é", "<<",
]  # fmt: skip

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["30s", "10s", "0s", "512Mi", "LimitedSwap", "127.0.0.1:9477", "/x"])
)
_ANY_SHAPE = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["priority", "mode"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)


def _shape_of(hint: Any) -> st.SearchStrategy[Any]:
    """Documents that follow the schema's keys, with any shape at any point."""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint)
        optional = {yaml_key(f): _shape_of(hints[f.name]) for f in dataclasses.fields(hint)}
        return st.fixed_dictionaries({}, optional=optional) | _ANY_SHAPE
    if origin in (tuple, list):
        (item, *_) = typing.get_args(hint)
        return st.lists(_shape_of(item), max_size=3) | _ANY_SHAPE
    return _ANY_SHAPE


def _parses_or_names_its_errors(data: bytes | str) -> ConfigError | None:
    rejected: ConfigError | None = None
    try:
        config = parse_document(AgentConfig, data, "fuzz.yaml")
    except ConfigError as error:
        rejected = error
    if rejected is None:
        assert isinstance(config, AgentConfig)
        return None
    assert rejected.errors, "a ConfigError names at least one problem"
    assert str(rejected).startswith("invalid config fuzz.yaml:")
    return rejected


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_give_a_config_or_a_config_error(data: bytes) -> None:
    """Any bytes load as a config or raise ConfigError, never another exception."""
    _parses_or_names_its_errors(data)


@FUZZ
@given(st.lists(st.sampled_from(_TOKENS) | st.text(max_size=3), max_size=30).map("".join))
def test_random_yaml_text_gives_a_config_or_a_config_error(text: str) -> None:
    """YAML-ish text, with the tags that crash PyYAML, loads or raises ConfigError."""
    _parses_or_names_its_errors(text)
    _parses_or_names_its_errors(text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(_shape_of(AgentConfig).filter(lambda shape: isinstance(shape, dict)))
def test_random_shapes_under_the_real_keys_name_each_bad_field(shape: dict[str, Any]) -> None:
    """Any values under the real keys load or raise ConfigError naming each bad field's path."""
    error = _parses_or_names_its_errors(yaml.safe_dump(shape))
    if error is not None:
        top_level = [str(key) for key in shape]
        for field in error.errors:
            assert any(
                field.path == key or field.path.startswith((f"{key}.", f"{key}["))
                for key in top_level
            ), f"{field} does not name a field of the document"


@FUZZ
@given(
    st.binary(max_size=120)
    | st.lists(st.sampled_from(_TOKENS), max_size=20).map(
        lambda tokens: "".join(tokens).encode("utf-8", "surrogatepass")
    )
)
def test_a_bad_file_through_the_cli_exits_2_without_a_traceback(data: bytes) -> None:
    """Through the CLI, every file the loader rejects is exit 2 with the error on stderr."""
    try:
        parse_document(AgentConfig, data, "fuzz.yaml")
    except ConfigError:
        pass
    else:
        assume(False)  # a valid config would start doctor for real: not this test's subject
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "agent.yaml"
        path.write_bytes(data)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = main(["doctor", "--config", str(path)])
    assert code == 2
    assert stderr.getvalue().startswith(f"invalid config {path}:")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"nodeName: caf\xe9\n", "not valid UTF-8 (byte 0xe9", id="latin-1"),
        pytest.param(b"\xff\xfen\x00", "not valid UTF-8 (byte 0xff", id="utf-16"),
        pytest.param(b"shutdownGracePeriod: !!float", "not valid YAML", id="empty-float"),
        pytest.param(b"!!timestamp", "not valid YAML", id="bare-timestamp"),
        pytest.param(b"a: !!int", "not valid YAML", id="empty-int"),
        pytest.param(b"[" * 1000, "not valid YAML", id="deep-nesting"),
        pytest.param(
            b"a: " + b"[" * 40 + b"]" * 40, "nested deeper than 32 levels", id="nested-40"
        ),
        pytest.param(
            b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + b"".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n".encode()
                for i in range(6)
            ),
            "more than 100000 values",
            id="alias-bomb",
        ),
    ],
)
def test_inputs_that_crashed_the_parser_are_config_errors(data: bytes, reason: str) -> None:
    """Non-UTF-8 bytes, YAML that crashes PyYAML's constructors, and documents too deep or
    (through aliases) too big to walk are reported as bad input."""
    error = _parses_or_names_its_errors(data)
    assert error is not None
    assert reason in str(error.errors[0])
