"""The API server's syntax for names, label keys and label values, checked as it checks them.

One copy for everything that reads a name an operator or a file gave us: the config's
namespaces and taint keys, label selectors, and the objects of a snapshot file (a name with a
zero-width space, or a label value of 64 characters, is refused there as the API server
would have refused to store it). Each check returns why the value is not valid, or ``None``.

The patterns end in ``\\Z``, not ``$``: ``$`` also matches before a final newline, which the
API server's patterns (Go's ``regexp``, where ``$`` is the end of text) do not allow.
"""

from __future__ import annotations

import re

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
"""RFC 1123 label, as Kubernetes checks namespace names (length is checked apart)."""
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
"""RFC 1123 subdomain, as Kubernetes checks node names and key prefixes."""
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


def dns_label_problem(name: str) -> str | None:
    """Why ``name`` is not an RFC 1123 label (a namespace's name), or ``None``."""
    if len(name) > DNS_LABEL_MAX or not DNS_LABEL.match(name):
        return (
            f"must be a DNS label: at most {DNS_LABEL_MAX} lowercase alphanumerics or '-', "
            "starting and ending alphanumeric"
        )
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not an RFC 1123 subdomain (most objects' names), or ``None``."""
    if len(name) > DNS_SUBDOMAIN_MAX or not DNS_SUBDOMAIN.match(name):
        return (
            f"must be a DNS subdomain: at most {DNS_SUBDOMAIN_MAX} lowercase alphanumerics, "
            "'-' or '.', each part starting and ending alphanumeric"
        )
    return None


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label or taint key (``[prefix/]name``), or ``None``."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "must be [prefix/]name with a single '/'"
    if prefix and (len(prefix) > DNS_SUBDOMAIN_MAX or not DNS_SUBDOMAIN.match(prefix)):
        return "prefix must be a lowercase DNS subdomain"
    if not name or len(name) > DNS_LABEL_MAX or not _NAME_PART.match(name):
        return "name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value (empty is valid), or ``None``."""
    if len(value) > LABEL_VALUE_MAX or not _LABEL_VALUE.match(value):
        return (
            f"must be at most {LABEL_VALUE_MAX} alphanumerics, '-', '_' or '.', starting and "
            "ending alphanumeric (or empty)"
        )
    return None
