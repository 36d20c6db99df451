"""Node facts: what this machine has (swap, cgroups, kernel, tmpfs noswap), read from files.

Every reader takes ``HostPaths`` so a DaemonSet can point it at ``/host/proc`` and tests can
point it at a fixture tree.
"""
