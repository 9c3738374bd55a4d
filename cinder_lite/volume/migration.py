"""A volume's migration to another backend, on the volume services
(Cinder's generic migration: the data copied by the source's volume
service).

The API marks the volume ``starting`` and casts ``migrate_volume`` to
the source's service, which
1. records the temporary volume on the destination (``creating``,
   ``migration_status`` ``target:<id>``) and has its service make it;
2. copies the data (``migrating``): the source's storage exported to
   itself read-only, the new storage exported to it read-write by the
   destination's service (the exports backups use, each with a
   credential of its own), chunk by chunk, holes skipped, at most
   ``volume_copy_bps_limit`` bytes a second;
3. completes (``completing``): the destination renames the new storage
   to the volume's id (``migrate_finish``), then one transaction gives
   the volume the destination's host and ``success``, and the temporary
   row the source's host and ``deleting``; the source deletes it, which
   removes the old storage (``drop_old_storage``).

An in-use volume (one attachment, to one server) is not copied here:
once the temporary volume is made, its service asks Nova to swap the
server's disk to it (``nova.NovaNotifier.swap_volume``) and leaves the
migration ``migrating``; Nova copies the data on its host, moves the
server's attachment to the temporary volume and calls
``os-migrate_volume_completion``, which completes as in 3. with that
attachment moving to the volume (``migrate_api``).

Any failure before the swap: ``error``, the volume stays where it was
(its status what it was), the temporary volume is deleted by its
service, the new storage with it.  A service that stops in the middle
is covered by ``reconcile`` (doc/source/migration.rst).
"""
import datetime
import logging
import time
import uuid

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.connector import devices
from cinder_lite.connector import host as connector_host
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import volume_migrations as db_migrations
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import nova
from cinder_lite.volume import rpcapi
from cinder_lite.volume import types as volume_types

LOG = logging.getLogger(__name__)

CHUNK = 4 * 1024 * 1024
# how often (at most) a running copy renews the two volumes'
# updated_at; a third of reconcile_after when that is shorter
RENEW_EVERY = 5.0


def export_id(target_id):
    """The id both exports of a migration go by (``backup_export``
    prefixes it)."""
    return 'migration-%s' % target_id


class Stopped(Exception):
    """The volume service stops: the migration gives up."""


def _fail(volume_id, why):
    """The migration of ``volume_id`` is ``error``; the volume is what
    it was before it (a lock it took is released)."""
    if not db_api.run_writer(_mark_failed, volume_id):
        return False
    LOG.error('volume %s: migration -> error: %s', volume_id, why)
    return True


def _mark_failed(session, volume_id):
    try:
        db_migrations.move(session, volume_id, 'fail')
    except (exception.InvalidTransition, exception.VolumeNotFound):
        return False
    _unlock(session, volume_id)
    return True


def _unlock(session, volume_id):
    for event in ('migrate_unlock', 'retype_migrated'):
        try:
            db_volumes.transition(session, volume_id, event)
            return
        except exception.InvalidTransition:
            continue


