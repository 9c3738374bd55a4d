"""SQL for attachments.

Every change to a volume's attachments runs in one writer transaction that
first calls ``lock_volume``: an UPDATE of the volume row (bumping
``attach_seq``) under a status condition.  The row lock it takes makes
changes to the attachments of one volume happen one after another, while
other volumes proceed in parallel, and it is held only for the few
statements of that transaction, never across an RPC.  At READ COMMITTED
(MariaDB, PostgreSQL) a transaction that waited for the lock re-reads the
committed rows, so the counts it makes are exact; SQLite's BEGIN IMMEDIATE
serialises writers outright.  The volume status is then derived from the
live attachments before commit: ``with locked_volume(session, id) as
held:`` does both (the lock on entry, the derived status on a normal exit,
in ``held.status``).  A failure is recorded by ``record_failure``.
"""
import collections
import contextlib

from oslo_context import context as o_context
import sqlalchemy as sa
from sqlalchemy import orm

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import host_fences as db_host_fences
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import services as db_services
from cinder_lite.db.volumes import Record as VolumeRecord
from cinder_lite.db.volumes import SUMMARY_COLUMNS
from cinder_lite.db.volumes import summary_of

SORT_KEYS = ('id', 'volume_id', 'attach_status', 'instance_uuid',
             'created_at', 'updated_at', 'attach_time')

# Volume statuses in which new attachments may be made or connected.
ATTACHABLE = (states.AVAILABLE, states.RESERVED, states.ATTACHING,
              states.IN_USE, states.DETACHING)
# Detaching and recording failures work in any status of a live volume
# (an operator may have reset it to error).
ANY_LIVE = tuple(sorted(states.VOLUME_STATUSES - {states.DELETED}))

A = models.VolumeAttachment
# the tables, for the Core statements of the hot path
AT = A.__table__
V = models.Volume.__table__


# What a lock may write besides (``lock_volume``'s ``becomes``): the
# status a change makes the volume when the status it has is the one its
# attachments make it, as (from these statuses, to this one).
# A new connecting attachment: in-use stays, anything else attachable
# becomes attaching.
CONNECTING = (tuple(status for status in ATTACHABLE
                    if status != states.IN_USE), states.ATTACHING)
# A detaching attachment gone: a volume detaching (nothing else attached
# or attaching) is most often left with no attachment at all.
DISCONNECTED = ((states.DETACHING,), states.AVAILABLE)
# An attachment made attached (os-complete): the volume is in-use
# whatever the others are, so this one is never corrected.
ATTACHED = (ATTACHABLE, states.IN_USE)
# A connected attachment starting its disconnect (DELETE): an in-use
# volume is most often left detaching (it was its one attachment).
STARTS_DETACHING = ((states.IN_USE,), states.DETACHING)


def lock_volume(session, volume_id, allowed=ANY_LIVE, project_id=None,
                load=True, becomes=None):
    """Take the volume's row lock if its status is in ``allowed`` (a
    tuple); return the volume as it is under the lock (None with
    ``load=False``, for callers that only need the lock).  VolumeNotFound
    / InvalidVolume otherwise.
    ``becomes``: the transaction makes one change to the volume's
    attachments or fails (``CONNECTING``, ``DISCONNECTED``), and the lock
    writes the status the change makes the volume when the status it has
    is the one its attachments make it (a refusal rolls it back with the
    rest).  The read under the lock then shows that status, and
    ``settle_status``, which derives the status from the attachments it
    read, writes it again only when they say otherwise.  The status
    written depends on no other row, so the lock that waited for another
    transaction writes what it would have.
    A read that needs the lock first takes it itself (``volume_lock``)."""
    lock = volume_lock(volume_id, allowed, project_id, becomes)
    if not _take(session, lock):
        lock.refuse(session)
    if not load:
        return None
    return session.execute(_volume_under_lock(),
                           {'volume_id': volume_id}).scalar_one()


class Lock(collections.namedtuple('Lock', 'key make params refuse')):
    """A volume's row lock as a statement (``key`` and ``make``, as
    ``query.built`` takes them, run with ``params``), and
    ``refuse(session)``, which raises what a lock that took nothing
    means.  A read under the lock takes it first, in the same round trip
    on MariaDB (``read_under``)."""


class NotLocked(Exception):
    """The lock through an attachment (``attachment_lock``) found nothing
    to lock."""


def volume_lock(volume_id, allowed=ANY_LIVE, project_id=None, becomes=None):
    """``lock_volume``'s lock (``load=False``), for a read to take."""
    scoped = project_id is not None
    allowed = tuple(allowed)
    # (no parameter is named after a column of volumes: Core would SET it)
    params = {'volume_id': volume_id}
    if scoped:
        params['scope_project'] = project_id
    return Lock(('lock_volume', allowed, scoped, becomes),
                lambda: _lock_statement(allowed, scoped, becomes), params,
                lambda session: _refuse(session, volume_id, allowed,
                                        project_id))


def _refuse(session, volume_id, allowed, project_id):
    current = session.execute(sa.select(models.Volume.status).where(
        models.Volume.id == volume_id,
        models.Volume.deleted.is_(False),
        *([models.Volume.project_id == project_id]
          if project_id is not None else []))).scalar_one_or_none()
    if current is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    raise exception.InvalidVolume(
        reason='Volume %s status must be one of %s for this request, '
               'but the current status is %s.'
               % (volume_id, ', '.join(allowed), current))


def _take(session, lock):
    return query.core(session).execute(
        query.built(lock.key, lock.make), lock.params).rowcount == 1


def read_under(session, lock, key, make, params):
    """The rows of the read ``key``, ``make`` (as ``query.built`` takes
    them) run with ``params``, after ``lock`` (a ``Lock``; None: the
    transaction holds the lock already) took the volume's row: on
    MariaDB the two in one round trip (``query.compound_read``),
    elsewhere two statements.  A lock that took nothing refuses
    (``Lock.refuse``); the read is not run."""
    conn = query.core(session)
    if lock is not None and query.is_mariadb(conn):
        result = conn.execute(
            query.built(('read_under', lock.key, key),
                        lambda: query.compound_read(
                            query.built(lock.key, lock.make),
                            query.built(key, make))),
            dict(params, **lock.params))
        if not result.returns_rows:
            lock.refuse(session)
        return result.all()
    if lock is not None and not _take(session, lock):
        lock.refuse(session)
    return conn.execute(query.built(key, make), params).all()


def _volume_under_lock():
    return query.built('volume_under_lock', lambda: (
        # populate_existing: a row this session loaded before the lock is
        # overwritten with what the lock sees
        sa.select(models.Volume)
        .where(models.Volume.id == sa.bindparam('volume_id'))
        .execution_options(populate_existing=True)))


def lock_for_attachment(session, attachment_id, allowed=ANY_LIVE,
                        becomes=None):
    """``lock_volume`` of the volume of live attachment ``attachment_id``,
    found by the lock itself: one statement where reading the attachment
    first takes two.  False (nothing locked) when there is no such
    attachment, or its volume is not in ``allowed``: the caller then reads
    and locks the usual way, to refuse with the right error.
    ``becomes``: as ``lock_volume``'s (``ATTACHED``, ``STARTS_DETACHING``).
    A read that needs the lock first takes it itself
    (``attachment_lock``)."""
    return _take(session, attachment_lock(attachment_id, allowed, becomes))


