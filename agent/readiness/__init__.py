"""The node readiness gate: lift the critical-components taint once the node can take work.

Pure core (plain data in, decisions out): ``presets`` (the keys), ``placement`` (should a
critical DaemonSet run here, by the scheduler's matching rules in
``agent.kubesemantics.tolerations`` and ``agent.kubesemantics.nodeaffinity``), ``checks`` (the
three checks and the verdict), ``gate`` (lift / re-add / hold, with hold times),
``node_writes`` (the patch builders), ``notices`` (Events), ``expectations``.
Around it: ``inputs`` (the watches), ``controller`` (events in, guarded patches out),
``metrics``, and the ``readiness`` command (``commands``, ``gather``, ``report``).
"""
