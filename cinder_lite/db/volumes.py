"""SQL for volumes.  Status changes are compare-and-swap updates.

Whatever changes what a volume counts against its project's quota (it is
created or deleted, or its size, its pending extend or its type changes)
changes the recorded usage in the same transaction, here: the usage is
the volumes' by construction.  ``check`` (see ``cinder_lite.db.quota_limits``)
refuses growth beyond a limit, decided with the usage rows locked.
"""
import datetime

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import image_metadata as db_image_metadata
from cinder_lite.db import volume_metadata as db_metadata

SORT_KEYS = ('id', 'name', 'status', 'size', 'created_at', 'updated_at',
             'availability_zone', 'bootable', 'host', 'project_id')


def _counts(row):
    """What a volume row counts against quota (nothing once deleted)."""
    if row is None or row.deleted:
        return {}
    return db_quotas.footprint(row.volume_type_id, row.size,
                               row.pending_size)


def create(session, values, check=None, metadata=None,
           image_metadata=None):
    """``image_metadata``: what the volume keeps of the image it is made
    from (directly, or through the snapshot or volume it is copied
    from)."""
    volume = models.Volume(**values)
    db_quotas.change(session, volume.project_id,
                     db_quotas.footprint(volume.volume_type_id, volume.size),
                     check)
    session.add(volume)
    session.flush()
    db_metadata.add(session, volume.id, metadata)
    if image_metadata:
        db_image_metadata.update(session, volume.id, image_metadata)
    return volume


def lock(session, volume_id, project_id=None):
    """Take the row lock of a live volume (of ``project_id``, when
    given) and return it as it is under the lock; VolumeNotFound.
    The lock writes the row (``query.lock_rows``: certified by Galera)."""
    V = models.Volume
    scope = [V.project_id == project_id] if project_id is not None else []
    if not query.lock_rows(session, V, V.id == volume_id,
                           V.deleted == sa.false(), *scope):
        raise exception.VolumeNotFound(volume_id=volume_id)
    return session.execute(_live(sa.select(V).where(
        V.id == volume_id))).scalar_one()


def _lock_counted(session, volume_id):
    """Lock a live volume's row (``query.lock_rows``) and read what it
    counts; None when there is no such volume."""
    V = models.Volume
    if not query.lock_rows(session, V, V.id == volume_id,
                           V.deleted == sa.false()):
        return None
    return session.execute(
        sa.select(V.id, V.project_id, V.volume_type_id, V.size,
                  V.pending_size, V.status, V.deleted)
        .where(V.id == volume_id, V.deleted == sa.false())).first()


def remove(session, volume_id):
    """Erase the record of a volume that was never handed on (a create
    whose cast failed), and what it counted."""
    row = _lock_counted(session, volume_id)
    if row is None:
        return
    db_metadata.purge(session, volume_id)
    db_image_metadata.purge(session, volume_id)
    session.execute(models.Volume.__table__.delete().where(
        models.Volume.id == volume_id))
    db_quotas.change(session, row.project_id,
                     db_quotas.difference(_counts(row), {}))


# the columns of a volume ``summary`` reads
SUMMARY_COLUMNS = ('id', 'size', 'host', 'cluster_name', 'project_id',
                   'user_id', 'name', 'status', 'availability_zone',
                   'volume_type_id', 'created_at', 'multiattach',
                   'snapshot_id', 'source_volid', 'image_id', 'backup_id',
                   'migration_status')


class Record:
    """A volume row as a Core statement read it, its columns as
    attributes, for reading: the attach path reads a volume with its
    attachment in one statement (``db.attachments.get_with_volume``),
    without loading an ORM object.  ``prefix``: the columns' labels in
    ``fields``."""

    COLUMNS = tuple(models.Volume.__table__.c.keys())
    __slots__ = COLUMNS

    def __init__(self, fields, prefix=''):
        for key in self.COLUMNS:
            setattr(self, key, fields[prefix + key])

    def __repr__(self):
        return '<volume %s %s>' % (self.id, self.status)


def summary(volume):
    """What the volume service needs of a volume row, as a plain dict
    that crosses the bus."""
    return summary_of({k: getattr(volume, k) for k in SUMMARY_COLUMNS})


def summary_of(fields):
    """``summary`` of the ``SUMMARY_COLUMNS`` of a volume, given as a
    dict."""
    out = dict(fields)
    created = out['created_at']
    out['created_at'] = created.isoformat() if created else None
    # (what it is made from, snapshot_id / source_volid / image_id: the
    # manager decides by these alone)
    return out


