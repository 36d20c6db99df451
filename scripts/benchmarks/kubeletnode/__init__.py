"""A real one-node cluster on this machine: control plane, containerd + runc, CNI, a kubelet.

What ``scripts/benchmarks/realnode.py`` runs the agent beside: a real kubelet that kills
containers when their pods are deleted, makes the pod cgroups the agent reads and reports
pods Ready. Nothing off the machine is reached: the images are built here from Debian's
``busybox-static`` (``image.py``), and the network is one bridge with no routes out.
"""
