"""SQL for migrations of volumes to another backend: the
``migration_status`` of a volume (``states.MIGRATION``), the temporary
volume a migration makes on the destination (``target:<id>``) and the
swap that ends one.

The volume keeps its id; at the end the temporary row takes the old
storage's place (the source backend, ``deleting``) and is deleted with
it, as Cinder's ``finish_volume_migration`` swaps the two.
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import volumes as db_volumes


def target_marker(volume_id):
    return states.MIGRATION_TARGET + volume_id


def target_of(migration_status):
    """The id of the volume a temporary one is for; None for any other
    volume."""
    if migration_status and migration_status.startswith(
            states.MIGRATION_TARGET):
        return migration_status[len(states.MIGRATION_TARGET):]
    return None


def _in(column, statuses):
    """``column IN statuses``, where None means NULL."""
    named = [s for s in statuses if s is not None]
    clause = column.in_(named) if named else sa.false()
    if None in statuses:
        clause = sa.or_(clause, column.is_(None))
    return clause


def move(session, volume_id, event, values=None):
    """Apply ``event`` of ``states.MIGRATION`` to the volume's
    migration_status, by compare-and-swap; InvalidTransition (or
    VolumeNotFound) when it does not apply."""
    target, allowed = states.MIGRATION.resolve(event)
    V = models.Volume
    values = dict(values or {}, migration_status=target,
                  updated_at=models.utcnow())
    result = session.execute(
        sa.update(V).where(V.id == volume_id, V.deleted == sa.false(),
                           _in(V.migration_status, allowed))
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        current = session.execute(
            sa.select(V.migration_status).where(
                V.id == volume_id, V.deleted == sa.false())).first()
        if current is None:
            raise exception.VolumeNotFound(volume_id=volume_id)
        raise exception.InvalidTransition(
            resource='migration of volume', id=volume_id, target=target,
            actual=current[0],
            allowed=', '.join(str(a) for a in allowed))


def touch(session, volume_id):
    """A migration copying still lives: the volume's ``updated_at`` moves
    (reconciliation leaves a migration alone while it is fresh)."""
    V = models.Volume
    session.execute(sa.update(V).where(V.id == volume_id)
                    .values(updated_at=models.utcnow())
                    .execution_options(synchronize_session=False))


def create_target(session, source, target_id, host, cluster_name,
                  type_id):
    """The temporary volume on the destination ``host``: the source's
    size, project and fields, ``creating``, ``target:<source id>``.
    It counts against quota as any volume until it is deleted (the
    migration takes no quota it could be refused)."""
    fields = {k: getattr(source, k) for k in (
        'project_id', 'user_id', 'name', 'description', 'size',
        'availability_zone', 'multiattach', 'bootable')}
    return db_volumes.create(session, dict(
        fields, id=target_id, status=states.CREATING,
        volume_type_id=type_id, host=host, cluster_name=cluster_name,
        migration_status=target_marker(source.id)))


def targets_on(session, backend):
    """Temporary migration volumes on ``backend`` (the service, or its
    cluster) not being deleted, each with the volume it is for (None
    when that is gone)."""
    T = models.Volume
    rows = session.execute(
        sa.select(T).where(
            T.host.startswith(backend + '#', autoescape=True),
            T.deleted == sa.false(),
            T.migration_status.startswith(states.MIGRATION_TARGET),
            T.status != states.DELETING)).scalars().all()
    out = []
    for t in rows:
        source = session.execute(sa.select(T).where(
            T.id == target_of(t.migration_status),
            T.deleted == sa.false())).scalar_one_or_none()
        out.append((t, source))
    return out


def stale_sources(session, backend, cutoff):
    """Volumes of ``backend`` whose migration runs and that have not
    changed since ``cutoff``."""
    V = models.Volume
    return session.execute(sa.select(V).where(
        V.host.startswith(backend + '#', autoescape=True),
        V.deleted == sa.false(),
        V.migration_status.in_(states.MIGRATION_RUNNING),
        sa.func.coalesce(V.updated_at, V.created_at) <= cutoff)
    ).scalars().all()


def claim(session, volume_id, updated_at):
    """Take a stale row to act on it: its ``updated_at`` moves to now
    unless it changed since it was read (one winner among the members of
    a cluster)."""
    V = models.Volume
    unchanged = (V.updated_at.is_(None) if updated_at is None
                 else V.updated_at == updated_at)
    result = session.execute(
        sa.update(V).where(V.id == volume_id, V.deleted == sa.false(),
                           unchanged)
        .values(updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def swap(session, source_id, target_id, attach_seq, size, new_type_id,
         type_values=None, check=None):
    """End a migration whose data is on the destination: under both row
    locks, the volume takes the temporary volume's backend (its host,
    cluster and service), its migration_status ``success`` (and the new
    type of a retype, per-type quota moved); the temporary volume takes
    the source backend and becomes ``deleting`` (its volume service
    deletes the old storage).  Refused (InvalidVolume) when the volume
    was attached, resized or retyped meanwhile, or is no longer
    ``completing``."""
    source = db_volumes.lock(session, source_id)
    target = db_volumes.lock(session, target_id)
    if source.migration_status != states.MIGRATION_COMPLETING:
        raise exception.InvalidVolume(
            reason='the migration of volume %s is %s, not completing' % (
                source_id, source.migration_status))
    if source.attach_seq != attach_seq or source.size != size:
        raise exception.InvalidVolume(
            reason='volume %s was attached or extended while it migrated'
            % source_id)
    if target.status != states.AVAILABLE or \
            target.migration_status != target_marker(source_id):
        raise exception.InvalidVolume(
            reason='the temporary volume %s is %s' % (target_id,
                                                      target.status))
    _exchange_backends(session, source, target, models.utcnow())
    if new_type_id and new_type_id != source.volume_type_id:
        db_volumes.retype(session, source_id, new_type_id,
                          type_values or {}, check)


def _exchange_backends(session, source, target, now):
    """The volume ``source`` takes the temporary volume ``target``'s
    backend and ``success``; the temporary volume takes the volume's old
    backend and becomes ``deleting`` (its service there deletes the old
    storage)."""
    V = models.Volume
    old = {'host': source.host, 'cluster_name': source.cluster_name,
           'service_uuid': source.service_uuid}
    session.execute(
        sa.update(V).where(V.id == source.id).values(
            host=target.host, cluster_name=target.cluster_name,
            service_uuid=target.service_uuid,
            shared_targets=target.shared_targets,
            persistent_reservations=target.persistent_reservations,
            migration_status=states.MIGRATION_SUCCESS, updated_at=now)
        .execution_options(synchronize_session=False))
    session.execute(
        sa.update(V).where(V.id == target.id).values(
            status=states.DELETING, updated_at=now, **old)
        .execution_options(synchronize_session=False))


def swap_attached(session, source_id, target_id):
    """End the migration of an in-use volume whose server Nova moved to
    the temporary volume: under both row locks, the volume takes the
    temporary volume's backend and ``success``, and the attachments Nova
    made to the temporary volume (as Cinder's completion, which gives
    them the volume's id); its status follows from them (in-use).  The
    temporary volume takes the source backend and becomes ``deleting``
    (its service there deletes the old storage).  Refused
    (InvalidVolume) when the volume is no longer ``completing``."""
    source = db_volumes.lock(session, source_id)
    target = db_volumes.lock(session, target_id)
    if source.migration_status != states.MIGRATION_COMPLETING or \
            target.migration_status != target_marker(source_id):
        raise exception.InvalidVolume(
            reason='the migration of volume %s is %s, not completing' % (
                source_id, source.migration_status))
    now = models.utcnow()
    _exchange_backends(session, source, target, now)
    A = models.VolumeAttachment
    session.execute(
        sa.update(A).where(A.volume_id == target_id,
                           A.deleted == sa.false())
        .values(volume_id=source_id, updated_at=now)
        .execution_options(synchronize_session=False))
    db_attachments.sync_volume_status(session, source_id)


def swapped_to(session, source_id):
    """Whether a server's disk is being swapped by Nova to the temporary
    volume of ``source_id``'s migration (that volume has an attachment):
    the migration waits for Nova's completion, not for a copy here."""
    T = models.Volume
    A = models.VolumeAttachment
    return session.execute(
        sa.select(A.id).join(T, T.id == A.volume_id).where(
            T.migration_status == target_marker(source_id),
            T.deleted == sa.false(), A.deleted == sa.false())
        .limit(1)).first() is not None