def _live(stmt):
    # Status changes are Core UPDATEs; re-read rows the session already
    # holds instead of trusting its identity map.
    # ``= false``, not ``IS false``: MySQL serves only the former from an
    # index
    return stmt.where(models.Volume.deleted == sa.false()).execution_options(
        populate_existing=True)


def get(session, volume_id, project_id=None):
    stmt = _live(sa.select(models.Volume).where(
        models.Volume.id == volume_id))
    if project_id is not None:
        stmt = stmt.where(models.Volume.project_id == project_id)
    volume = session.execute(stmt).scalar_one_or_none()
    if volume is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    return volume


def get_shown(session, volume_id, project_id=None):
    """(The live volume as a ``Record``, the name of its type) in one
    statement: what GET /volumes/{id} shows of the row.
    VolumeNotFound."""
    scoped = project_id is not None
    row = query.core(session).execute(
        query.built(('volume_shown', scoped),
                    lambda: _shown_statement(scoped)),
        {'volume_id': volume_id, 'project_id': project_id}).first()
    if row is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    return Record(row._mapping), row.type__name


def _shown_statement(scoped):
    V = models.Volume.__table__
    T = models.VolumeType.__table__
    # (a type deleted since keeps its row: the name shown is its own)
    stmt = (sa.select(V, T.c.name.label('type__name'))
            .outerjoin(T, T.c.id == V.c.volume_type_id)
            .where(V.c.id == sa.bindparam('volume_id'),
                   V.c.deleted == sa.false()))
    if scoped:
        stmt = stmt.where(V.c.project_id == sa.bindparam('project_id'))
    return stmt


def _filtered(stmt, project_id, filters):
    """``filters``: column -> value (a list: any of them); ``name~`` is a
    substring match; ``metadata`` a dict whose every key the volume has
    with that value; ``created_at`` and ``updated_at`` a dict operator
    (``gt`` ...) -> time (see ``query.compared``)."""
    if project_id is not None:
        stmt = stmt.where(models.Volume.project_id == project_id)
    for key, value in (filters or {}).items():
        if key == 'no_migration_targets':
            # (the temporary volumes of migrations left out)
            stmt = stmt.where(sa.or_(
                models.Volume.migration_status.is_(None),
                ~models.Volume.migration_status.startswith(
                    states.MIGRATION_TARGET)))
        elif key == 'metadata':
            stmt = stmt.where(*db_metadata.matching(value))
        elif key == 'glance_metadata':
            stmt = stmt.where(*db_image_metadata.matching(value))
        elif key in ('created_at', 'updated_at'):
            stmt = stmt.where(*query.compared(getattr(models.Volume, key),
                                              value))
        elif key.endswith('~'):
            stmt = stmt.where(getattr(models.Volume, key[:-1]).contains(
                value, autoescape=True))
        elif isinstance(value, (list, tuple)):
            stmt = stmt.where(getattr(models.Volume, key).in_(value))
        else:
            stmt = stmt.where(getattr(models.Volume, key) == value)
    return stmt


