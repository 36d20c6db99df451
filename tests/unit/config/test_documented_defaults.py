"""The defaults the docs show are the code's: each page's configuration block, loaded by the
real loader, gives exactly the section's defaults, and docs/swap.md names the one
``swapBehavior`` default (``agent.config.swap.DEFAULT_SWAP_BEHAVIOR``)."""

from __future__ import annotations

import re

import pytest

from agent.config import AgentConfig, parse_document
from agent.config.swap import DEFAULT_SWAP_BEHAVIOR
from tests.harness.repository import DOCS

YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def configuration_block(page: str, key: str) -> str:
    """The page's one YAML block whose top-level key is ``key``."""
    (block,) = [
        block
        for block in YAML_BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
        if block.startswith(f"{key}:")
    ]
    return block


@pytest.mark.parametrize(
    ("page", "key", "section"),
    [("swap.md", "memorySwap", "memory_swap"), ("nodereport.md", "report", "report")],
)
def test_a_pages_configuration_block_is_the_sections_defaults(
    page: str, key: str, section: str
) -> None:
    """Every value shown is the default, and every default is shown."""
    block = configuration_block(page, key)
    documented = getattr(parse_document(AgentConfig, block, f"docs/{page}"), section)
    assert documented == getattr(AgentConfig(), section)
    shown = set(re.findall(r"^  ([A-Za-z]+):", block, re.MULTILINE))
    defaults = getattr(AgentConfig(), section)
    assert len(shown) == len(vars(defaults))


def test_swap_page_states_the_one_swap_behavior_default() -> None:
    """The prose says the default the code has, which is the kubelet's (NoSwap since v1.30)."""
    text = (DOCS / "swap.md").read_text(encoding="utf-8")
    assert f"defaults to **`{DEFAULT_SWAP_BEHAVIOR}`**" in text
    assert DEFAULT_SWAP_BEHAVIOR == "NoSwap"