def attachment_lock(attachment_id, allowed=ANY_LIVE, becomes=None):
    """``lock_for_attachment``'s lock, for a read to take: NotLocked
    when it takes nothing."""
    allowed = tuple(allowed)
    return Lock(('lock_for_attachment', allowed, becomes),
                lambda: _lock_for_attachment_statement(allowed, becomes),
                {'attachment_id': attachment_id}, _not_locked)


def _not_locked(session):
    raise NotLocked()


def _lock_values(becomes):
    """What a lock statement SETs: the volume's ``attach_seq``, and its
    status as ``becomes`` says (``lock_volume``)."""
    values = {'attach_seq': V.c.attach_seq + query.fixed(1)}
    if becomes is not None:
        sources, target = becomes
        values['status'] = sa.case(
            (query.one_of(V.c.status, sources),
             query.fixed(target, V.c.status.type)), else_=V.c.status)
    return values


def _lock_for_attachment_statement(allowed, becomes):
    return (sa.update(V)
            .where(V.c.id == sa.select(AT.c.volume_id).where(
                       AT.c.id == sa.bindparam('attachment_id'),
                       AT.c.deleted == sa.false()).scalar_subquery(),
                   V.c.deleted.is_(False),
                   query.one_of(V.c.status, allowed))
            .values(_lock_values(becomes)))


def _lock_statement(allowed, scoped, becomes=None):
    stmt = (sa.update(V)
            .where(V.c.id == sa.bindparam('volume_id'),
                   V.c.deleted.is_(False),
                   query.one_of(V.c.status, allowed))
            .values(_lock_values(becomes)))
    if scoped:
        stmt = stmt.where(V.c.project_id == sa.bindparam('scope_project'))
    return stmt


class Held(object):
    """What ``locked_volume`` yields: the ``volume`` as it is under the
    lock (None with ``load=False``); after a normal exit, ``status``, the
    volume's status its live attachments make it.

    ``others``: what a statement under the lock read besides (an
    ``Others``); with it, a block that changes one attachment names the
    status it leaves that attachment in (``leaves``) and the volume's
    status is derived from the two without asking the database again."""

    def __init__(self, volume, others=None):
        self.volume = volume
        self.others = others
        self.status = None
        self.left = None

    def leaves(self, attach_status):
        """The block leaves its attachment ``attach_status``
        (``states.DETACHED``: gone); returns it."""
        self.left = attach_status
        return attach_status


@contextlib.contextmanager
def locked_volume(session, volume_id, allowed=ANY_LIVE, project_id=None,
                  load=True, volume=None, statuses_change=True,
                  others=None, becomes=None, locked=False):
    """The one entry point for a change to a volume's attachments: the
    volume's row lock (``lock_volume``) on entry and, when the block ends
    without an error, the volume's status derived from its live
    attachments (``sync_volume_status``, or ``settle_status`` when the
    block read ``others`` and said what it ``leaves``), in the same
    transaction.
    ``volume``: this transaction holds the lock already
    (``lock_for_attachment``) and read the volume under it, ``others``
    with it.  ``locked``: it holds the lock (a read took it,
    ``volume_lock``) and read no volume.
    ``statuses_change=False``: the block changes no attachment's status
    (a connect recording its connection info), so the volume's status,
    derived by the last change that did, stays as it is and is not
    derived again (``held.status`` stays None).
    ``becomes``: as ``lock_volume``'s."""
    if volume is not None or locked:
        held = Held(volume, others)
    else:
        held = Held(lock_volume(session, volume_id, allowed, project_id,
                                load, becomes), others)
    yield held
    if not statuses_change:
        return
    if held.others is not None and held.left is not None:
        held.status = settle_status(session, volume_id, held.others,
                                    held.left)
    else:
        held.status = sync_volume_status(session, volume_id)


def apply_event(session, volume_id, attachment_id, event, values=None,
                becomes=None):
    """``event`` applied to one attachment of the volume (``transition``)
    under the volume's lock (``locked_volume``, ``becomes`` as its), the
    volume's status derived from what the read of the attachment brought
    (``get_with_others``), with no probe after it; returns the volume's
    status then.  AttachmentNotFound, InvalidTransition as
    ``transition``."""
    current, others = get_with_others(
        session, attachment_id, lock=volume_lock(volume_id,
                                                 becomes=becomes))
    with locked_volume(session, volume_id, others=others,
                       locked=True) as held:
        held.leaves(transition(session, attachment_id, event,
                               values=values, current=current))
    return held.status


def record_failure(session, attachment_id, event, reason, volume_id=None):
    """Apply the failure ``event`` (``connect_failed``,
    ``disconnect_lost``...) to the attachment under its volume's lock,
    with ``reason`` as its status_reason; returns the volume's status
    then, or None when there is nothing to record: the attachment (or its
    volume) is gone, or another request moved it on meanwhile."""
    try:
        if volume_id is None:
            volume_id = get(session, attachment_id).volume_id
        return apply_event(session, volume_id, attachment_id, event,
                           values={'status_reason': reason[:1024]})
    except (exception.NotFound, exception.InvalidTransition,
            exception.InvalidVolume):
        return None


def _live(stmt):
    # Status changes are Core UPDATEs; re-read rows the session already
    # holds instead of trusting its identity map.
    # ``= false``, not ``IS false``: MySQL serves only the former from an
    # index
    return stmt.where(A.deleted == sa.false()).execution_options(
        populate_existing=True)


def live_for_volume(session, volume_id):
    """Attachments of a volume that are not detached, oldest first."""
    return session.execute(_live(sa.select(A).where(
        A.volume_id == volume_id)).order_by(A.created_at, A.id)
    ).scalars().all()


# the statuses a live (not deleted) attachment can be in
LIVE_STATUSES = tuple(sorted(states.ATTACHMENT_STATUSES - {states.DETACHED}))


def live_statuses(session, volume_id):
    """The statuses a volume's live attachments are in (a frozenset):
    one statement of an EXISTS per status (``_status_columns``)."""
    return _all_statuses(session, volume_id).statuses


def _all_statuses(session, volume_id):
    """``Others`` of every live attachment of the volume."""
    return Others.of(query.core(session).execute(
        query.built('live_statuses', lambda: sa.select(
            *_status_columns(sa.bindparam('volume_id')))),
        {'volume_id': volume_id}).one()._mapping)


class Others(collections.namedtuple('Others', 'volume_status statuses')):
    """What a statement that read a volume or one of its attachments
    under the volume's lock read besides (``_status_columns``): the
    volume's status and the set of statuses its other live attachments
    are in (``states.ATTACH_LEGACY_RESERVED`` for an os-reserve
    reservation)."""

    @classmethod
    def of(cls, fields):
        present = {status for status in LIVE_STATUSES
                   if fields['others__' + status]}
        if fields['others__legacy']:
            present.add(states.ATTACH_LEGACY_RESERVED)
        return cls(fields['others__volume_status'], frozenset(present))

    @classmethod
    def of_rows(cls, volume_status, rows):
        """From the rows of ``others_of`` and the volume's status."""
        present = set()
        for row in rows:
            present.add(row.attach_status)
            if row.attach_status == states.ATTACH_RESERVED and \
                    row.operation == states.LEGACY_RESERVE:
                present.add(states.ATTACH_LEGACY_RESERVED)
        return cls(volume_status, frozenset(present))