def list_volumes(session, project_id=None, filters=None,
                 sort_keys=('created_at',), sort_dirs=('desc',), limit=None,
                 marker=None):
    """Volumes matching ``filters`` (see ``_filtered``)."""
    stmt = _filtered(_live(sa.select(models.Volume)), project_id, filters)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(models.Volume).where(
            models.Volume.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.InvalidInput(
                reason='Marker %s could not be found.' % marker)
    stmt = query.paginate(stmt, models.Volume, sort_keys, sort_dirs,
                          limit, marker_row)
    return session.execute(stmt).scalars().all()


def count(session, project_id=None, filters=None):
    stmt = _live(sa.select(sa.func.count()).select_from(models.Volume))
    return session.execute(_filtered(stmt, project_id,
                                     filters)).scalar_one()


def totals(session, project_id=None):
    """(count, GiB) of the live volumes (of ``project_id``; None:
    all)."""
    V = models.Volume
    stmt = _live(sa.select(sa.func.count(V.id),
                           sa.func.coalesce(sa.func.sum(V.size), 0)))
    if project_id is not None:
        stmt = stmt.where(V.project_id == project_id)
    count, size = session.execute(stmt).one()
    return count, int(size)


def usage_on_backends(session, backends):
    """project id -> (count, GiB) of the live volumes whose host is one
    of ``backends`` (``node@section``, or a cluster's ``cluster@section``),
    any pool."""
    V = models.Volume
    on = sa.or_(*[sa.or_(V.host == b, V.host.startswith(b + '#',
                                                        autoescape=True))
                  for b in backends])
    rows = session.execute(_live(
        sa.select(V.project_id, sa.func.count(V.id),
                  sa.func.coalesce(sa.func.sum(V.size), 0))
        .where(on).group_by(V.project_id).order_by(V.project_id))).all()
    return {project: (count, int(size)) for project, count, size in rows}


def transition(session, volume_id, event, target=None, values=None,
               check=None, extending_to=None):
    """Apply ``event`` to a volume (``states.VOLUME``): move it to the
    event's target (the one named, for an event that leads to several)
    only if its status is one the event leads there from.  Raises
    InvalidTransition when no row changed.

    Quota: deleting releases what the volume counted; ``extending`` with
    ``values['pending_size']`` reserves the growth (``check`` asked);
    leaving ``extending`` ends the reservation, and the size in
    ``values``, if any, is in use from then on.  ``extending_to``: only
    when the extend under way is the one to that size (not one that
    replaced it after a rollback)."""
    target, allowed = states.VOLUME.resolve(event, target)
    values = dict(values or {})
    values['status'] = target
    values['updated_at'] = models.utcnow()
    if target == states.DELETED:
        values.update(deleted=True, deleted_at=values['updated_at'])
    counted = None
    if target in (states.DELETED, states.EXTENDING) or \
            states.EXTENDING in allowed:
        counted = _lock_counted(session, volume_id)
        if extending_to is not None and counted is not None and (
                counted.status != states.EXTENDING
                or counted.pending_size != extending_to):
            raise exception.InvalidTransition(
                resource='volume', id=volume_id, target=target,
                actual='%s (to %s GiB)' % (counted.status,
                                           counted.pending_size),
                allowed='extending to %d GiB' % extending_to)
        if target != states.EXTENDING:
            values['pending_size'] = None
        elif counted is not None and counted.pending_size is not None:
            # still growing from when it was in use (``begin_grow``)
            raise exception.InvalidTransition(
                resource='volume', id=volume_id, target=target,
                actual='%s (extending to %s GiB)' % (
                    counted.status, counted.pending_size),
                allowed=', '.join(allowed))
        elif counted is not None and \
                values.get('pending_size', counted.size + 1) <= counted.size:
            # an extend that finished since the caller read the size
            raise exception.InvalidInput(
                reason='New size for extend must be greater than current '
                       'size. (current: %d, extended: %d).' % (
                           counted.size, values['pending_size']))
    result = session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id,
               models.Volume.deleted.is_(False),
               models.Volume.status.in_(allowed))
        .values(**values)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        current = session.execute(
            sa.select(models.Volume.status).where(
                models.Volume.id == volume_id,
                models.Volume.deleted.is_(False))).scalar_one_or_none()
        if current is None:
            raise exception.VolumeNotFound(volume_id=volume_id)
        raise exception.InvalidTransition(
            resource='volume', id=volume_id, target=target, actual=current,
            allowed=', '.join(allowed))
    if target == states.DELETED:
        db_metadata.purge(session, volume_id)
        db_image_metadata.purge(session, volume_id)
    if counted is not None:
        after = {} if target == states.DELETED else db_quotas.footprint(
            counted.volume_type_id, values.get('size', counted.size),
            values.get('pending_size'))
        db_quotas.change(session, counted.project_id,
                         db_quotas.difference(_counts(counted), after),
                         check)


def update(session, volume_id, values):
    """Change fields that are not the status (name, description,
    flags)."""
    values = dict(values, updated_at=models.utcnow())
    result = session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id,
               models.Volume.deleted.is_(False))
        .values(**values)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.VolumeNotFound(volume_id=volume_id)


