"""The volume manager's side of manage and unmanage (RPC 1.12), mixed
into ``VolumeManager``.

A manage runs in three steps, each safe to run again: the driver sizes
the object the reference names; the volume (snapshot) takes that size,
its quota charged in the same transaction (over quota: nothing is
adopted); the driver adopts the object under the volume's (snapshot's)
own name, and the record becomes ``available``.  Any failure leaves the
record ``error_managing`` (a snapshot: ``error``) with a user message,
and the object where it was unless it was adopted.  Reconciliation runs
a manage left ``managing`` again with no reference, meaning the
object's own name: it finishes when the object was adopted, else fails
as above.

An unmanage lets go of the storage (the driver keeps it in place) and
ends the record, which gives its quota back; the API allowed it only
without attachments or snapshots.
"""
import logging

from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import manageable
from cinder_lite.volume import snapshot_api

LOG = logging.getLogger(__name__)

# Cinder's message events: create volume (from backend storage) failed,
# snapshot create failed
EVENT_MANAGE_FAILED = 'VOLUME_VOLUME_002_002'
EVENT_SNAPSHOT_MANAGE_FAILED = 'VOLUME_VOLUME_SNAPSHOT_009_013'


class ManageEndpoints:
    """Needs ``self.driver``, ``self.conf``, ``self.host`` and
    ``self.working_on`` of the manager."""

    # -- volumes ---------------------------------------------------------
    def manage_existing(self, ctxt, volume, ref):
        """RPC 1.12 (cast): adopt the object ``ref`` as the storage of the
        ``managing`` volume ``volume`` (``volumes.summary``); ``ref``
        None: the volume's own storage (a manage rolled forward)."""
        volume_id = volume['id']
        try:
            with self.working_on(volume_id):
                owner = manageable.owner_id(ref)
                if owner is not None and owner != volume_id:
                    with db_api.reader() as session:
                        if db_volumes.live_ids(session, [owner]):
                            raise exception.ManageExistingAlreadyManaged(
                                volume_ref=ref)
                size = self.driver.manage_existing_get_size(volume, ref)
                self._charge(db_volumes, volume_id, size)
                self.driver.manage_existing(dict(volume, size=size), ref)
                db_api.run_writer(db_volumes.transition, volume_id,
                                  'managed')
        except Exception as e:
            LOG.warning('volume %s: manage of %s failed -> error_managing: '
                        '%s', volume_id, ref, e)
            self._manage_failed(ctxt, 'volume', volume, EVENT_MANAGE_FAILED,
                                'manage existing volume: %s'
                                % (getattr(e, 'message', None) or e))
            return
        LOG.info('volume %s: managing -> available (%s adopted, %d GiB)',
                 volume_id, ref or 'its own storage', size)
        notify.info(ctxt, self.host, 'volume.manage_existing.end',
                    notify.volume_payload(dict(volume, size=size,
                                               status=states.AVAILABLE)))

    def unmanage_volume(self, ctxt, volume_id):
        """RPC 1.12 (cast): let go of the storage of an ``unmanaging``
        volume and end its record."""
        try:
            with db_api.reader() as session:
                volume = db_volumes.summary(db_volumes.get(session,
                                                           volume_id))
        except exception.VolumeNotFound:
            return
        try:
            with self.working_on(volume_id):
                self.driver.unmanage(volume)
                db_api.run_writer(db_volumes.transition, volume_id,
                                  'unmanaged')
        except Exception as e:
            LOG.exception('volume %s: unmanaging -> error_unmanaging',
                          volume_id)
            self._unmanage_failed(ctxt, 'volume', volume, e)
            return
        LOG.info('volume %s: unmanaged; its storage stays on %s',
                 volume_id, self.host)

    def get_manageable_volumes(self, ctxt, marker=None, limit=None,
                               offset=None, sort_keys=None, sort_dirs=None):
        """RPC 1.12 (call): Cinder's entries of what the backend holds,
        paged."""
        entries = self.driver.list_manageable_volumes()
        with db_api.reader() as session:
            live = db_volumes.live_ids(
                session, [e['volume_id'] for e in entries
                          if e.get('volume_id')])
        return manageable.page(manageable.judge(entries, live), marker,
                               limit, offset, sort_keys, sort_dirs)

    # -- snapshots ---------------------------------------------------------
    def manage_existing_snapshot(self, ctxt, snapshot, ref):
        """RPC 1.12 (cast): adopt the copy ``ref`` as the ``managing``
        snapshot ``snapshot`` (``snapshots.summary``); ``ref`` None: its
        own copy (rolled forward)."""
        snapshot_id = snapshot['id']
        try:
            with self.working_on(snapshot_id):
                owner = manageable.owner_id(ref, 'snapshot')
                if owner is not None and owner != snapshot_id:
                    with db_api.reader() as session:
                        if db_snapshots.live_ids(session, [owner]):
                            raise exception.ManageExistingAlreadyManaged(
                                volume_ref=ref)
                size = self.driver.manage_existing_snapshot_get_size(
                    snapshot, ref)
                self._charge(db_snapshots, snapshot_id, size)
                self.driver.manage_existing_snapshot(
                    dict(snapshot, volume_size=size), ref)
                db_api.run_writer(db_snapshots.transition, snapshot_id,
                                  'managed', values={'progress': '100%'})
        except Exception as e:
            LOG.warning('snapshot %s: manage of %s failed -> error: %s',
                        snapshot_id, ref, e)
            self._manage_failed(ctxt, 'snapshot', snapshot,
                                EVENT_SNAPSHOT_MANAGE_FAILED,
                                'manage existing snapshot: %s'
                                % (getattr(e, 'message', None) or e))
            return
        LOG.info('snapshot %s: managing -> available (%s adopted, %d GiB)',
                 snapshot_id, ref or 'its own copy', size)
        notify.info(ctxt, self.host, 'snapshot.manage_existing.end',
                    snapshot_api.payload(dict(snapshot, volume_size=size),
                                         states.AVAILABLE))

    def unmanage_snapshot(self, ctxt, snapshot):
        """RPC 1.12 (cast): let go of the copy of an ``unmanaging``
        snapshot and end its record."""
        try:
            with self.working_on(snapshot['id']):
                self.driver.unmanage_snapshot(snapshot)
                db_api.run_writer(db_snapshots.transition, snapshot['id'],
                                  'unmanaged')
        except exception.SnapshotNotFound:
            return
        except Exception as e:
            LOG.exception('snapshot %s: unmanaging -> error_unmanaging',
                          snapshot['id'])
            self._unmanage_failed(ctxt, 'snapshot', snapshot, e)
            return
        LOG.info('snapshot %s: unmanaged; its copy stays on %s',
                 snapshot['id'], self.host)

    def get_manageable_snapshots(self, ctxt, marker=None, limit=None,
                                 offset=None, sort_keys=None,
                                 sort_dirs=None):
        """RPC 1.12 (call): as ``get_manageable_volumes``, of copies."""
        entries = self.driver.list_manageable_snapshots()
        with db_api.reader() as session:
            live = db_snapshots.live_ids(
                session, [e['snapshot_id'] for e in entries
                          if e.get('snapshot_id')])
        return manageable.page(manageable.judge(entries, live, 'snapshot'),
                               marker, limit, offset, sort_keys, sort_dirs)

    def _charge(self, records, resource_id, size):
        def charge(session):
            records.charge_size(session, resource_id, size,
                                quota.Checker(self.conf, session))
        quota.ensuring_rows(lambda: db_api.run_writer(charge))

    # -- failures ----------------------------------------------------------
    @staticmethod
    def _records(kind):
        return db_volumes if kind == 'volume' else db_snapshots

    def _manage_failed(self, ctxt, kind, resource, event, detail):
        db_api.run_writer(self._record_manage_failure, ctxt, kind,
                          resource, 'manage_failed', event, detail)

    def _unmanage_failed(self, ctxt, kind, resource, error):
        db_api.run_writer(self._record_manage_failure, ctxt, kind,
                          resource, 'unmanage_failed',
                          EVENT_MANAGE_FAILED if kind == 'volume'
                          else EVENT_SNAPSHOT_MANAGE_FAILED,
                          'unmanage %s: %s' % (kind, error))

    def _record_manage_failure(self, session, ctxt, kind, resource, change,
                               event, detail):
        """``change`` (``manage_failed``, ``unmanage_failed``) and its
        user message, unless the record moved on or went meanwhile."""
        try:
            self._records(kind).transition(session, resource['id'], change)
        except (exception.InvalidTransition, exception.NotFound):
            return
        db_messages.create(
            session, resource['project_id'], event, detail,
            resource_type='VOLUME' if kind == 'volume'
            else 'VOLUME_SNAPSHOT',
            resource_uuid=resource['id'], request_id=ctxt.request_id)
