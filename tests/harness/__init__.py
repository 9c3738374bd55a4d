"""The harness tests and benchmarks share.

* ``util``: waiting, free ports, required programs and services, processes
  by name.
* ``stack``: the whole of cinder_lite in this process (``Stack``) and its
  HTTP client (``Client``), for functional tests; ``start_all`` runs
  ``cinder-lite-all`` as a process.
* ``attach``: attachment requests and connectors as tests make them.
* ``clients``: python-cinderclient's and python-openstackclient's command
  lines, run in this process.
* ``forkrun``: ``python -m cinder_lite.cmd.X`` as a process forked from a
  server that imported cinder_lite once (no interpreter start per command
  or service): ``run`` for commands, ``spawn`` for the clusters' services.
* ``dataplane``: stacks exporting over NBD or iSCSI and what the tests
  look at from the storage side.
* ``cluster``: distributed cinder_lite as separate processes over RabbitMQ
  with MariaDB or PostgreSQL; ``load`` a steady create load on one.
* ``openstack`` (with ``no_network``): Keystone, Glance, Placement and Nova
  around a cluster; ``tempest_*`` runs Tempest against it.

Nothing here imports pytest except where a test's outcome is decided
(``util.need`` and ``util.require_services`` skip or fail the test).
"""