def begin_grow(session, volume_id, old_size, new_size, check=None):
    """Start growing an in-use volume (3.42), which keeps its status:
    compare-and-swap from ``old_size`` to the same size with
    ``pending_size`` = ``new_size``, charging the growth (``check``
    asked).  ``pending_size`` is what a delete and another extend find
    (both refused) until ``end_grow``.  None when it started, else why
    not: the volume is gone, not in use, of another size, or growing."""
    counted = _lock_counted(session, volume_id)
    if counted is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    if counted.status != states.IN_USE:
        return 'it is %s now' % counted.status
    if counted.size != old_size or counted.pending_size is not None:
        return 'it changed size meanwhile'
    session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id)
        .values(pending_size=new_size, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    db_quotas.change(session, counted.project_id, db_quotas.difference(
        _counts(counted), db_quotas.footprint(
            counted.volume_type_id, counted.size, new_size)), check)
    return None


def end_grow(session, volume_id, new_size, done):
    """End the growth ``begin_grow`` started: the size becomes
    ``new_size`` when the storage grew (``done``), else the charge for
    the growth is released.  False when it is no longer this growth
    (reconciliation ended it, the volume is gone)."""
    counted = _lock_counted(session, volume_id)
    if counted is None or counted.status == states.EXTENDING or \
            counted.pending_size != new_size:
        return False
    size = new_size if done else counted.size
    session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id)
        .values(size=size, pending_size=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    db_quotas.change(session, counted.project_id, db_quotas.difference(
        _counts(counted), db_quotas.footprint(counted.volume_type_id,
                                              size)))
    return True


def retype(session, volume_id, type_id, values, check=None):
    """Give a volume type ``type_id`` (and the other ``values``); its
    per-type usage moves from the old type to the new."""
    counted = _lock_counted(session, volume_id)
    if counted is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    update(session, volume_id, dict(values, volume_type_id=type_id))
    db_quotas.change(session, counted.project_id, db_quotas.difference(
        _counts(counted), db_quotas.footprint(type_id, counted.size,
                                              counted.pending_size)),
        check)


def give(session, volume_id, project_id, user_id, check=None):
    """Hand a volume ``awaiting-transfer`` to ``project_id`` (and
    ``user_id``): it becomes ``available`` there, and what it counts
    moves from its old project's usage to the new one's (``check``
    asked for the new one), all in this transaction.  The two projects'
    usage rows are locked in the order of the project ids, so two
    transfers crossing between the same projects cannot deadlock."""
    counted = _lock_counted(session, volume_id)
    if counted is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    transition(session, volume_id, 'transfer_ended',
               values={'project_id': project_id, 'user_id': user_id})
    donor = counted.project_id
    if donor == project_id:
        return
    footprint = _counts(counted)
    for project in sorted((donor, project_id)):
        if project == donor:
            db_quotas.change(session, donor,
                             db_quotas.difference(footprint, {}))
        else:
            db_quotas.change(session, project_id, footprint, check)


def creating_from(session, snapshot_id=None, source_volid=None):
    """Ids of the volumes being created (``creating``) from a snapshot or
    from a volume: its source must stay until they are made."""
    V = models.Volume
    stmt = _live(sa.select(V.id).where(V.status == states.CREATING))
    if snapshot_id is not None:
        stmt = stmt.where(V.snapshot_id == snapshot_id)
    else:
        stmt = stmt.where(V.source_volid == source_volid)
    return session.execute(stmt).scalars().all()


def type_in_use(session, type_id):
    """Whether a live volume, or a live snapshot (made when its volume
    had that type), has type ``type_id``."""
    if session.execute(_live(
            sa.select(models.Volume.id).where(
                models.Volume.volume_type_id == type_id)).limit(1)
    ).first() is not None:
        return True
    S = models.Snapshot
    return session.execute(
        sa.select(S.id).where(S.volume_type_id == type_id,
                              S.deleted == sa.false()).limit(1)
    ).first() is not None


def claim_host(session, volume_id, pool, cluster_name=None):
    """Record the scheduler's choice for a volume nobody scheduled yet
    (``cluster_name``: the same pool, when a cluster serves it); False
    when it is scheduled already (or no longer creating), so one volume is
    never sent to two backends."""
    result = session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id,
               models.Volume.deleted.is_(False),
               models.Volume.status == states.CREATING,
               models.Volume.host.is_(None))
        .values(host=pool, cluster_name=cluster_name,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def unscheduled(session, max_age):
    """Volumes ``creating`` with no host, unchanged for ``max_age``
    seconds: their scheduling request was lost."""
    cutoff = models.utcnow() - datetime.timedelta(seconds=max_age)
    V = models.Volume
    return session.execute(sa.select(V).where(
        V.deleted.is_(False), V.status == states.CREATING,
        V.host.is_(None),
        sa.func.coalesce(V.updated_at, V.created_at) <= cutoff)
    ).scalars().all()


def stale(session, backend, cutoff):
    """Volumes of ``backend`` (the volume service, or its cluster) in a
    transition (creating, deleting, extending, downloading, uploading,
    reverting, growing in use) unchanged since ``cutoff``."""
    V = models.Volume
    on_backend = V.host.startswith(backend + '#', autoescape=True)
    return session.execute(
        sa.select(V).where(
            on_backend, V.deleted.is_(False),
            sa.func.coalesce(V.updated_at, V.created_at) <= cutoff,
            sa.or_(V.status.in_((states.CREATING, states.DELETING,
                                 states.EXTENDING, states.DOWNLOADING,
                                 states.UPLOADING, states.REVERTING,
                                 states.MANAGING, states.UNMANAGING)),
                   # growing while in use (``begin_grow``)
                   V.pending_size.is_not(None)))).scalars().all()


def join_cluster(session, service_host, cluster_name):
    """Move the volumes of volume service ``service_host``
    (``node@section``) to its cluster ``cluster_name``
    (``cluster@section``), pools kept, and record the service as the
    holder of their attachments' exports; returns the ids moved.  Run by
    a service that starts in a cluster after it ran alone."""
    V, A = models.Volume, models.VolumeAttachment
    rows = session.execute(sa.select(V.id, V.host).where(
        V.deleted.is_(False),
        V.host.startswith(service_host + '#', autoescape=True))).all()
    for volume_id, host in rows:
        pool = '%s#%s' % (cluster_name, host.partition('#')[2])
        session.execute(
            sa.update(V).where(V.id == volume_id, V.host == host)
            .values(host=pool, cluster_name=pool)
            .execution_options(synchronize_session=False))
    moved = [volume_id for volume_id, _host in rows]
    if moved:
        session.execute(
            sa.update(A).where(A.volume_id.in_(moved),
                               A.export_host.is_(None))
            .values(export_host=service_host)
            .execution_options(synchronize_session=False))
    return moved


def claim_stale(session, volume_id, status, updated_at):
    """Take a volume found stale in ``status`` (last changed at
    ``updated_at``) to roll it forward: its ``updated_at`` moves to now
    unless the row changed since it was read.  True for the one caller
    that wins when several (the members of a cluster) found it at once."""
    V = models.Volume
    unchanged = (V.updated_at.is_(None) if updated_at is None
                 else V.updated_at == updated_at)
    result = session.execute(
        sa.update(V).where(V.id == volume_id, V.deleted.is_(False),
                           V.status == status, unchanged)
        .values(updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def claim_extend(session, volume_id, new_size):
    """(The volume under its row lock, whether an extend to ``new_size``
    may go ahead on the storage): it is still extending to that size, and
    is now claimed (``claim_stale``), so that no reconciliation takes it
    meanwhile.  The lock comes first: an attachment change committed
    between a plain read and the claim moves the row's ``updated_at``
    (the attachments' lock writes the row) and would make the claim fail
    for a volume that is extending all the same, leaving it so."""
    row = lock(session, volume_id)
    return row, (row.pending_size == new_size and claim_stale(
        session, volume_id, states.EXTENDING, row.updated_at))


def ids_of_project(session, project_id, limit=10000):
    """Ids of the live volumes of ``project_id``, oldest first."""
    V = models.Volume
    return session.execute(_live(sa.select(V.id)).where(
        V.project_id == project_id).order_by(V.created_at, V.id)
        .limit(limit)).scalars().all()


def touch(session, volume_id, status):
    """Mark a volume that is still ``status`` as being worked on now (a
    long copy), so reconciliation does not take it for abandoned."""
    session.execute(
        sa.update(models.Volume)
        .where(models.Volume.id == volume_id,
               models.Volume.status == status)
        .values(updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def charge_size(session, volume_id, size, check=None):
    """Give a volume being managed the size its storage turned out to
    have, charging the difference to its project (``check`` refuses it
    beyond a limit: nothing changes then).  InvalidTransition when it is
    no longer ``managing``."""
    counted = _lock_counted(session, volume_id)
    if counted is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    if counted.status != states.MANAGING:
        raise exception.InvalidTransition(
            resource='volume', id=volume_id, target=states.MANAGING,
            actual=counted.status, allowed=states.MANAGING)
    db_quotas.change(session, counted.project_id, db_quotas.difference(
        _counts(counted),
        db_quotas.footprint(counted.volume_type_id, size)), check)
    session.execute(
        sa.update(models.Volume).where(models.Volume.id == volume_id)
        .values(size=size, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def live_ids(session, ids):
    """Those of ``ids`` that are live volumes, id -> status."""
    if not ids:
        return {}
    V = models.Volume
    return dict(session.execute(
        sa.select(V.id, V.status).where(V.id.in_(list(ids)),
                                        V.deleted == sa.false())).all())
