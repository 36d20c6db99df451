"""The rendered base (daemonset/base): the descheduler's RBAC is exactly what it needs, and
its Deployment runs it as upstream's HA mode does, unprivileged."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness.kustomize import DESCHEDULER_ACCOUNT as ACCOUNT
from tests.harness.kustomize import JSON, NAMESPACE, render, target_id, targets
from tests.harness.kustomize import one as one_of

READ = ("list", "watch")
DESCHEDULER_CLUSTER_GRANTS = {
    *(("", resource, verb) for resource in ("pods", "nodes", "namespaces") for verb in READ),
    *(("", "persistentvolumeclaims", verb) for verb in READ),
    *(("policy", "poddisruptionbudgets", verb) for verb in READ),
    *(("scheduling.k8s.io", "priorityclasses", verb) for verb in READ),
    *(
        ("apps", kind, verb)
        for kind in ("deployments", "replicasets", "statefulsets")
        for verb in READ
    ),
    *(("", "replicationcontrollers", verb) for verb in READ),
    *(("kubelet-companion.io", "nodereports", verb) for verb in READ),
    ("metrics.k8s.io", "nodes", "list"),  # KubernetesMetrics: no watch in that API
    ("metrics.k8s.io", "pods", "list"),
    ("", "pods/eviction", "create"),
    ("", "nodes", "get"),  # CriticalAddonRescue and NodeShutdownRecovery: a fresh read
    ("", "nodes", "patch"),  # ... then the guarded patch of our own taint
    ("", "events", "create"),
    ("", "events", "patch"),
}
"""(apiGroup, resource, verb) the descheduler may use cluster-wide, and nothing more."""

DESCHEDULER_LEASE_GRANTS = {
    ("coordination.k8s.io", "leases", "get", "descheduler"),
    ("coordination.k8s.io", "leases", "update", "descheduler"),
    ("coordination.k8s.io", "leases", "create", ""),  # resourceNames cannot narrow create
}
"""(apiGroup, resource, verb, resourceName or "" for any) in the descheduler's namespace."""


def one(kind: str, name: str) -> JSON:
    return one_of(render(), kind, name)


def grants(role: JSON) -> set[tuple[str, ...]]:
    """Every (apiGroup, resource, verb[, resourceName]) a Role or ClusterRole allows."""
    allowed: set[tuple[str, ...]] = set()
    for rule in role["rules"]:
        names = rule.get("resourceNames") or [""]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in names:
                        if role["kind"] == "ClusterRole":
                            assert name == "", "the ClusterRole names no objects"
                            allowed.add((group, resource, verb))
                        else:
                            allowed.add((group, resource, verb, name))
    return allowed


def bound_to_account(binding: JSON, role_kind: str, role_name: str) -> bool:
    return binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": role_kind,
        "name": role_name,
    } and binding["subjects"] == [
        {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}
    ]


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_every_rendered_object_is_a_kubernetes_object(target: Path) -> None:
    """Each object the base or an overlay renders has apiVersion, kind and a name."""
    docs = render(target)
    assert docs
    for doc in docs:
        assert doc.get("apiVersion"), doc
        assert doc.get("kind"), doc
        assert doc.get("metadata", {}).get("name"), doc


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_no_rbac_rule_uses_a_wildcard(target: Path) -> None:
    """No rendered Role or ClusterRole grants '*' groups, resources or verbs."""
    for doc in render(target):  # type: ignore[arg-type]
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        for rule in doc["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in value for value in rule.get(field) or []), (doc, rule)
            assert "nonResourceURLs" not in rule, (doc, rule)


def test_the_descheduler_cluster_role_grants_exactly_what_it_needs() -> None:
    """List+watch of the cached kinds, eviction, events: nothing more (no get, no delete,
    no writes)."""
    role = one("ClusterRole", ACCOUNT)
    assert grants(role) == DESCHEDULER_CLUSTER_GRANTS
    assert bound_to_account(one("ClusterRoleBinding", ACCOUNT), "ClusterRole", ACCOUNT)


def test_the_descheduler_may_touch_only_leases_in_its_namespace_and_update_only_its_own() -> None:
    """Leases through a namespaced Role: get/update by name, create unnamed (RBAC's limit)."""
    role = one("Role", f"{ACCOUNT}-lease")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role) == DESCHEDULER_LEASE_GRANTS
    binding = one("RoleBinding", f"{ACCOUNT}-lease")
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert bound_to_account(binding, "Role", f"{ACCOUNT}-lease")
    account = one("ServiceAccount", ACCOUNT)
    assert account["metadata"]["namespace"] == NAMESPACE


