"""The plugin framework: what a plugin is (``types``), which plugins exist (``registry``), and
how a policy profile turns names into enabled plugins per extension point (``profile``)."""
