"""Names the services and their clients share: the binaries as the
services table and Cinder's API show them."""

# the volume service (one row per host@backend)
VOLUME_BINARY = 'cinder-volume'
# the scheduler service (one row per host)
SCHEDULER_BINARY = 'cinder-scheduler'
# the backup service (one row per host)
BACKUP_BINARY = 'cinder-backup'
# the API process's bus endpoint for compute nodes: not a service of its
# own, it has no row (the name is only what its logs say)
API_BINARY = 'cinder-lite-api'
