"""Quotas: the resources, their limits, and the check made when a
volume grows what its project uses.

Limits: a project's own (``quotas`` table), else the ``default`` quota
class's, else the configured default.  ``-1`` is unlimited.  Usage is
recorded by ``cinder_lite.db.volumes`` in the transactions that change
the volumes (see ``cinder_lite.db.quotas``); the check here is asked
with the usage rows locked, so two creates can never both take the last
volume of a quota.

Cinder's API names per-type resources ``volumes_<type name>``; they are
kept by type id (``volumes:<id>``), so renaming a type keeps its limits.
``snapshots`` count the live snapshots (each also counts its volume's
size in ``gigabytes``, as in Cinder); ``backups`` count the live backups
and ``backup_gigabytes`` the sizes of their volumes.
"""
import re

from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import volume_types as db_types

PER_VOLUME = 'per_volume_gigabytes'
# Cinder's quota set, in its order, and the option of each default
GLOBAL = (('volumes', 'quota_volumes'),
          (PER_VOLUME, 'per_volume_size_limit'),
          ('snapshots', 'quota_snapshots'),
          ('gigabytes', 'quota_gigabytes'),
          ('backups', 'quota_backups'),
          ('backup_gigabytes', 'quota_backup_gigabytes'),
          ('groups', 'quota_groups'))
PER_TYPE = ('volumes', 'snapshots', 'gigabytes')
LIMIT_MAX = 2 ** 31 - 1
PROJECT_ID = re.compile(r'[A-Za-z0-9_.-]{1,64}')


class Catalogue:
    """The resources of a quota set as this cloud has them now: the
    global ones and three per live volume type."""

    def __init__(self, session):
        self.type_names = db_types.live_names(session)
        self.by_name = {}
        for name, _option in GLOBAL:
            self.by_name[name] = name
        for type_id, type_name in sorted(self.type_names.items(),
                                         key=lambda item: item[1]):
            for resource in PER_TYPE:
                self.by_name['%s_%s' % (resource, type_name)] = \
                    db_quotas.type_key(resource, type_id)
        self.by_key = {key: name for name, key in self.by_name.items()}

    def api_name(self, key):
        name = self.by_key.get(key)
        if name is not None:
            return name
        resource, type_id = db_quotas.split_key(key)
        return '%s_%s' % (resource, self.type_names.get(type_id, type_id))

    def keys(self):
        """Internal keys in Cinder's order."""
        return list(self.by_name.values())


def default_of(conf, key):
    resource, type_id = db_quotas.split_key(key)
    if type_id is not None:
        return -1
    return getattr(conf, dict(GLOBAL)[resource])


def class_limits(conf, session, class_name='default'):
    """key -> limit of a quota class: its own, else the configured
    default (``default`` is the class every project falls back to)."""
    own = db_quotas.class_limits(session, class_name)
    if class_name != 'default':
        base = class_limits(conf, session)
        base.update(own)
        return base
    return _Limits(conf, own)


def project_limits(conf, session, project_id):
    """key -> limit of a project: its own, else the default class's,
    else the configured default (one query)."""
    own, default_class = db_quotas.limits(session, project_id)
    found = _Limits(conf, default_class)
    found.update(own)
    return found


class _Limits(dict):
    """Limits with the configured default for a key not set."""

    def __init__(self, conf, given):
        super().__init__(given)
        self._conf = conf

    def __missing__(self, key):
        return default_of(self._conf, key)


class Checker:
    """Asked by the volume SQL about every resource a change grows, with
    the usage rows locked (``check(project, key, delta, in_use,
    reserved)``): raises OverQuota when it would pass its limit.  Limits
    are read once per project, in the caller's transaction, at the first
    question: after the lock, so a limit that an update committed while
    this waited for the rows is the one checked."""

    def __init__(self, conf, session, size=None):
        """``size``: the new size of the volume that grows, checked
        against per_volume_gigabytes at the first question (so with the
        limits read once the usage rows are locked: a limit set
        meanwhile is seen)."""
        self.conf = conf
        self.session = session
        self._limits = {}
        self._size = size

    def limits(self, project_id):
        # (read once asked: callers ask only with the usage rows locked,
        # but for ``now``)
        if project_id not in self._limits:
            self._limits[project_id] = project_limits(
                self.conf, self.session, project_id)
        return self._limits[project_id]

    def size(self, project_id, size):
        """The per_volume_gigabytes limit of one volume's size (asked
        with the usage rows locked, or by ``now``)."""
        limit = self.limits(project_id)[PER_VOLUME]
        if 0 <= limit < size:
            raise exception.VolumeSizeExceedsLimit(size=size, limit=limit)

    def __call__(self, project_id, key, delta, in_use, reserved):
        if self._size is not None:
            size, self._size = self._size, None
            self.size(project_id, size)
        limit = self.limits(project_id)[key]
        grows = delta[0] + delta[1]
        if limit < 0 or in_use + reserved + grows <= limit:
            return
        resource, type_id = db_quotas.split_key(key)
        name = resource if type_id is None else '%s_%s' % (
            resource, db_types.names(self.session, [type_id]).get(
                type_id, type_id))
        if resource == db_quotas.VOLUMES:
            raise exception.VolumeLimitExceeded(allowed=limit, name=name)
        if resource == db_quotas.GROUPS:
            raise exception.GroupLimitExceeded(allowed=limit)
        if resource == db_quotas.SNAPSHOTS:
            raise exception.SnapshotLimitExceeded(allowed=limit, name=name)
        raise exception.VolumeSizeExceedsAvailableQuota(
            name=name, requested=grows, quota=limit,
            consumed=in_use + reserved)

    def now(self, project_id, deltas, size=None):
        """Refuse what is over quota now, read without locks (to answer
        413 before other checks); the change itself checks again with the
        rows locked."""
        if size is not None:
            self.size(project_id, size)
        current = db_quotas.read(self.session, project_id, deltas)
        for key, delta in sorted(deltas.items()):
            if delta[0] > 0 or delta[1] > 0:
                self(project_id, key, delta, *current.get(key, (0, 0)))


def make_usage_rows(project_id, resources):
    """Make the usage rows a project never had, each in a transaction of
    its own: a transaction that inserts one row holds no lock while it
    waits for another (MariaDB deadlocks inserts of several rows racing
    on one unique index).  Each is run again on a deadlock: on multi-writer
    Galera two nodes inserting the same row both get in, and the second
    commit is refused; run again, it finds the row there."""
    for resource in sorted(resources):
        db_api.run_writer(db_quotas.ensure, project_id, [resource])


def ensuring_rows(work, attempts=4):
    """Run ``work()`` (one writer transaction of its own); when it needs
    usage rows a project never had, make them and run it again (a
    transaction that charges several things, as a transfer of a volume
    with its snapshots, may find them missing one after the other)."""
    for _ in range(attempts - 1):
        try:
            return work()
        except db_quotas.MissingUsage as e:
            make_usage_rows(e.project_id, e.resources)
    return work()