def _status_columns(volume_id, exclude=None):
    """Columns that read, with any statement, the statuses the live
    attachments of volume ``volume_id`` (an expression: a bind parameter
    or a column of the statement) other than attachment ``exclude`` (an
    expression; None: all) are in, one EXISTS per status, each a probe of
    the index on (volume_id, deleted, attach_status), so a volume shared
    by 10,000 hosts costs as much as one shared by two; then the legacy
    reservation and, last, the volume's status.  ``Others.of`` reads
    them."""
    # aliases: a statement reading an attachment or the volume itself
    # must not correlate them with its own rows
    other = AT.alias('other_attachments')
    VS = V.alias('volume_status')

    def probe(*conditions):
        where = [other.c.volume_id == volume_id,
                 other.c.deleted == sa.false(), *conditions]
        if exclude is not None:
            where.append(other.c.id != exclude)
        return sa.exists().where(*where)
    return [probe(other.c.attach_status == query.fixed(status)).label(
                'others__' + status)
            for status in LIVE_STATUSES] + [
        probe(other.c.attach_status == query.fixed(states.ATTACH_RESERVED),
              other.c.operation == query.fixed(states.LEGACY_RESERVE)).label(
            'others__legacy'),
        sa.select(VS.c.status).where(VS.c.id == volume_id)
        .scalar_subquery().label('others__volume_status')]


# the statuses of an attachment that holds (or is making) a connection
CONNECTED_STATUSES = states.ATTACH_CONNECTED_STATUSES


def live_writer(session, volume_id, exclude=None):
    """Id of a live read-write attachment of the volume other than
    ``exclude`` (or one taking over as the writer), or None."""
    return query.core(session).execute(query.built('live_writer', lambda: (
        sa.select(AT.c.id).where(
            AT.c.volume_id == sa.bindparam('volume_id'),
            AT.c.deleted == sa.false(),
            sa.or_(AT.c.attach_mode == 'rw',
                   AT.c.operation == states.TAKING_OVER),
            AT.c.id != sa.bindparam('exclude')).limit(1))),
        {'volume_id': volume_id, 'exclude': exclude or ''}
    ).scalar_one_or_none()


def marked(session, volume_id, mark):
    """Id of a live attachment of the volume whose operation is
    ``mark``, or None."""
    return session.execute(
        sa.select(A.id).where(A.volume_id == volume_id,
                              A.deleted == sa.false(),
                              A.operation == mark)
        .limit(1)).scalar_one_or_none()


