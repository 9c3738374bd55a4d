"""cinder-lite-backup: Cinder's backup API behind it.  ``api`` is the
service layer the REST handlers call, ``rpcapi``/``manager`` the bus
between the API and the backup services, ``drivers`` the stores."""
