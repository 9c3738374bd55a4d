"""SQL for QoS specs, their keys, and their association with volume
types (``volume_types.qos_specs_id``).

Every change takes the specs' row lock first (``_lock``), then the
type's: an association and a delete of the same specs happen one after
the other, so a type never points at specs that are gone.
"""
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import volume_types as db_types

Q, K, VT = models.QosSpecs, models.QosSpecsKey, models.VolumeType

SORT_KEYS = ('id', 'name', 'consumer', 'created_at', 'updated_at')
FILTERS = ('id', 'name', 'consumer')


def _keys_of(session, specs_ids):
    found = {specs_id: {} for specs_id in specs_ids}
    if not specs_ids:
        return found
    for specs_id, key, value in session.execute(
            sa.select(K.qos_specs_id, K.key, K.value).where(
                K.qos_specs_id.in_(list(specs_ids)))):
        found[specs_id][key] = value
    return found


def _view(row, specs):
    return {'id': row.id, 'name': row.name, 'consumer': row.consumer,
            'specs': specs, 'created_at': row.created_at,
            'updated_at': row.updated_at}


def _lock(session, specs_id):
    row = session.execute(
        sa.select(Q).where(Q.id == specs_id).with_for_update()
        .execution_options(populate_existing=True)).scalar_one_or_none()
    if row is None:
        raise exception.QoSSpecsNotFound(specs_id=specs_id)
    return row


def _put_keys(session, specs_id, specs):
    if not specs:
        return
    present = {k.key: k for k in session.execute(
        sa.select(K).where(K.qos_specs_id == specs_id,
                           K.key.in_(list(specs)))).scalars()}
    for key, value in specs.items():
        if key in present:
            present[key].value = value
        else:
            session.add(K(qos_specs_id=specs_id, key=key, value=value))


def create(session, name, consumer, specs):
    row = Q(id=str(uuid.uuid4()), name=name, consumer=consumer)
    session.add(row)
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.QoSSpecsExists(specs_id=name) from None
    _put_keys(session, row.id, specs)
    session.flush()
    return get(session, row.id)


def get(session, specs_id):
    row = session.execute(sa.select(Q).where(Q.id == specs_id)
                          .execution_options(populate_existing=True)
                          ).scalar_one_or_none()
    if row is None:
        raise exception.QoSSpecsNotFound(specs_id=specs_id)
    return _view(row, _keys_of(session, [row.id])[row.id])


def list_specs(session, filters=None, sort_keys=('created_at',),
               sort_dirs=('desc',), limit=None, marker=None):
    stmt = sa.select(Q)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(Q, key) == value)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(sa.select(Q).where(
            Q.id == marker)).scalar_one_or_none()
        if marker_row is None:
            raise exception.InvalidInput(
                reason='Marker %s could not be found.' % marker)
    rows = session.execute(query.paginate(
        stmt, Q, sort_keys, sort_dirs, limit, marker_row)).scalars().all()
    keys = _keys_of(session, [r.id for r in rows])
    return [_view(r, keys[r.id]) for r in rows]


def set_keys(session, specs_id, specs, consumer=None):
    """Add or change keys (and the consumer, when given)."""
    row = _lock(session, specs_id)
    if consumer is not None:
        row.consumer = consumer
    row.updated_at = models.utcnow()
    _put_keys(session, specs_id, specs)
    session.flush()


def delete_keys(session, specs_id, keys):
    """Remove ``keys``, all or none: QoSSpecsKeyNotFound names the first
    one the specs do not have."""
    _lock(session, specs_id).updated_at = models.utcnow()
    present = set(session.execute(sa.select(K.key).where(
        K.qos_specs_id == specs_id, K.key.in_(list(keys)))).scalars())
    for key in keys:
        if key not in present:
            raise exception.QoSSpecsKeyNotFound(specs_id=specs_id,
                                                specs_key=key)
    session.execute(sa.delete(K).where(K.qos_specs_id == specs_id,
                                       K.key.in_(list(keys))))
    session.flush()


def _live_types(specs_id):
    return sa.select(VT.id, VT.name).where(VT.qos_specs_id == specs_id,
                                           VT.deleted == sa.false())


def associations(session, specs_id):
    """(id, name) of the live types associated with the specs."""
    get(session, specs_id)
    return session.execute(_live_types(specs_id).order_by(
        VT.name, VT.id)).all()


def associate(session, specs_id, type_id):
    """Give type ``type_id`` these specs; InvalidVolumeType when it has
    others."""
    _lock(session, specs_id)
    vtype = db_types.lock_row(session, type_id)
    if vtype.qos_specs_id == specs_id:
        return
    if vtype.qos_specs_id is not None:
        # Cinder's words
        raise exception.InvalidVolumeType(
            reason='Type %s is already associated with another qos specs: '
                   '%s' % (type_id, vtype.qos_specs_id))
    vtype.qos_specs_id = specs_id
    vtype.updated_at = models.utcnow()
    session.flush()


def disassociate(session, specs_id, type_id):
    """Take the specs from a type (nothing changes when the type has
    other specs or none)."""
    _lock(session, specs_id)
    vtype = db_types.lock_row(session, type_id)
    if vtype.qos_specs_id == specs_id:
        vtype.qos_specs_id = None
        vtype.updated_at = models.utcnow()
        session.flush()


def _disassociate_all(session, specs_id):
    # deleted types too: their rows keep no reference to specs that are
    # gone
    session.execute(
        sa.update(VT).where(VT.qos_specs_id == specs_id)
        .values(qos_specs_id=None, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def disassociate_all(session, specs_id):
    _lock(session, specs_id)
    _disassociate_all(session, specs_id)


def delete(session, specs_id, force=False):
    """Delete the specs; QoSSpecsInUse while a live type has them, unless
    ``force`` (the types then lose them)."""
    _lock(session, specs_id)
    if not force and session.execute(
            _live_types(specs_id).limit(1)).first() is not None:
        raise exception.QoSSpecsInUse(specs_id=specs_id)
    _disassociate_all(session, specs_id)
    session.execute(sa.delete(K).where(K.qos_specs_id == specs_id))
    session.execute(sa.delete(Q).where(Q.id == specs_id))


def for_type(session, type_id):
    """``{'consumer': ..., 'specs': {...}}`` of a type's QoS specs (a
    deleted type's too: its volumes keep it), or None."""
    row = session.execute(
        sa.select(Q.id, Q.consumer).join(VT, VT.qos_specs_id == Q.id)
        .where(VT.id == type_id)).first()
    if row is None:
        return None
    return with_keys(session, row.id, row.consumer)


def with_keys(session, specs_id, consumer):
    """``for_type``'s answer for the specs ``specs_id`` of a type, whose
    ``consumer`` the caller read already."""
    return {'id': specs_id, 'consumer': consumer,
            'specs': _keys_of(session, [specs_id])[specs_id]}


def changes_front_end(session, old_type_id, new_type_id):
    """True when a volume of ``old_type_id`` retyped to ``new_type_id``
    would get other QoS specs that its hosts apply: the types have
    different specs, and either one is consumed by the front end."""
    ids = dict(session.execute(sa.select(VT.id, VT.qos_specs_id).where(
        VT.id.in_([old_type_id, new_type_id]))).all())
    old, new = ids.get(old_type_id), ids.get(new_type_id)
    if old == new:
        return False
    consumers = session.execute(sa.select(Q.consumer).where(
        Q.id.in_([i for i in (old, new) if i is not None]))).scalars()
    # (cinder_lite.common.qos.BACK_END: the one consumer hosts ignore)
    return any(c != 'back-end' for c in consumers)
