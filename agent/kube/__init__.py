"""The Kubernetes adapter: raw-JSON API calls, list+watch caches, guarded patches, events.

Nothing above this package sees ``kubernetes.client`` types or ``ApiException``: calls
return plain ``dict`` objects parsed from the wire, and failures are ``agent.kube.errors``.
"""