def test_the_descheduler_may_read_one_secret_the_prometheus_token() -> None:
    """A Prometheus token Secret is read by name, in the descheduler's namespace, get only."""
    name = f"{ACCOUNT}-prometheus-token"
    role = one("Role", name)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert grants(role) == {("", "secrets", "get", "kubelet-companion-prometheus-token")}
    binding = one("RoleBinding", name)
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert bound_to_account(binding, "Role", name)


def test_the_descheduler_deployment_runs_two_leader_elected_unprivileged_replicas() -> None:
    """Two replicas, --leader-elect with a 5 m interval, the policy from its ConfigMap,
    probes on the metrics port 9478, requests and a memory limit, non-root, read-only root."""
    deployment = one("Deployment", ACCOUNT)
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == ACCOUNT
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert not pod.get("hostNetwork")
    assert not pod.get("hostPID")
    (container,) = pod["containers"]
    args = container["args"]
    assert args[0] == "descheduler"
    assert "--leader-elect" in args
    assert "--descheduling-interval=5m" in args
    assert "--policy-config-file=/etc/kubelet-companion/policy.yaml" in args
    # The Lease lives where the Role for it is: the descheduler's own namespace.
    assert "--leader-elect-resource-namespace=$(POD_NAMESPACE)" in args
    (namespace_env,) = [env for env in container["env"] if env["name"] == "POD_NAMESPACE"]
    assert namespace_env["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert {"name": "metrics", "containerPort": 9478} in container["ports"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert "memory" in container["resources"]["limits"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["privileged"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    config = one("ConfigMap", ACCOUNT)["data"]["descheduler.yaml"]
    (config_volume,) = [v for v in pod["volumes"] if v["name"] == "config"]
    assert config_volume["configMap"]["name"] == one("ConfigMap", ACCOUNT)["metadata"]["name"]
    assert yaml.safe_load(config)["metricsBindAddress"] == "0.0.0.0:9478"


def test_the_deployment_mounts_the_one_config_map_that_is_rendered() -> None:
    """The descheduler's config and policy come from its one ConfigMap, rendered with its
    hash in its namespace, mounted where the args look for them."""
    pod = one("Deployment", ACCOUNT)["spec"]["template"]["spec"]
    sources = [v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v]
    config_map = one("ConfigMap", ACCOUNT)
    assert sources == [config_map["metadata"]["name"]]
    assert config_map["metadata"]["namespace"] == NAMESPACE
    assert set(config_map["data"]) == {"descheduler.yaml", "policy.yaml"}


def test_the_example_policy_is_upstreams_low_node_utilization_example() -> None:
    """The example policy is the upstream README's LowNodeUtilization one: 20/50 on cpu,
    memory and pods, enabled at the balance extension point."""
    text = one("ConfigMap", ACCOUNT)["data"]["policy.yaml"]
    policy = yaml.safe_load(text)
    assert policy["apiVersion"] == "descheduler/v1alpha2"
    assert policy["kind"] == "DeschedulerPolicy"
    (profile,) = policy["profiles"]
    (config,) = profile["pluginConfig"]
    assert config["name"] == "LowNodeUtilization"
    assert config["args"] == {
        "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
        "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    }
    assert profile["plugins"] == {"balance": {"enabled": ["LowNodeUtilization"]}}
