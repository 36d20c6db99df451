"""What Kubernetes objects mean, as the API server, the scheduler and kubelet read them.

Label selectors, tolerations, node and pod affinity, QoS and criticality, resource requests,
quantities, names, timestamps, which pods are mirror, static or DaemonSet pods, Kubernetes'
own names (``wellknown``), and which keys and taints on a Node are the descheduler's
(``nodekeys``, ``taintownership``). Plain data in, answers out: no client, no file, no clock.
It sits below every other layer, so the config can check a name, and the descheduler's pure
planner can match a selector, without reaching the adapter that talks to the API server.
"""