class Migrator:
    """The migration work of one volume manager."""

    def __init__(self, manager):
        self.manager = manager
        self.conf = manager.conf
        self.driver = manager.driver
        self.rpc = rpcapi.VolumeAPI(manager.conf)
        self.renew_every = max(0.2, min(RENEW_EVERY,
                                        self.conf.reconcile_after / 3.0))

    # -- the source's side --------------------------------------------------
    def migrate(self, ctxt, volume_id, dest_host, dest_cluster,
                new_type_id=None):
        """RPC 1.13 (cast, to the source's service)."""
        target_id = str(uuid.uuid4())
        with self.manager.working_on(volume_id, target_id):
            try:
                self._migrate(ctxt, volume_id, target_id, dest_host,
                              dest_cluster, new_type_id)
            except Exception as e:
                LOG.exception('volume %s: migration to %s failed',
                              volume_id, dest_host)
                _fail(volume_id, getattr(e, 'message', None) or e)
                self._drop_target(ctxt, target_id)

    def _migrate(self, ctxt, volume_id, target_id, dest_host, dest_cluster,
                 new_type_id):
        def record(session):
            source = db_volumes.lock(session, volume_id)
            if source.migration_status != states.MIGRATION_STARTING:
                return source.migration_status, None
            # an in-use volume: its one server's disk is swapped by
            # Nova (the API let only such a one start); attached
            # otherwise since the API's check, it does not move
            live = db_attachments.live_for_volume(session, volume_id)
            if live and not (
                    source.status == states.IN_USE and len(live) == 1
                    and live[0].attach_status == states.ATTACHED and
                    live[0].instance_uuid and not source.multiattach
                    and not new_type_id):
                raise exception.InvalidVolume(
                    reason='volume %s was attached or reserved after '
                           'its migration was asked for' % volume_id)
            servers = [a.instance_uuid for a in live]
            type_values = None
            if new_type_id:
                type_values = {
                    'multiattach': volume_types.is_multiattach(
                        db_types.get(session, new_type_id))}
            target = db_migrations.create_target(
                session, source, target_id, dest_host, dest_cluster,
                new_type_id or source.volume_type_id)
            db_migrations.move(session, volume_id, 'copy')
            return None, (source.attach_seq, source.size, type_values,
                          db_volumes.summary(target),
                          db_volumes.summary(source), servers)
        # (run again from its start on a deadlock: the destination is
        # asked once it committed)
        status, recorded = quota.ensuring_rows(
            lambda: db_api.run_writer(record))
        if recorded is None:
            LOG.warning('volume %s: migration not started (it is %s)',
                        volume_id, status)
            return
        attach_seq, size, type_values, target, volume, servers = recorded
        LOG.info('volume %s: migration starting -> migrating, to %s '
                 '(temporary volume %s)', volume_id, dest_host, target_id)
        self.rpc.create_volume(ctxt, dest_host, target_id, target)
        self._wait_created(volume_id, target_id)
        if servers:
            try:
                self.manager.nova.swap_volume(
                    servers[0], volume_id, target_id,
                    getattr(ctxt, 'request_id', None))
            except nova.SwapRefused as e:
                raise exception.BackendError(reason=e.message)
            LOG.info('volume %s: migration migrating, Nova swaps server %s '
                     'to %s', volume_id, servers[0], target_id)
            return
        self._copy(ctxt, volume, target, dest_host)
        db_api.run_writer(db_migrations.move, volume_id, 'complete')
        LOG.info('volume %s: migration migrating -> completing', volume_id)
        # the new storage takes the volume's id on the destination
        self.rpc.migrate_finish(ctxt, dest_host, target_id, volume_id)

        def swap(session):
            db_migrations.swap(
                session, volume_id, target_id, attach_seq, size,
                new_type_id, type_values, quota.Checker(self.conf, session))
            _unlock(session, volume_id)
        # (refused: the destination holds a copy under the volume's id
        # that no row owns; the temporary volume's delete removes it)
        quota.ensuring_rows(lambda: db_api.run_writer(swap))
        LOG.info('volume %s: migration completing -> success, now on %s',
                 volume_id, dest_host)
        with db_api.reader() as session:
            old = db_volumes.summary(db_volumes.get(session, target_id))
        # the temporary row holds the old storage's place now
        self.manager.delete_volume(ctxt, old['id'])

    def _wait_created(self, volume_id, target_id):
        deadline = time.monotonic() + self.conf.migration_create_timeout
        renewed = time.monotonic()
        while True:
            with db_api.reader() as session:
                status = db_volumes.get(session, target_id).status
            if status == states.AVAILABLE:
                return
            if status != states.CREATING:
                raise exception.BackendError(
                    reason='the destination could not make the new volume '
                           '(%s)' % status)
            if time.monotonic() > deadline:
                raise exception.BackendError(
                    reason='the destination did not make the new volume in '
                           '%d s' % self.conf.migration_create_timeout)
            if time.monotonic() - renewed > self.renew_every:
                self._renew(volume_id)
                renewed = time.monotonic()
            if self.manager._stop.wait(0.2):
                raise Stopped('the volume service stops')

    def _renew(self, *ids):
        def touch(session):
            for volume_id in ids:
                db_migrations.touch(session, volume_id)
        db_api.run_writer(touch)

    def _connector(self):
        return connector_host.get_connector(host=self.manager.host,
                                            ip=self.conf.migration_my_ip)

    def _open(self, info, export):
        data = credentials.keyring(self.conf).reveal(
            info['data'], 'backup-%s' % export)
        return devices.connect(
            dict(data, driver_volume_type=info['driver_volume_type']),
            source_address=self.conf.migration_my_ip,
            initiator=self._connector()['initiator'])

    def _copy(self, ctxt, volume, target, dest_host):
        """Every byte of ``volume`` that holds data into ``target``."""
        export = export_id(target['id'])
        connector = self._connector()
        source_info = self.driver.create_backup_export(
            volume, None, connector, 'ro', 'backup-%s' % export)
        try:
            dest_info = self.rpc.backup_export(
                ctxt, dest_host, export, target['id'], None, False, 'rw',
                connector)
            try:
                src = self._open(source_info, export)
                try:
                    dst = self._open(dest_info, export)
                    try:
                        copied = self._copy_data(volume, target, src, dst)
                    finally:
                        dst.close()
                finally:
                    src.close()
            finally:
                try:
                    self.rpc.backup_unexport(ctxt, dest_host, export,
                                             target['id'], None, False)
                except Exception:
                    # its service removes it when it deletes the volume,
                    # or at its next start
                    LOG.exception('migration of %s: the export of %s on %s '
                                  'could not be removed now', volume['id'],
                                  target['id'], dest_host)
        finally:
            self.driver.remove_backup_export(volume, None,
                                             'backup-%s' % export)
        LOG.info('volume %s: %d MiB copied to %s', volume['id'],
                 copied // (1024 * 1024), dest_host)

    def _copy_data(self, volume, target, src, dst):
        size = volume['size'] * 1024 ** 3
        limit = self.conf.volume_copy_bps_limit
        started = renewed = time.monotonic()
        copied = 0
        sparse = hasattr(src, 'holds_data')
        for offset in range(0, size, CHUNK):
            if self.manager._stop.is_set():
                raise Stopped('the volume service stops')
            length = min(CHUNK, size - offset)
            if sparse and not src.holds_data(offset, length):
                continue
            data = src.read(offset, length)
            if data.count(0) != len(data):
                dst.write(offset, data)
            copied += len(data)
            now = time.monotonic()
            if now - renewed > self.renew_every:
                self._renew(volume['id'], target['id'])
                renewed = now
            if limit:
                ahead = copied / limit - (now - started)
                if ahead > 0 and self.manager._stop.wait(ahead):
                    raise Stopped('the volume service stops')
        dst.flush()
        return copied

    def _drop_target(self, ctxt, target_id):
        """The temporary volume of a failed migration is deleted by its
        service (with the new storage, whatever its name is there)."""
        def mark(session):
            try:
                target = db_volumes.get(session, target_id)
            except exception.VolumeNotFound:
                return False, None
            if target.status == states.DELETING:
                return False, None
            db_volumes.transition(session, target_id, 'force_delete')
            return True, target.host
        marked, host = db_api.run_writer(mark)
        if not marked:
            return
        try:
            self.rpc.delete_volume(ctxt, host, target_id)
        except Exception:
            # it stays ``deleting``: its service rolls the delete forward
            LOG.exception('temporary volume %s: delete not sent', target_id)

    # -- the destination's side ---------------------------------------------
    def finish(self, ctxt, target_id, volume_id):
        """RPC 1.13 (call, to the destination's service): the storage of
        the temporary volume becomes the volume's."""
        with db_api.reader() as session:
            target = db_volumes.get(session, target_id)
            if db_migrations.target_of(target.migration_status) != \
                    volume_id:
                raise exception.InvalidVolume(
                    reason='volume %s is no migration target of %s' % (
                        target_id, volume_id))
        with self.manager.working_on(target_id):
            self.driver.rename_volume({'id': target_id}, volume_id)
        LOG.info('migration of %s: the storage of %s took its id here',
                 volume_id, target_id)


def drop_old_storage(driver, backend_id, volume):
    """Deleting a migration's temporary volume (``volume``, a summary):
    also remove what, on this backend, bears the migrated volume's id
    and is not that volume's storage -- the old storage on the source
    after the swap, or a renamed copy on the destination when the
    migration stopped before the swap -- and the migration's export."""
    source_id = db_migrations.target_of(volume.get('migration_status'))
    if source_id is None:
        return
    driver.remove_backup_export(volume, None,
                                'backup-%s' % export_id(volume['id']))
    with db_api.reader() as session:
        try:
            source = db_volumes.get(session, source_id)
        except exception.VolumeNotFound:
            source = None
    if source is not None and source.host and rpcapi.backend_host(
            source.host) == backend_id:
        return      # it lives here: its storage stays
    driver.delete_volume({'id': source_id, 'size': volume['size']})
    LOG.info('migration of %s: storage left under its id on %s removed',
             source_id, backend_id)


def reconcile(backend, max_age, busy):
    """The reconciliation rules of migrations on one backend.

    ============================  ======================================
    found                         done
    ============================  ======================================
    a temporary volume here,      the migration stopped (its source's
    unchanged for max_age, or     service died, or gave up): the
    its volume gone, or no        temporary volume is deleted with
    longer migrating              whatever this backend holds of it;
                                  the volume's migration ``error``
    a volume of this backend      this service stopped in the copy:
    migrating, unchanged for      ``error``, the volume what it was; its
    max_age                       temporary volume is left to the
                                  destination (the rule above)
    ============================  ======================================

    Neither rule touches a migration whose temporary volume has an
    attachment: Nova swaps a server's disk to it (as long as its data
    takes to copy) and completes the migration, or fails it, itself.
    """
    cutoff = models.utcnow() - datetime.timedelta(seconds=max_age)
    changes = []
    with db_api.reader() as session:
        targets = [(db_volumes.summary(t), t.updated_at, t.created_at,
                    s.migration_status if s is not None else None)
                   for t, s in db_migrations.targets_on(
                       session, backend.backend_id)
                   if s is None or s.migration_status !=
                   states.MIGRATION_MIGRATING or
                   not db_attachments.live_for_volume(session, t.id)]
        sources = [v.id for v in db_migrations.stale_sources(
            session, backend.backend_id, cutoff)
            if not db_migrations.swapped_to(session, v.id)]
    for volume_id in sources:
        if volume_id in busy:
            continue
        if _fail(volume_id, 'the volume service stopped during the '
                 'migration'):
            changes.append('volume %s: migration -> error (interrupted)'
                           % volume_id)
    for target, updated_at, created_at, source_status in targets:
        if target['id'] in busy:
            continue
        fresh = (updated_at or created_at) > cutoff
        if fresh and source_status in states.MIGRATION_RUNNING:
            continue
        if not db_api.run_writer(_claim_target, target['id'], updated_at):
            continue
        source_id = db_migrations.target_of(target['migration_status'])
        _fail(source_id, 'the migration stopped before the volume moved')
        backend.roll_forward.delete_volume(dict(target,
                                                status=states.DELETING))
        LOG.warning('reconcile: temporary volume %s of the migration of '
                    '%s deleted (the migration stopped)', target['id'],
                    source_id)
        changes.append('volume %s: temporary volume of %s deleted '
                       '(migration stopped)' % (target['id'], source_id))
    return changes


def _claim_target(session, target_id, updated_at):
    """The temporary volume ``target_id``, unchanged since
    ``updated_at``, is ``deleting`` (by reconciliation); False when it
    changed meanwhile or could not be deleted."""
    if not db_migrations.claim(session, target_id, updated_at):
        return False
    try:
        db_volumes.transition(session, target_id, 'force_delete')
    except (exception.InvalidTransition, exception.VolumeNotFound):
        return False
    return True