def unmark(session, attachment_id, mark):
    """End the operation ``mark`` of the attachment (nothing when
    another is under way by now)."""
    session.execute(
        sa.update(A).where(A.id == attachment_id, A.operation == mark)
        .values(operation=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def other_instance(session, volume_id, instance_uuid):
    """The oldest live attachment of the volume that is not
    ``instance_uuid``'s (any live attachment when it is None), or None:
    one probe of the index on (volume_id, deleted, created_at), however
    many attachments the volume has."""
    stmt = _live(sa.select(A).where(A.volume_id == volume_id))
    if instance_uuid is not None:
        stmt = stmt.where(sa.or_(A.instance_uuid.is_(None),
                                 A.instance_uuid != instance_uuid))
    return session.execute(stmt.order_by(A.created_at, A.id).limit(1)
                           ).scalar_one_or_none()


def others_of(session, attachment):
    """The volume's live attachments other than ``attachment``, oldest
    first, read under the volume's lock with a detach of it: what the
    detach answers about the attachments the volume still has (id,
    status, instance), and with ``Others.of_rows`` and ``share_host``
    what it derives the volume's status and the disconnect from, in one
    statement.  (The connection info only of those on its host.)  A
    DELETE reads them after its change, in the change's round trip on
    MariaDB (``others_read``, ``transition_and_read``)."""
    return read_under(session, None, *others_read(attachment))


def others_read(attachment):
    """``others_of`` as a read (key, make, params) for ``read_under`` or
    ``transition_and_read``.  (The others are the same before and after
    a change of ``attachment``.)"""
    return ('attachment_others_rows', _others_statement,
            {'volume_id': attachment.volume_id,
             'attachment_id': attachment.id,
             'host': attachment.attached_host})


def _others_statement():
    return (sa.select(AT.c.id, AT.c.attach_status, AT.c.instance_uuid,
                      AT.c.volume_id, AT.c.operation, AT.c.attached_host,
                      AT.c.export_host,
                      sa.case((AT.c.attached_host == sa.bindparam('host'),
                               AT.c.connection_info),
                              else_=sa.null()).label('connection_info'))
            .where(AT.c.volume_id == sa.bindparam('volume_id'),
                   AT.c.deleted == sa.false(),
                   AT.c.id != sa.bindparam('attachment_id'))
            .order_by(AT.c.volume_id, AT.c.deleted, AT.c.created_at,
                      AT.c.id))


def share_host(rows, attachment, export_host):
    """Whether another live attachment among ``rows`` (``others_of``)
    holds the host connection of ``attachment`` through volume service
    ``export_host``: ``shares_host_connection`` without a statement."""
    return bool(attachment.attached_host) and any(
        r.attached_host == attachment.attached_host and r.connection_info
        and r.export_host in (export_host, None) for r in rows)


def live_on_host(session, volume_id, host):
    """Live attachments of a volume made from consumer ``host``."""
    return session.execute(_live(sa.select(A).where(
        A.volume_id == volume_id, A.attached_host == host))
    ).scalars().all()


def create(session, values):
    """Write a new attachment of ``values`` (a ``Record``, as ``new``) and
    its creation event."""
    attachment = new(values)
    _insert_recorded(session, attachment, _created_event(attachment))
    return attachment


def new(values):
    """A new attachment not written yet, as a ``Record`` (the columns
    ``values`` leaves out None): ``create_moved`` writes it.  A name that
    is no column is a TypeError, as the model's constructor made it."""
    unknown = set(values).difference(Record.COLUMNS)
    if unknown:
        raise TypeError('no attachment column %s' % ', '.join(
            sorted(unknown)))
    return Record(dict(dict.fromkeys(Record.COLUMNS), **values))


def _insert(session, attachment):
    # a Core INSERT of every column: the ORM's flush of one object (its
    # unit of work) costs several times the statement
    query.core(session).execute(
        query.built('attachment_insert', lambda: sa.insert(AT)),
        {key: getattr(attachment, key) for key in Record.COLUMNS})


def create_moved(session, attachment, event, values):
    """Write the new ``attachment`` (``new``) as ``event`` applied to it
    with ``values`` (as ``transition`` takes them) leaves it: one INSERT of
    the row as it ends and one INSERT of its two events (its creation,
    then ``event``), where ``create`` and ``transition`` take four
    statements.  The caller holds the volume's lock, as for those."""
    target, allowed = states.ATTACHMENT.resolve(event)
    if attachment.attach_status not in allowed:
        raise exception.InvalidTransition(
            resource='attachment', id=attachment.id, target=target,
            actual=attachment.attach_status, allowed=', '.join(allowed))
    created = _created_event(attachment)
    values = _one_reason(values)
    values.update(attach_status=target, updated_at=models.utcnow())
    for key, value in values.items():
        setattr(attachment, key, value)
    moved = _event_of(attachment, created['to_status'], target,
                      states.shown_reason(values.get('status_reason'),
                                          values.get('operation')))
    _insert_recorded(session, attachment, created, moved)
    return attachment


def _insert_recorded(session, attachment, *events):
    """Write the new ``attachment`` and its ``events`` (``_event``s, in
    order): on PostgreSQL and MariaDB in one statement, elsewhere in
    two."""
    conn = query.core(session)
    if conn.dialect.name == 'postgresql':
        name, make = 'attachment_insert_recorded', _recorded_insert_statement
    elif query.is_mariadb(conn):
        name, make = 'attachment_insert_compound', _compound_insert_statement
    else:
        _insert(session, attachment)
        _record(session, *events)
        return
    params = {'a_' + key: getattr(attachment, key) for key in Record.COLUMNS}
    for n, event in enumerate(events):
        params.update({'e%d_%s' % (n, k): v for k, v in event.items()})
    conn.execute(query.built((name, len(events)),
                             lambda: make(len(events))), params)


def _recorded_insert_statement(events):
    """PostgreSQL: the INSERT of a new attachment (every column, bind
    parameters ``a_<column>``) in a data-modifying WITH, and ``events``
    events (``e0_<column>``, ``e1_<column>``...) inserted by the same
    statement in that order (a SELECT ordered by their position: a
    multi-row VALUES would be compiled again at every execution, as
    SQLAlchemy caches no such statement).  Every parameter has a
    prefix, so none is named as a column of either table (an INSERT
    with VALUES takes such a parameter as that column's value)."""
    E = models.AttachmentEvent.__table__
    row = sa.insert(AT).values({
        c: sa.bindparam('a_' + c.key, type_=c.type) for c in AT.c
    }).returning(AT.c.id).cte('inserted')
    each = [sa.select(*[sa.bindparam('e%d_%s' % (n, k), type_=E.c[k].type)
                        .label(k) for k in EVENT_COLUMNS],
                      query.fixed(n).label('position'))
            for n in range(events)]
    rows = (sa.union_all(*each) if events > 1 else each[0]).subquery('rows')
    return sa.insert(E).from_select(
        EVENT_COLUMNS,
        sa.select(*[rows.c[k] for k in EVENT_COLUMNS])
        .order_by(rows.c.position)).add_cte(row)


def _compound_insert_statement(events):
    """MariaDB: the INSERT of a new attachment (bind parameters
    ``a_<column>``) and the INSERT of its ``events`` events (``e0_``,
    ``e1_``...; their ids in that order) in one compound statement
    (``query.compound``)."""
    E = models.AttachmentEvent.__table__
    return query.compound(
        sa.insert(AT).values({
            c: sa.bindparam('a_' + c.key, type_=c.type) for c in AT.c}),
        sa.insert(E).values([
            {k: sa.bindparam('e%d_%s' % (n, k), type_=E.c[k].type)
             for k in EVENT_COLUMNS} for n in range(events)]))


def _created_event(attachment):
    return _event_of(attachment, None, attachment.attach_status,
                     states.shown_reason(attachment.status_reason,
                                         attachment.operation))


def _event_of(attachment, from_status, to_status, reason):
    """``_event`` of ``attachment`` as it is now."""
    return _event(attachment.id, attachment.volume_id, attachment.project_id,
                  from_status, to_status, attachment.instance_uuid,
                  attachment.attached_host, attachment.attach_mode, reason)


def _event(attachment_id, volume_id, project_id, from_status, to_status,
           instance_uuid, host, mode, reason):
    """An attachment event's row; the actor is the request context of
    this thread (the caller of the API, or the one whose request a
    service is working on)."""
    actor = o_context.get_current()
    return {'attachment_id': attachment_id, 'volume_id': volume_id,
            'project_id': project_id,
            'user_id': getattr(actor, 'user_id', None),
            'actor_project_id': getattr(actor, 'project_id', None),
            'request_id': getattr(actor, 'request_id', None),
            'instance_uuid': instance_uuid, 'attached_host': host,
            'attach_mode': mode, 'from_status': from_status,
            'to_status': to_status,
            'reason': (reason or '')[:1024] or None,
            'created_at': models.utcnow()}


def _record(session, *events):
    """Append attachment events (``_event``), in one statement."""
    query.core(session).execute(
        query.built('attachment_event',
                    lambda: sa.insert(models.AttachmentEvent.__table__)),
        list(events) if len(events) > 1 else events[0])


def events(session, volume_id=None, attachment_id=None, project_id=None,
           limit=1000, newest_first=False, since=None):
    """Attachment events, oldest first (the oldest ``limit``), or with
    ``newest_first`` the newest ``limit`` newest first; ``since``: only
    those recorded at or after that time."""
    E = models.AttachmentEvent
    stmt = sa.select(E).order_by(E.id.desc() if newest_first else E.id)
    if since is not None:
        stmt = stmt.where(E.created_at >= since)
    if volume_id is not None:
        stmt = stmt.where(E.volume_id == volume_id)
    if attachment_id is not None:
        stmt = stmt.where(E.attachment_id == attachment_id)
    if project_id is not None:
        stmt = stmt.where(E.project_id == project_id)
    return session.execute(stmt.limit(limit)).scalars().all()


class Record:
    """An attachment as ``get`` read it: its columns as attributes, for
    reading, and for ``transition`` to show the change it made.  Loading
    an ORM object costs two to three times as much, and ``get`` runs
    several times in every attach request."""

    COLUMNS = tuple(AT.c.keys())
    # ``sharing``: the ids of the other attachments sharing its host
    # connection, when it was read with them (``get_with_sharing``), else
    # None
    __slots__ = COLUMNS + ('sharing',)

    def __init__(self, fields):
        for key in self.COLUMNS:
            setattr(self, key, fields[key])
        self.sharing = None

    def __repr__(self):
        return '<attachment %s %s>' % (self.id, self.attach_status)


def get(session, attachment_id, project_id=None):
    """The live attachment (a ``Record``); AttachmentNotFound."""
    scoped = project_id is not None
    row = query.core(session).execute(
        query.built(('attachment', scoped), lambda: _get_statement(scoped)),
        {'attachment_id': attachment_id, 'project_id': project_id}
    ).first()
    if row is None:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    return Record(row._mapping)


def get_with_volume(session, attachment_id, project_id=None, lock=None):
    """(``get``, its volume as a ``volumes.Record``) in one statement:
    what os-complete and a detach read under the volume's lock
    (``lock``: the read takes it first, ``read_under``; None: the
    transaction holds it).  AttachmentNotFound as ``get``."""
    scoped = project_id is not None
    rows = read_under(
        session, lock, ('attachment_volume', scoped),
        lambda: _with_full_volume_statement(scoped),
        {'attachment_id': attachment_id, 'project_id': project_id})
    if not rows:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    fields = rows[0]._mapping
    return Record(fields), VolumeRecord(fields, prefix='volume__')


def _with_full_volume_statement(scoped):
    stmt = _get_statement(scoped)
    return (stmt.add_columns(*[c.label('volume__' + c.key) for c in V.c])
            .join(V, V.c.id == AT.c.volume_id))


def get_to_detach(session, attachment_id, project_id, binary, lock=None):
    """``get_with_volume``, with the service of ``binary`` on the
    attachment's ``export_host`` (a ``db_services.ExportService``, or
    None) read in
    the same statement: what a detach reads under the volume's lock to
    decide whether it goes through that service."""
    scoped = project_id is not None
    rows = read_under(
        session, lock, ('attachment_to_detach', scoped),
        lambda: _to_detach_statement(scoped),
        {'attachment_id': attachment_id, 'project_id': project_id,
         'binary': binary})
    if not rows:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    fields = rows[0]._mapping
    service = None
    if fields['export__host'] is not None:
        service = db_services.ExportService(
            fields['export__host'], fields['export__cluster_name'],
            fields['export__heartbeat_at'])
    return Record(fields), VolumeRecord(fields, prefix='volume__'), service


def _to_detach_statement(scoped):
    S = models.Service.__table__
    # (host, binary) is unique: one row at most
    return (_with_full_volume_statement(scoped)
            .add_columns(S.c.host.label('export__host'),
                         S.c.cluster_name.label('export__cluster_name'),
                         S.c.heartbeat_at.label('export__heartbeat_at'))
            .outerjoin(S, sa.and_(S.c.host == AT.c.export_host,
                                  S.c.binary == sa.bindparam('binary'))))


def get_with_others(session, attachment_id, lock=None):
    """(``get``, ``Others``) in one statement: what a change of one
    attachment under its volume's lock (``lock``, as
    ``get_with_volume``'s) reads to derive the volume's status without
    asking again (``Held.leaves``).  AttachmentNotFound as ``get``."""
    rows = read_under(
        session, lock, 'attachment_others', lambda: _get_statement(False)
        .add_columns(*_status_columns(AT.c.volume_id, AT.c.id)),
        {'attachment_id': attachment_id})
    if not rows:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    return Record(rows[0]._mapping), Others.of(rows[0]._mapping)


def volume_to_attach(session, volume_id, host, type_spec, binary,
                     lock=None):
    """Under the volume's lock (``lock``, as ``get_with_volume``'s): the
    volume as it is under the lock, with what attaching it to consumer
    ``host`` asks besides, in one statement: (the volume, a
    ``volumes.Record``, ``Others`` of all its live attachments, its
    type's extra spec ``type_spec`` (None without), whether ``host`` is
    fenced off it, the (id, consumer) of its type's QoS specs (None
    without), as ``with_volume``, the services of ``binary`` serving its
    backend (``db_services.Member``s, as ``backend_liveness`` reads them:
    one row of the statement each))."""
    rows = read_under(session, lock, 'volume_to_attach', _to_attach_statement,
                      {'volume_id': volume_id, 'host': host,
                       'spec_key': type_spec, 'binary': binary})
    if not rows:        # (under the lock it was there)
        raise exception.VolumeNotFound(volume_id=volume_id)
    fields = rows[0]._mapping
    qos = fields['qos__id']
    # (sorted by host here: the statement sorting by a joined table's
    # column made MariaDB build a temporary table on disk for every
    # attach, the capabilities being TEXT; what reads the members picks
    # by ``min`` and sorts them again, so the order of the database's
    # collation is not needed)
    members = sorted(
        (db_services.Member(row.member__host, row.member__heartbeat_at,
                            row.member__disabled, row.member__capabilities)
         for row in rows if row.member__host is not None),
        key=lambda member: member.host)
    return (VolumeRecord(fields), Others.of(fields), fields['type__spec'],
            bool(fields['host__fenced']),
            (qos, fields['qos__consumer']) if qos is not None else None,
            members)


def _to_attach_statement():
    ES = models.VolumeTypeExtraSpec.__table__
    VT = models.VolumeType.__table__
    Q = models.QosSpecs.__table__
    S, serving = db_services.backend_members_join(
        V.c.host, sa.bindparam('binary'))
    return (sa.select(V, *_status_columns(V.c.id),
                      sa.select(ES.c.value).where(
                          ES.c.volume_type_id == V.c.volume_type_id,
                          ES.c.key == sa.bindparam('spec_key'))
                      .scalar_subquery().label('type__spec'),
                      db_host_fences.fenced(
                          V.c.id, sa.bindparam('host')).label(
                          'host__fenced'),
                      Q.c.id.label('qos__id'),
                      Q.c.consumer.label('qos__consumer'),
                      S.c.host.label('member__host'),
                      S.c.heartbeat_at.label('member__heartbeat_at'),
                      S.c.disabled.label('member__disabled'),
                      S.c.capabilities.label('member__capabilities'))
            .outerjoin(VT, VT.c.id == V.c.volume_type_id)
            .outerjoin(Q, Q.c.id == VT.c.qos_specs_id)
            .outerjoin(S, serving)
            .where(V.c.id == sa.bindparam('volume_id')))


def _fenced_statement():
    return sa.select(AT, db_host_fences.fenced(
        AT.c.volume_id, AT.c.attached_host).label('host__fenced')).where(
        AT.c.id == sa.bindparam('attachment_id'),
        AT.c.deleted == sa.false())


def connecting(session, attachment_id, volume_id, host, export_host,
               lock=None):
    """What a connect reads under the volume's lock (``lock``, as
    ``get_with_volume``'s) before it records the connection, in one
    statement: (the live attachment (``get``),
    whether its host is fenced off its volume, the ids of the other live
    attachments of volume ``volume_id`` connected from consumer ``host``
    through the export of volume service ``export_host``, which share
    its host connection (``connections_on_host``)).
    AttachmentNotFound when the attachment is gone."""
    rows = read_under(session, lock, 'attachment_connecting',
                      _connecting_statement,
                      {'attachment_id': attachment_id,
                       'volume_id': volume_id, 'host': host or '',
                       'export_host': export_host})
    current = next((r for r in rows if r.id == attachment_id), None)
    if current is None or current.volume_id != volume_id:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    return (Record(current._mapping), bool(current.host__fenced),
            sorted(r.id for r in rows
                   if r.id != attachment_id and r.connection_info))


def _connecting_statement():
    # the attachment by its id, then the others on its host (each part
    # served by an index); the fence is asked of the first row only
    this = _fenced_statement()
    others = sa.select(AT, sa.false().label('host__fenced')).where(
        AT.c.volume_id == sa.bindparam('volume_id'),
        AT.c.attached_host == sa.bindparam('host'),
        AT.c.id != sa.bindparam('attachment_id'),
        AT.c.deleted == sa.false(),
        sa.or_(AT.c.export_host == sa.bindparam('export_host'),
               AT.c.export_host.is_(None)))
    return sa.union_all(this, others)


def get_with_sharing(session, attachment_id):
    """``get``, with the ``sharing`` the attachment view shows read in
    the same transaction."""
    attachment = get(session, attachment_id)
    attachment.sharing = sharing_connection(session, attachment)
    return attachment


def _get_statement(scoped):
    stmt = sa.select(AT).where(AT.c.id == sa.bindparam('attachment_id'),
                               AT.c.deleted == sa.false())
    if scoped:
        stmt = stmt.where(AT.c.project_id == sa.bindparam('project_id'))
    return stmt


def transition(session, attachment_id, event, target=None, values=None,
               reason=None, current=None):
    """Apply ``event`` to an attachment (``states.ATTACHMENT``): a
    compare-and-swap of its status from the statuses the event leads to
    its target from (the target named, for an event that leads to
    several), recorded as an attachment event (``reason``, else the
    new status_reason, says why).
    ``current``: the attachment as this transaction read it under the
    volume's lock (saves reading it again for the event); it shows the
    change afterwards.  Returns the status it left the attachment in."""
    return _transition(session, attachment_id, event, target, values,
                       reason, current)[0]


def transition_and_read(session, attachment_id, event, then, target=None,
                        values=None, reason=None, current=None):
    """``transition``, and then the read ``then`` (a (key, make, params),
    as ``read_under`` takes them; None: no read) once the change is made:
    on MariaDB in the change's round trip (``query.compound_read``).
    Returns (the status it left the attachment in, the read's rows)."""
    return _transition(session, attachment_id, event, target, values,
                       reason, current, then)


def _transition(session, attachment_id, event, target, values, reason,
                current, then=None):
    if then is not None and then[2].get('attachment_id',
                                        attachment_id) != attachment_id:
        # (on MariaDB the change and the read are one statement, whose
        # parameters are one set: a read of another attachment's would
        # take this one's id)
        raise ValueError('the read after a change of attachment %s names '
                         'attachment %s' % (attachment_id,
                                            then[2]['attachment_id']))
    target, allowed = states.ATTACHMENT.resolve(event, target)
    rows = None
    values = _one_reason(values or {})
    values.update(attach_status=target, updated_at=models.utcnow())
    if target == states.DETACHED:
        values.update(deleted=True, deleted_at=values['updated_at'],
                      detach_time=values['updated_at'])
    conn = query.core(session)
    if current is not None and current.id == attachment_id:
        before = current
    else:
        before = conn.execute(query.built('before_transition', lambda: (
            sa.select(AT.c.attach_status, AT.c.volume_id, AT.c.project_id,
                      AT.c.instance_uuid, AT.c.attached_host,
                      AT.c.attach_mode)
            .where(AT.c.id == sa.bindparam('attachment_id'),
                   AT.c.deleted.is_(False)))),
            {'attachment_id': attachment_id}).first()
    keys = tuple(sorted(values))
    allowed = tuple(allowed)
    params = dict({'v_' + k: v for k, v in values.items()},
                  attachment_id=attachment_id)
    recorded = None if before is None else _event(
        attachment_id, before.volume_id, before.project_id,
        before.attach_status, target,
        values.get('instance_uuid', before.instance_uuid),
        values.get('attached_host', before.attached_host),
        values.get('attach_mode', before.attach_mode),
        reason or states.shown_reason(values.get('status_reason'),
                                      values.get('operation')))
    # PostgreSQL and MariaDB write the change and its event in one
    # statement
    one = recorded is not None and (conn.dialect.name == 'postgresql' or
                                    query.is_mariadb(conn))
    if one:
        params.update({'e_' + k: v for k, v in recorded.items()})
    if one and conn.dialect.name == 'postgresql':
        # the event is inserted from what the UPDATE returned
        moved = conn.execute(
            query.built(('transition_recorded', allowed, keys),
                        lambda: _recorded_transition_statement(allowed,
                                                               keys)),
            params).rowcount == 1
    elif one and then:
        # a compound statement, and the read after it: its rows when the
        # change was made, no result when it was not
        read_key, read_make, read_params = then
        result = conn.execute(
            query.built(('transition_read', allowed, keys, read_key),
                        lambda: _compound_transition_statement(
                            allowed, keys, query.built(read_key,
                                                       read_make))),
            dict(read_params, **params))
        moved = result.returns_rows
        rows = result.all() if moved else None
        then = None
    elif one:
        # a compound statement: its rowcount is the row changed and the
        # event inserted (MariaDB adds its parts' up), or nothing
        moved = conn.execute(
            query.built(('transition_compound', allowed, keys),
                        lambda: _compound_transition_statement(allowed,
                                                               keys)),
            params).rowcount > 0
    else:
        moved = conn.execute(
            query.built(('transition', allowed, keys),
                        lambda: _transition_statement(allowed, keys)),
            params).rowcount == 1
        if moved and recorded is not None:
            _record(session, recorded)
    if moved and then is not None:
        rows = read_under(session, None, *then)
    if moved and before is current:
        # (after the event, which tells what it was) the caller's object
        # now shows the row as written; an ORM object as committed
        # values, so the session has nothing to flush
        show = setattr if isinstance(current, Record) else \
            orm.attributes.set_committed_value
        for key, value in values.items():
            show(current, key, value)
    if not moved:
        current = session.execute(sa.select(A.attach_status).where(
            A.id == attachment_id, A.deleted.is_(False))
        ).scalar_one_or_none()
        if current is None:
            raise exception.AttachmentNotFound(attachment_id=attachment_id)
        raise exception.InvalidTransition(
            resource='attachment', id=attachment_id, target=target,
            actual=current, allowed=', '.join(allowed))
    return target, rows


def _transition_statement(allowed, keys):
    return (sa.update(AT)
            .where(AT.c.id == sa.bindparam('attachment_id'),
                   AT.c.deleted.is_(False),
                   query.one_of(AT.c.attach_status, allowed))
            .values({k: sa.bindparam('v_' + k, type_=AT.c[k].type)
                     for k in keys}))


# the columns of an attachment event that ``_event`` fills (all but its
# id), in the table's order
EVENT_COLUMNS = tuple(c.key for c in models.AttachmentEvent.__table__.c
                      if not c.primary_key)


def _recorded_transition_statement(allowed, keys):
    """PostgreSQL: ``_transition_statement`` in a data-modifying WITH,
    and the event (bind parameters ``e_<column>``) inserted once for each
    row it changed: none when the compare-and-swap found the attachment
    in another status.  (``attachment_id``, a column of the events'
    table too, stays unprefixed: an INSERT from a SELECT takes no value
    from the parameters.)  Its rowcount is the events inserted, which is
    the rows the UPDATE changed (SQLAlchemy keeps an INSERT's rowcount
    only when asked: ``preserve_rowcount``)."""
    E = models.AttachmentEvent.__table__
    moved = _transition_statement(allowed, keys).returning(
        AT.c.id).cte('moved')
    return sa.insert(E).from_select(
        EVENT_COLUMNS,
        sa.select(*[sa.bindparam('e_' + k, type_=E.c[k].type)
                    for k in EVENT_COLUMNS]).select_from(moved)
    ).add_cte(moved).execution_options(preserve_rowcount=True)


def _compound_transition_statement(allowed, keys, read=None):
    """MariaDB: ``_transition_statement`` and the event (bind parameters
    ``e_<column>``) inserted only when it changed the row (ROW_COUNT() is
    the rows the statement before found: the connection reports rows
    found, not rows whose values changed), in one compound statement
    (``query.compound``); and then ``read``, a SELECT, when given
    (``query.compound_read``: run when the event was inserted)."""
    E = models.AttachmentEvent.__table__
    parts = (_transition_statement(allowed, keys),
             sa.insert(E).from_select(
                 EVENT_COLUMNS,
                 sa.select(*[sa.bindparam('e_' + k, type_=E.c[k].type)
                             for k in EVENT_COLUMNS])
                 .where(sa.func.row_count() == query.fixed(1))))
    if read is not None:
        return query.compound_read(*parts, read)
    return query.compound(*parts)


def _one_reason(values):
    """A client sees one status_reason: the row's, else the words of its
    operation (states.shown_reason).  So, as when the operation was those
    words in status_reason, writing either ends the other."""
    values = dict(values)
    if 'operation' in values:
        values.setdefault('status_reason', None)
    elif 'status_reason' in values:
        values['operation'] = None
    return values


def update(session, attachment_id, values):
    values = dict(_one_reason(values), updated_at=models.utcnow())
    session.execute(sa.update(A).where(A.id == attachment_id)
                    .values(**values)
                    .execution_options(synchronize_session=False))


def sync_volume_status(session, volume_id):
    """Set the volume status implied by its live attachments; returns
    it.  Call inside the transaction that changed them (after
    ``lock_volume``)."""
    found = _all_statuses(session, volume_id)
    return _write_status(session, volume_id, found.volume_status,
                         states.derive_volume_status(found.statuses))


def settle_status(session, volume_id, others, this):
    """``sync_volume_status`` when this transaction read ``others`` (an
    ``Others``) under the volume's lock and left one attachment in
    status ``this`` (``states.DETACHED``: gone): the volume's status
    follows from the two, with nothing to ask the database."""
    statuses = set(others.statuses)
    if this != states.DETACHED:
        statuses.add(this)
    return _write_status(session, volume_id, others.volume_status,
                         states.derive_volume_status(statuses))


def sync_after_attached(session, volume_id, current):
    """``sync_volume_status`` after this transaction made an attachment of
    the volume ``attached`` under its lock, the volume's status then being
    ``current`` (read under the lock): an attached attachment makes the
    volume in-use whatever the others are (``derive_volume_status``), so
    there is nothing to ask the database."""
    return _write_status(session, volume_id, current,
                         states.derive_volume_status({states.ATTACHED}))


def _write_status(session, volume_id, current, status):
    # Only statuses that attachments drive: an extend, a delete or an
    # operator's reset owns the status while it lasts.  (A status that
    # stays is not written again: the lock wrote the row already.)
    if current == status or current not in ATTACHABLE:
        return current
    # (under the row lock the status read above is still the row's: the
    # UPDATE changes it)
    query.core(session).execute(
        query.built('sync_volume_status', lambda: (
            sa.update(V)
            .where(V.c.id == sa.bindparam('volume_id'),
                   query.one_of(V.c.status, ATTACHABLE))
            .values(status=sa.bindparam('new_status'),
                    updated_at=sa.bindparam('now')))),
        {'volume_id': volume_id, 'new_status': status,
         'now': models.utcnow()})
    return status


def list_attachments(session, project_id=None, filters=None,
                     sort_keys=('created_at',), sort_dirs=('desc',),
                     limit=None, marker=None):
    stmt = _live(sa.select(A))
    if project_id is not None:
        stmt = stmt.where(A.project_id == project_id)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(A, key) == value)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(A).where(
            A.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.InvalidInput(
                reason='Marker %s could not be found.' % marker)
    stmt = query.paginate(stmt, A, sort_keys, sort_dirs, limit, marker_row)
    return session.execute(stmt).scalars().all()


def _in_views(*conditions):
    """The live attachments matching ``conditions`` with the columns the
    volume views show, not whole rows (a shared volume may list
    thousands), in the order of ix_attachments_volume_created (no
    sort)."""
    return (sa.select(AT.c.id, AT.c.volume_id, AT.c.instance_uuid,
                      AT.c.attached_host, AT.c.mountpoint, AT.c.attach_time,
                      AT.c.attach_mode)
            .where(AT.c.deleted == sa.false(), *conditions)
            .order_by(AT.c.volume_id, AT.c.deleted, AT.c.created_at,
                      AT.c.id))


def for_volumes(session, volume_ids, statuses=None):
    """Live attachments of several volumes, for the volume views
    (``_in_views``)."""
    if not volume_ids:
        return []
    conditions = [AT.c.volume_id.in_(list(volume_ids))]
    if statuses:
        conditions.append(AT.c.attach_status.in_(statuses))
    return session.execute(_in_views(*conditions)).all()


def attached_to(session, volume_id):
    """``for_volumes`` of one volume, its attached attachments: what its
    view lists, in a statement built once."""
    return query.core(session).execute(
        query.built('attached_to', lambda: _in_views(
            AT.c.volume_id == sa.bindparam('volume_id'),
            AT.c.attach_status == query.fixed(states.ATTACHED))),
        {'volume_id': volume_id}).all()


def connections_on_host(session, volume_id, host, exclude=None,
                        export_host=None):
    """Ids of the live attachments of a volume connected from ``host``
    (other than ``exclude``) through the export of volume service
    ``export_host`` (any when None): they share one host connection."""
    if not host:
        return []
    any_export = export_host is None
    rows = query.core(session).execute(
        query.built(('connections_on_host', any_export),
                    lambda: _connections_statement(any_export)),
        {'volume_id': volume_id, 'host': host, 'exclude': exclude or '',
         'export_host': export_host}).all()
    return sorted(r.id for r in rows if r.connection_info)


def _connections_statement(any_export):
    stmt = sa.select(AT.c.id, AT.c.connection_info).where(
        AT.c.volume_id == sa.bindparam('volume_id'),
        AT.c.attached_host == sa.bindparam('host'),
        AT.c.id != sa.bindparam('exclude'),
        AT.c.deleted == sa.false())
    if not any_export:
        stmt = stmt.where(sa.or_(AT.c.export_host == sa.bindparam(
            'export_host'), AT.c.export_host.is_(None)))
    return stmt


def with_volume(session, attachment_id):
    """The live attachment (a row, read only), its volume's
    ``volumes.summary`` and the (id, consumer) of its type's QoS specs
    (None without), in one statement: what the volume service reads
    before a connect or a disconnect.  AttachmentNotFound when the
    attachment or its volume is gone."""
    row = query.core(session).execute(
        query.built('attachment_with_volume', _with_volume_statement),
        {'attachment_id': attachment_id}).first()
    if row is None:
        raise exception.AttachmentNotFound(attachment_id=attachment_id)
    fields = row._mapping
    qos = fields['qos__id']
    return row, summary_of({k: fields['volume__' + k]
                            for k in SUMMARY_COLUMNS}), \
        (qos, fields['qos__consumer']) if qos is not None else None


def _with_volume_statement():
    VT = models.VolumeType.__table__
    Q = models.QosSpecs.__table__
    return (sa.select(AT, *[V.c[k].label('volume__' + k)
                            for k in SUMMARY_COLUMNS],
                      Q.c.id.label('qos__id'),
                      Q.c.consumer.label('qos__consumer'))
            .join(V, V.c.id == AT.c.volume_id)
            .outerjoin(VT, VT.c.id == V.c.volume_type_id)
            .outerjoin(Q, Q.c.id == VT.c.qos_specs_id)
            .where(AT.c.id == sa.bindparam('attachment_id'),
                   AT.c.deleted == sa.false(),
                   V.c.deleted.is_(False)))


def shares_host_connection(session, attachment, export_host):
    """Whether another live attachment of the volume holds the same host
    connection as ``attachment`` through volume service
    ``export_host``."""
    return bool(connections_on_host(
        session, attachment.volume_id, attachment.attached_host,
        exclude=attachment.id, export_host=export_host))


def locked(session, volume_id, attachment_id):
    """The attachment as it is under its volume's row lock (taken
    here), or None when it is gone."""
    lock_volume(session, volume_id, load=False)
    try:
        return get(session, attachment_id)
    except exception.NotFound:
        return None


def connected_on_host(session, service_host):
    """(attachment, volume) pairs of live attachments holding a connection
    through an export of volume service ``service_host``
    (``node@backend``), whichever backend or cluster their volume is on
    now."""
    rows = session.execute(
        _live(sa.select(A, models.Volume)
              .join(models.Volume, models.Volume.id == A.volume_id)
              .where(models.Volume.deleted.is_(False),
                     exported_by(service_host),
                     A.attach_status.in_(CONNECTED_STATUSES),
                     # a fenced host gets no export back until unfenced
                     ~_fenced()))).all()
    return [(a, v) for a, v in rows if a.connection_info]


def _fenced():
    """SQL condition: the attachment's host is fenced off its volume
    (``db.host_fences``)."""
    F = models.HostFence
    return sa.exists().where(F.volume_id == A.volume_id,
                             F.host == A.attached_host,
                             F.deleted == sa.false())


def move_exports(session, attachment_ids, from_host, to_host):
    """Record the exports of ``attachment_ids`` that volume service
    ``from_host`` made as ``to_host``'s: another member of the cluster
    makes them again (exports kept in the storage, ``cluster_exports``),
    and from then on restores them and removes them.  Call under the
    volume's lock."""
    session.execute(
        sa.update(A).where(A.id.in_(list(attachment_ids)),
                           A.export_host == from_host)
        .values(export_host=to_host, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def fenced_of(session, volume_id, attachment_ids):
    """Those of ``attachment_ids`` (on ``volume_id``) whose host is
    fenced off the volume now."""
    return session.execute(sa.select(A).where(
        A.volume_id == volume_id, A.id.in_(list(attachment_ids)),
        _fenced())).scalars().all()


def record_event(session, attachment, reason):
    """An event about ``attachment`` that leaves its status as it is
    (fenced, unfenced), for the audit trail."""
    _record(session, _event_of(attachment, attachment.attach_status,
                               attachment.attach_status, reason))


def of_host(session, volume_id, host):
    """Live attachments of consumer ``host`` on a volume that hold, or
    are about to hold, an export (connected or being connected)."""
    return session.execute(_live(sa.select(A).where(
        A.volume_id == volume_id, A.attached_host == host,
        A.attach_status.in_(CONNECTED_STATUSES
                            + (states.ERROR_ATTACHING,)))
        .order_by(A.created_at, A.id))).scalars().all()


def export_holder(session, volume_id):
    """The volume service exporting one of the volume's live connected
    attachments (any, when several do), or None."""
    return session.execute(
        sa.select(A.export_host).where(
            A.volume_id == volume_id, A.deleted == sa.false(),
            A.export_host.is_not(None),
            A.attach_status.in_(CONNECTED_STATUSES))
        .limit(1)).scalar_one_or_none()


def exported_by(service_host):
    """SQL condition (on attachments joined with their volumes): the
    export is on volume service ``service_host``.  Rows from before
    exports were recorded per service (none recorded) belong to the
    service their volume is on."""
    return sa.or_(
        A.export_host == service_host,
        sa.and_(A.export_host.is_(None),
                models.Volume.host.startswith(service_host + '#',
                                              autoescape=True)))


def stale(session, service_host, cutoff):
    """(attachment, volume) of the transitional attachments exported by
    volume service ``service_host`` and unchanged since ``cutoff``:
    attaching, detaching with its disconnect under way, error_detaching,
    error_attaching (whose export may still run), or attached and marked
    taking over.  (One os-begin_detaching marked
    detaching is not being disconnected: its host may still use it, and
    the detach or os-roll_detaching ends the mark, however old.)"""
    V = models.Volume
    changed = sa.func.coalesce(A.updated_at, A.created_at)
    return session.execute(
        sa.select(A, V).join(V, V.id == A.volume_id).where(
            V.deleted.is_(False), A.deleted.is_(False),
            exported_by(service_host),
            changed <= cutoff,
            sa.or_(A.attach_status.in_((states.ATTACH_ATTACHING,
                                        states.ERROR_DETACHING,
                                        states.ERROR_ATTACHING)),
                   sa.and_(A.attach_status == states.ATTACH_DETACHING,
                           A.operation == states.DISCONNECTING),
                   sa.and_(A.attach_status == states.ATTACHED,
                           A.operation == states.TAKING_OVER)
                   ))).all()


def held_by(session, service_host):
    """Live attachments whose export volume service ``service_host``
    holds or may be making: what it must disconnect before it goes."""
    rows = session.execute(
        _live(sa.select(A)
              .join(models.Volume, models.Volume.id == A.volume_id)
              .where(exported_by(service_host),
                     A.attach_status.in_((states.ATTACH_ATTACHING,
                                          states.ATTACHED,
                                          states.ATTACH_DETACHING,
                                          states.ERROR_DETACHING,
                                          states.ERROR_ATTACHING)))
              .order_by(A.created_at))).scalars().all()
    return [a for a in rows if a.attach_status != states.ERROR_ATTACHING
            or a.connection_info]


def export_load(session, service_hosts):
    """service host -> how many live attachments hold an export there."""
    if not service_hosts:
        return {}
    rows = session.execute(
        sa.select(A.export_host, sa.func.count())
        .where(A.deleted.is_(False), A.export_host.in_(list(service_hosts)),
               A.attach_status.in_((states.ATTACH_ATTACHING,
                                    states.ATTACHED,
                                    states.ATTACH_DETACHING,
                                    states.ERROR_DETACHING)))
        .group_by(A.export_host)).all()
    return {host: count for host, count in rows}


def sharing_connections(session, attachments):
    """Attachment id -> ids of the other attachments sharing its host
    connection, for a page of attachments in one query."""
    connected = [a for a in attachments
                 if a.connection_info and a.attached_host]
    if not connected:
        return {}
    rows = session.execute(sa.select(
        A.id, A.volume_id, A.attached_host, A.export_host,
        A.connection_info).where(
        A.volume_id.in_({a.volume_id for a in connected}),
        A.attached_host.in_({a.attached_host for a in connected}),
        A.deleted == sa.false())).all()
    by_host = collections.defaultdict(list)
    for row in rows:
        if row.connection_info:
            by_host[row.volume_id, row.attached_host].append(row)
    return {a.id: sorted(
        r.id for r in by_host[a.volume_id, a.attached_host]
        if r.id != a.id and (a.export_host is None
                             or r.export_host in (a.export_host, None)))
        for a in connected}


def sharing_connection(session, attachment):
    """Ids of the other attachments sharing ``attachment``'s host
    connection (none while it is not connected)."""
    if not attachment.connection_info:
        return []
    return connections_on_host(session, attachment.volume_id,
                               attachment.attached_host,
                               exclude=attachment.id,
                               export_host=attachment.export_host)


def writers_of(session, volume_ids):
    """(attachment id, volume id, export host) of the live read-write
    attachments of ``volume_ids`` that hold or are making a connection,
    or are reserved to make one: the hosts that may write them (a group
    snapshot holds them)."""
    if not volume_ids:
        return []
    return [tuple(r) for r in session.execute(
        sa.select(A.id, A.volume_id, A.export_host)
        .where(A.deleted == sa.false(), A.volume_id.in_(list(volume_ids)),
               sa.or_(A.attach_mode == 'rw',
                      A.operation == states.TAKING_OVER),
               A.attach_status.in_(CONNECTED_STATUSES
                                   + (states.ATTACH_RESERVED,)))
        .order_by(A.id)).all()]
