"""The RBD driver: each volume is an RBD image ``volume-<id>`` in the pool
``rbd_pool`` of a Ceph cluster, each snapshot an RBD snapshot
``snapshot-<id>`` of it (protected, so volumes can be cloned from it),
volumes from snapshots and clones of volumes copy-on-write clones
(flattened past ``rbd_max_clone_depth``).  A snapshot of a single-writer
image whose exclusive lock another client holds is a snapshot of a group
of the image's own, made by the volume service over the holder's lock
(the holder's key may not allocate snapshot ids; doc/source/rbd.rst); volumes
from it are copies.  Nothing lives on the volume node: several volume
services of one cluster serve the same pool, and a node's death loses
nothing.

Every attachment connects as a cephx user of its own,
``client.<rbd_attachment_user_prefix>.<attachment id>``, made at connect
and removed at detach, takeover and fence.  Its caps reach the objects of
its image only (``object_prefix`` caps on ``rbd_data.<image id>``,
``rbd_header.<image id>``, ``rbd_object_map.<image id>``,
``rbd_id.<name>``, and a read of ``rbd_info``; a clone's key reads its
ancestors' data and the pool's directory too):
it cannot list the pool or open another image.  A read-only attachment's
key may only read the data objects; the OSDs refuse its writes whatever
client it runs.  The key's secret is derived from the deployment key
(common/credentials.py), never stored, and shown only to the callers that
may connect, as every target's credential.

A cut-off (detach, takeover, fence) removes the key, then blocklists every
client instance that authenticated with it (the monitors' sessions of
that user, address and nonce), then waits until every placement group of
the pool has applied the osdmap that holds the blocklist: only then does
it report the host cut.  A write of the old client that an OSD accepted
was accepted before that map; a write after it is refused
(``ESHUTDOWN``).  doc/source/rbd.rst is the operator's side: the caps rbd_user
needs and what each gives away.

Which export an attachment has (its user, mode, image, and the member
that made it) is recorded in the omap of one object of the pool per
backend section, ``cinder_lite.exports.<section>``: any member of a
cluster can remove what another made (capability ``cluster_exports``: the
API sends the detach of a dead member's attachment to a live one), and
each member restores and prunes only its own at start.
"""
from concurrent import futures
import json
import logging
import math
import threading
import time

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import qemu_img
from cinder_lite.common import qos
from cinder_lite.common import system_bindings
from cinder_lite.volume.drivers import base

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3
# the namespace the fence barrier lists (empty: a listing only visits
# every placement group)
BARRIER_NAMESPACE = 'cinder-lite-fence-barrier'
# one RBD snapshot per clone of a volume, on the source
CLONE_SNAP = 'clone-%s'
# the snapshots deleted while a client held their image's lock: {snapshot
# id: image name}, removed from the image when that client is cut off
DEFERRED = 'cinder_lite.snapshots.deferred'
# the snapshots differential backups read and keep (Cinder's names)
BACKUP_SNAP_PREFIX = 'backup.'
ENOENT = 2


def rados_module():
    return system_bindings.load(
        'rados', 'python3-rados', accept=lambda m: hasattr(m, 'Rados'))


def rbd_module():
    rados_module()      # rbd's extension imports rados
    # (PyPI has an unrelated package named rbd)
    return system_bindings.load(
        'rbd', 'python3-rbd', accept=lambda m: hasattr(m, 'RBD'))


def volume_name(volume_id):
    return 'volume-%s' % volume_id


def snapshot_name(snapshot_id):
    return 'snapshot-%s' % snapshot_id


def key_caps(image_id, name, mode, header_watch, ancestors=()):
    """The OSD caps of an attachment's key on the image ``name`` (RBD
    id ``image_id``), a clone of the images of ``ancestors`` (RBD ids):
    reads of what the clone has not written yet go to them."""
    if mode == 'rw':
        data = header = 'allow rwx'
    else:
        data = 'allow r'
        # a watch is a write of the header object; class-read only: no
        # resize, snapshot or lock through the rbd class
        header = 'allow rw class-read' if header_watch else \
            'allow r class-read'
    # ``rbd_data.<id>.``: with the dot, an image whose id starts with
    # this one's is not matched (header and object map names are whole
    # names: create_volume makes no id that is a prefix of another)
    caps = ['%s object_prefix rbd_data.%s.' % (data, image_id),
            '%s object_prefix rbd_header.%s' % (header, image_id),
            # the object map of a single-writer image, kept by its writer
            # (read through the rbd class: an open at a snapshot loads the
            # snapshot's map, which a backup service's read-only key does)
            '%s object_prefix rbd_object_map.%s' % (
                data if mode == 'rw' else 'allow r class-read', image_id),
            'allow r class-read object_prefix rbd_id.%s' % name,
            'allow r class-read object_prefix rbd_info']
    for parent in ancestors:
        caps += ['allow r object_prefix rbd_data.%s.' % parent,
                 'allow r class-read object_prefix rbd_header.%s' % parent]
    if ancestors:
        # librbd opens a parent by its id and looks its name up in the
        # pool's directory: a clone's key can read the names and ids of
        # the pool's images (not their data; doc/source/rbd.rst)
        caps.append('allow r class-read object_prefix rbd_directory')
    return ', '.join(caps)


class RBDDriver(base.VolumeDriver):

    VERSION = '1.0'

    def __init__(self, backend_conf, backend_name, host):
        super().__init__(backend_conf, backend_name, host)
        self.pool = backend_conf.rbd_pool
        self.records = 'cinder_lite.exports.%s' % backend_conf.section
        self.user_prefix = backend_conf.rbd_attachment_user_prefix
        self._cluster = None
        self._ioctx = None
        self._lock = threading.Lock()
        self._setup_error = None

    # -- the cluster ---------------------------------------------------------
    def _connect(self):
        rados = rados_module()
        # a monitor or OSD that does not answer fails the call instead of
        # hanging it: a cut-off past target_drain_timeout fails loudly,
        # as on every target (doc/source/fencing.rst)
        drain = self.conf.target_drain_timeout
        conf = {'rados_mon_op_timeout': '%g' % drain,
                'rados_osd_op_timeout': '%g' % (3 * drain)}
        if self.conf.rbd_keyring_conf:
            conf['keyring'] = self.conf.rbd_keyring_conf
        cluster = rados.Rados(rados_id=self.conf.rbd_user or None,
                              clustername=self.conf.rbd_cluster_name,
                              conffile=self.conf.rbd_ceph_conf,
                              conf=conf)
        try:
            cluster.connect(timeout=self.conf.rados_connect_timeout)
            ioctx = cluster.open_ioctx(self.pool)
        except Exception:
            cluster.shutdown()
            raise
        return cluster, ioctx

    def ioctx(self):
        with self._lock:
            if self._ioctx is None:
                try:
                    self._cluster, self._ioctx = self._connect()
                except Exception as e:
                    raise exception.BackendError(
                        reason='cannot reach pool %s of Ceph cluster %s as '
                               '%s: %s' % (self.pool,
                                           self.conf.rbd_cluster_name,
                                           self.conf.rbd_user or 'admin', e)
                    ) from None
            return self._ioctx

    def do_setup(self):
        try:
            self.ioctx()
        except exception.CinderLiteError as e:
            # volumes fail until the cluster answers; each call connects
            # again
            self._setup_error = e
            LOG.error('RBD backend %s: %s', self.conf.section, e)

    def check_for_setup_error(self):
        self.ioctx()

    def stop(self):
        with self._lock:
            if self._ioctx is not None:
                self._ioctx.close()
                self._cluster.shutdown()
                self._ioctx = self._cluster = None

    def _mon(self, command, inbuf=b'', target=None):
        """A monitor command as rbd_user: its output (JSON decoded when it
        asked for JSON); BackendError when the monitor refuses."""
        self.ioctx()
        kwargs = {'target': target} if target else {}
        rc, out, err = self._cluster.mon_command(json.dumps(command), inbuf,
                                                 **kwargs)
        if rc:
            raise exception.BackendError(
                reason='ceph %s: %s (%d)' % (command['prefix'], err, rc))
        if command.get('format') == 'json':
            # the first value: ``osd blocklist ls`` prints a second list
            # (of address ranges) after the first
            return json.JSONDecoder().raw_decode(out.decode())[0] \
                if out.strip() else None
        return out

    def _image(self, name, read_only=False):
        rbd = rbd_module()
        return rbd.Image(self.ioctx(), name, read_only=read_only)

    def _features(self, volume):
        rbd = rbd_module()
        if volume.get('multiattach'):
            # many writers: no exclusive lock (and so no object map)
            return rbd.RBD_FEATURE_LAYERING
        return (rbd.RBD_FEATURE_LAYERING | rbd.RBD_FEATURE_EXCLUSIVE_LOCK |
                rbd.RBD_FEATURE_OBJECT_MAP | rbd.RBD_FEATURE_FAST_DIFF |
                rbd.RBD_FEATURE_DEEP_FLATTEN)

    def _order(self):
        return int(math.log2(self.conf.rbd_store_chunk_size)) + 20

    # -- volumes -------------------------------------------------------------
    def create_volume(self, volume):
        rbd = rbd_module()
        name = volume_name(volume['id'])

        def make():
            rbd.RBD().create(self.ioctx(), name, volume['size'] * GiB,
                             order=self._order(), old_format=False,
                             features=self._features(volume))
        try:
            self._made_with_unique_id(name, make)
        except rbd.ImageExists:
            LOG.info('%s exists already in pool %s', name, self.pool)
            return False
        LOG.info('created %s (%d GiB) in pool %s', name, volume['size'],
                 self.pool)
        return True

    def _made_with_unique_id(self, name, make, tries=5):
        """``make()`` the image ``name`` until librbd gives it an id that
        is no prefix of another image's id and has none as its prefix: an
        attachment's caps name its image's header and object map by an
        ``object_prefix`` of the id (librbd's ids are hex of varying
        length, so two could nest)."""
        rbd = rbd_module()
        for _ in range(tries):
            make()
            image = self._image(name, read_only=True)
            try:
                mine = image.id()
            finally:
                image.close()
            others = [i['id'] for i in rbd.RBD().list2(self.ioctx())
                      if i['name'] != name]
            if not any(o.startswith(mine) or mine.startswith(o)
                       for o in others):
                return
            LOG.warning('%s got the id %s, which nests with another '
                        'image\'s: made again', name, mine)
            self._remove_image(name)
        raise exception.BackendError(
            reason='no id for %s that nests with no other image\'s after '
                   '%d tries' % (name, tries))

    def rename_volume(self, volume, new_id):
        rbd = rbd_module()
        old, new = volume_name(volume['id']), volume_name(new_id)
        try:
            rbd.RBD().rename(self.ioctx(), old, new)
        except rbd.ImageNotFound:
            # renamed already (a completion run again)
            self._image(new, read_only=True).close()
            return
        LOG.info('renamed %s to %s in pool %s', old, new, self.pool)

    def delete_volume(self, volume):
        rbd = rbd_module()
        name = volume_name(volume['id'])
        try:
            image = self._image(name)
        except rbd.ImageNotFound:
            # gone, or a remove cut short (a volume service killed during
            # it) left its name in the pool's directory: librbd's remove
            # finishes that
            self._remove_image(name)
            self._remove_group(name)
            return
        try:
            parent = self._parent_of(image)
            self._leave_group(image)
            # what was cloned from it becomes independent first: a volume
            # is deleted whatever was made from it
            for snap in list(image.list_snaps()):
                kind = snap.get('namespace', rbd.RBD_SNAP_NAMESPACE_TYPE_USER)
                if kind == rbd.RBD_SNAP_NAMESPACE_TYPE_USER:
                    self._remove_snap(image, snap['name'])
                elif kind != rbd.RBD_SNAP_NAMESPACE_TYPE_GROUP:
                    # in librbd's trash (a removal that failed half-way)
                    image.remove_snap_by_id(snap['id'])
        finally:
            image.close()
        self._remove_image(name)
        self._remove_omap(DEFERRED, [
            sid for sid, value in self._omap(DEFERRED).items()
            if json.loads(value)['image'] == name])
        if parent is not None and parent[1] == CLONE_SNAP % volume['id']:
            self._drop_clone_snap(parent[0], parent[1])
        LOG.info('deleted %s from pool %s', name, self.pool)

    def _remove_image(self, name):
        rbd = rbd_module()
        for attempt in range(30):
            try:
                rbd.RBD().remove(self.ioctx(), name)
                return
            except rbd.ImageNotFound:
                return
            except rbd.ImageBusy:
                # a client that had it open is gone a moment later (its
                # watch times out); a live one keeps it busy
                if attempt == 29:
                    raise exception.BackendError(
                        reason='image %s is still open by a client' % name)
                time.sleep(1)

    @classmethod
    def _parent_of(cls, image):
        spec = cls._parent_spec(image)
        return None if spec is None else (spec['image_name'],
                                          spec['snap_name'])

    def _remove_snap(self, image, snap):
        """Remove ``snap`` of ``image``, flattening its clones first."""
        rbd = rbd_module()
        try:
            protected = image.is_protected_snap(snap)
        except rbd.ImageNotFound:
            return
        if protected:
            image.set_snap(snap)
            try:
                children = list(image.list_children())
            finally:
                image.set_snap(None)
            for _pool, child in children:
                self._flatten(child)
            image.unprotect_snap(snap)
        image.remove_snap(snap)

    def _flatten(self, name):
        started = time.monotonic()
        child = self._image(name)
        try:
            child.flatten()
        finally:
            child.close()
        LOG.info('flattened %s in %.3f s', name, time.monotonic() - started)

    def _drop_clone_snap(self, image_name, snap):
        rbd = rbd_module()
        try:
            image = self._image(image_name)
        except rbd.ImageNotFound:
            return
        try:
            self._remove_snap(image, snap)
        except rbd.ImageNotFound:
            pass
        finally:
            image.close()

    def extend_volume(self, volume, new_size):
        image = self._image(volume_name(volume['id']))
        try:
            if image.size() > new_size * GiB:
                raise exception.CinderLiteError(
                    'refusing to shrink volume %s' % volume['id'])
            image.resize(new_size * GiB)
        finally:
            image.close()

    # -- snapshots and clones ------------------------------------------------
    def _snapshot_image(self, snapshot_id):
        """The image a snapshot was taken of (``cinder_lite.snapshots``
        maps the snapshot to it; a snapshot is named by its own id)."""
        rados = rados_module()
        with rados.ReadOpCtx() as op:
            values, _ = self.ioctx().get_omap_vals_by_keys(op, (snapshot_id,))
            try:
                self.ioctx().operate_read_op(op, 'cinder_lite.snapshots')
            except rados.ObjectNotFound:      # no snapshot made yet
                values = ()
            found = dict(values)
        if snapshot_id not in found:
            raise exception.BackendError(
                reason='snapshot %s is not in pool %s' % (snapshot_id,
                                                          self.pool))
        return found[snapshot_id].decode()

    def _set_omap(self, obj, pairs):
        rados = rados_module()
        with rados.WriteOpCtx() as op:
            self.ioctx().set_omap(op, tuple(pairs),
                                  tuple(v.encode() for v in pairs.values()))
            self.ioctx().operate_write_op(op, obj)

    def _remove_omap(self, obj, keys):
        rados = rados_module()
        with rados.WriteOpCtx() as op:
            self.ioctx().remove_omap_keys(op, tuple(keys))
            try:
                self.ioctx().operate_write_op(op, obj)
            except rados.ObjectNotFound:
                pass

    def _omap(self, obj):
        rados = rados_module()
        out = {}
        start = ''
        while True:
            with rados.ReadOpCtx() as op:
                values, _ = self.ioctx().get_omap_vals(op, start, '', 1000)
                try:
                    self.ioctx().operate_read_op(op, obj)
                except rados.ObjectNotFound:
                    return out
                batch = [(k, v.decode()) for k, v in values]
            out.update(batch)
            if len(batch) < 1000:
                return out
            start = batch[-1][0]

    def create_snapshot(self, snapshot):
        rbd = rbd_module()
        name = volume_name(snapshot['volume_id'])
        snap = snapshot_name(snapshot['id'])
        self._set_omap('cinder_lite.snapshots', {snapshot['id']: name})
        image = self._image(name)
        try:
            if self._group_snap(image, snap) is not None:
                LOG.info('snapshot %s of %s exists already (through its '
                         'group)', snap, name)
                return False
            held = self._locked_by_another(image)
            if not held:
                try:
                    image.create_snap(snap)
                except rbd.ImageExists:
                    LOG.info('snapshot %s of %s exists already', snap, name)
                    if not image.is_protected_snap(snap):
                        image.protect_snap(snap)
                    return False
                except rbd.PermissionError:
                    # a writer took the lock meanwhile: librbd asked it
                    # to make the snapshot, and its key may not
                    held = True
                else:
                    image.protect_snap(snap)
        finally:
            image.close()
        if held:
            self._snapshot_through_group(name, snap)
        else:
            LOG.info('made RBD snapshot %s@%s', name, snap)
        return True

    # -- snapshots of an image another client holds the lock of ----------
    # librbd has the holder of a single-writer image's exclusive lock make
    # its snapshots; a host's key may not allocate snapshot ids (that
    # right is the whole pool's, and would let it remove any image's
    # snapshots: doc/source/rbd.rst).  A group snapshot is made by the volume
    # service's own client instead: it blocks the holder's requests for
    # the lock, asks it for the lock (the holder finishes its writes in
    # flight and hands it over, its next writes wait), makes the snapshot
    # and gives the lock back.  Each such image is the one member of a
    # group of its own name; the Cinder snapshot is the group's snapshot
    # ``snapshot-<id>``, and the image's snapshot of that group snapshot
    # (librbd's name ``.group.<pool>_<group>_<snap>``) is what is read.

    @staticmethod
    def _locked_by_another(image):
        """Whether a client holds the image's exclusive lock (this
        driver's handle never takes it: it does not write)."""
        rbd = rbd_module()
        if not image.features() & rbd.RBD_FEATURE_EXCLUSIVE_LOCK:
            return False
        return bool(list(image.lock_get_owners()))

    @staticmethod
    def _group_snap(image, snap):
        """The image's snapshot of its group's snapshot ``snap`` (a dict
        of ``list_snaps``), or None."""
        rbd = rbd_module()
        for found in image.list_snaps():
            if found.get('namespace') != rbd.RBD_SNAP_NAMESPACE_TYPE_GROUP:
                continue
            group = found.get('group') or {}
            if group.get('name') == image.get_name() and \
                    group.get('snap_name') == snap:
                return found
        return None

    def _group_snap_of(self, name, snap):
        rbd = rbd_module()
        try:
            image = self._image(name, read_only=True)
        except rbd.ImageNotFound:
            return None
        try:
            return self._group_snap(image, snap)
        finally:
            image.close()

    def _snapshot_through_group(self, name, snap):
        rbd = rbd_module()
        started = time.monotonic()
        try:
            rbd.RBD().group_create(self.ioctx(), name)
        except rbd.ObjectExists:
            pass
        group = rbd.Group(self.ioctx(), name)
        image = self._image(name, read_only=True)
        try:
            member = image.group().get('name') == name
        finally:
            image.close()
        if not member:
            group.add_image(self.ioctx(), name)
        try:
            group.create_snap(snap)
        except rbd.ObjectExists:
            LOG.info('group snapshot %s of %s exists already', snap, name)
            return
        LOG.info('made RBD snapshot %s@%s through its group (the lock '
                 'holder handed the lock over) in %.3f s', name, snap,
                 time.monotonic() - started)

    def _leave_group(self, image):
        """Remove the group snapshots of ``image`` and its group (before
        the image is removed)."""
        rbd = rbd_module()
        name = image.get_name()
        if image.group().get('name') != name:
            return
        group = rbd.Group(self.ioctx(), name)
        for snap in list(group.list_snaps()):
            group.remove_snap(snap['name'])
        group.remove_image(self.ioctx(), name)
        self._remove_group(name)

    def _remove_group(self, name):
        rbd = rbd_module()
        try:
            rbd.RBD().group_remove(self.ioctx(), name)
        except rbd.ObjectNotFound:
            pass

    def delete_snapshot(self, snapshot):
        try:
            name = self._snapshot_image(snapshot['id'])
        except exception.BackendError:
            return
        snap = snapshot_name(snapshot['id'])
        waits = self._remove_snapshot_of(name, snap)
        if waits is not None:
            self._set_omap(DEFERRED, {snapshot['id']: json.dumps(
                {'image': name, 'snap_id': waits})})
        self._remove_omap('cinder_lite.snapshots', (snapshot['id'],))
        LOG.info('deleted RBD snapshot %s@%s', name, snap)

    def _remove_snapshot_of(self, name, snap, snap_id=None):
        """Remove the snapshot ``snap`` of the image ``name`` (done when
        either is gone); ``snap_id``: the image's snapshot of that id,
        whatever its namespace now.  Returns None when done, else the id
        of the image's snapshot that must wait: a client holds the
        image's exclusive lock, and librbd has the holder release the
        snapshot's id, which its key may not (librbd leaves the snapshot
        in its trash namespace).  It is removed when that client is cut
        off (``remove_export``) or with the image."""
        rbd = rbd_module()
        try:
            image = self._image(name)
        except rbd.ImageNotFound:
            return None
        try:
            found = self._group_snap(image, snap)
            if found is None:
                found = next((s for s in image.list_snaps()
                              if (s['id'] == snap_id if snap_id is not None
                                  else s['name'] == snap)), None)
            if found is None:
                self._drop_group_snap(name, snap)
                return None
            try:
                kind = found.get('namespace',
                                 rbd.RBD_SNAP_NAMESPACE_TYPE_USER)
                if kind == rbd.RBD_SNAP_NAMESPACE_TYPE_GROUP:
                    rbd.Group(self.ioctx(), name).remove_snap(snap)
                elif kind == rbd.RBD_SNAP_NAMESPACE_TYPE_USER:
                    self._remove_snap(image, found['name'])
                else:
                    # in librbd's trash: a removal that failed half-way
                    image.remove_snap_by_id(found['id'])
                    self._drop_group_snap(name, snap)
            except rbd.ImageNotFound:
                pass
            except rbd.PermissionError:
                if not self._locked_by_another(image):
                    raise
                LOG.info('snapshot %s of %s (id %d): removed once the '
                         'client holding the image\'s lock lets it go',
                         snap, name, found['id'])
                return found['id']
        finally:
            image.close()
        return None

    def _drop_group_snap(self, name, snap):
        """The group's record of its snapshot ``snap`` (its image's
        snapshot gone)."""
        rbd = rbd_module()
        try:
            rbd.Group(self.ioctx(), name).remove_snap(snap)
        except (rbd.ObjectNotFound, rbd.ImageNotFound):
            pass

    def _remove_deferred(self, name):
        """Remove the snapshots of the image ``name`` that waited for the
        client holding its lock (see ``_remove_snapshot_of``)."""
        done = []
        for sid, value in self._omap(DEFERRED).items():
            record = json.loads(value)
            if record['image'] == name and self._remove_snapshot_of(
                    name, snapshot_name(sid), record['snap_id']) is None:
                done.append(sid)
        if done:
            self._remove_omap(DEFERRED, done)
            LOG.info('removed %d snapshot(s) of %s whose removal waited '
                     'for its lock holder', len(done), name)

    def revert_to_snapshot(self, volume, snapshot):
        """``rbd snap rollback``: the image's objects are written back
        from the snapshot, one by one (not atomic: a failure or a crash
        midway leaves a mix, and the volume ``error``; the snapshot stays,
        so a revert can be asked again once its status is reset)."""
        name = volume_name(volume['id'])
        snap = snapshot_name(snapshot['id'])
        started = time.monotonic()
        image = self._image(name)
        try:
            image.rollback_to_snap(snap)
        finally:
            image.close()
        LOG.info('rolled %s back to RBD snapshot %s in %.3f s', name, snap,
                 time.monotonic() - started)

    # -- manage and unmanage ------------------------------------------------
    # An image of the pool becomes a volume's by a rename to its name
    # (librbd refuses to rename onto an image that exists); an RBD snapshot
    # of a volume's image becomes a snapshot's by a rename of the snapshot.
    # Unmanaged, each keeps the name it had.
    def _ref_name(self, ref, own, prefix):
        if ref is None:
            return own
        name = ref.get('source-name')
        if name is None and ref.get('source-id'):
            name = prefix + ref['source-id']
        if not isinstance(name, str) or not name:
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='it names no RBD image')
        return name

    def _image_size(self, name, ref):
        rbd = rbd_module()
        try:
            image = self._image(name, read_only=True)
        except (rbd.ImageNotFound, rbd.InvalidArgument):
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='no image %s in pool %s'
                                         % (name, self.pool)) from None
        try:
            return max(1, -(-image.size() // GiB))
        finally:
            image.close()

    def manage_existing_get_size(self, volume, ref):
        return self._image_size(
            self._ref_name(ref, volume_name(volume['id']), 'volume-'), ref)

    def manage_existing(self, volume, ref):
        rbd = rbd_module()
        own = volume_name(volume['id'])
        name = self._ref_name(ref, own, 'volume-')
        size = self._image_size(name, ref)
        if name != own:
            rbd.RBD().rename(self.ioctx(), name, own)
        image = self._image(own)
        try:
            if image.size() < size * GiB:
                image.resize(size * GiB)
            if volume.get('multiattach'):
                # many writers: no exclusive lock (see _features)
                unwanted = image.features() & (
                    rbd.RBD_FEATURE_FAST_DIFF | rbd.RBD_FEATURE_OBJECT_MAP
                    | rbd.RBD_FEATURE_EXCLUSIVE_LOCK)
                if unwanted:
                    image.update_features(unwanted, False)
        finally:
            image.close()
        LOG.info('managed image %s of pool %s as %s (%d GiB)', name,
                 self.pool, own, size)

    def _snap_of(self, snapshot, ref):
        """(image, snapshot name, size in GiB) of the RBD snapshot ``ref``
        of the volume's image."""
        rbd = rbd_module()
        image_name = volume_name(snapshot['volume_id'])
        snap = self._ref_name(ref, snapshot_name(snapshot['id']),
                              'snapshot-')
        try:
            image = self._image(image_name, read_only=True)
        except rbd.ImageNotFound:
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='the image %s of the volume is '
                                         'missing' % image_name) from None
        try:
            found = {s['name']: s['size'] for s in image.list_snaps()}
        finally:
            image.close()
        if snap not in found or snap.startswith(CLONE_SNAP % ''):
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='image %s has no snapshot %s'
                                         % (image_name, snap))
        return image_name, snap, max(1, -(-found[snap] // GiB))

    def manage_existing_snapshot_get_size(self, snapshot, ref):
        return self._snap_of(snapshot, ref)[2]

    def manage_existing_snapshot(self, snapshot, ref):
        image_name, snap, _size = self._snap_of(snapshot, ref)
        own = snapshot_name(snapshot['id'])
        self._set_omap('cinder_lite.snapshots', {snapshot['id']: image_name})
        image = self._image(image_name)
        try:
            if snap != own:
                image.rename_snap(snap, own)
            if not image.is_protected_snap(own):
                image.protect_snap(own)
        finally:
            image.close()
        LOG.info('managed RBD snapshot %s@%s as %s', image_name, snap, own)

    def unmanage_snapshot(self, snapshot):
        # the RBD snapshot stays; the record of its image goes with the
        # record of the snapshot
        self._remove_omap('cinder_lite.snapshots', (snapshot['id'],))

    def _entry(self, name, size, key, prefix, **extra):
        owner = name[len(prefix):] if name.startswith(prefix) else None
        return dict({'reference': {'source-name': name},
                     'size': max(1, -(-size // GiB)), key: owner,
                     'reason_not_safe': None, 'extra_info': None}, **extra)

    def _images(self):
        rbd = rbd_module()
        for name in rbd.RBD().list(self.ioctx()):
            try:
                image = self._image(name, read_only=True)
            except rbd.ImageNotFound:      # deleted meanwhile
                continue
            try:
                yield name, image.size(), [
                    (s['name'], s['size']) for s in image.list_snaps()]
            finally:
                image.close()

    def list_manageable_volumes(self):
        return [self._entry(name, size, 'volume_id', 'volume-')
                for name, size, _snaps in self._images()]

    def list_manageable_snapshots(self):
        return [self._entry(snap, size, 'snapshot_id', 'snapshot-',
                            source_reference={'source-name': name})
                for name, _size, snaps in self._images()
                for snap, size in snaps
                if not snap.startswith(CLONE_SNAP % '')]

    def _ancestry(self, name):
        """(RBD id of the image ``name``, [RBD ids of the images it is a
        clone of, nearest first])."""
        ids = []
        while name is not None:
            image = self._image(name, read_only=True)
            try:
                ids.append(image.id())
                spec = self._parent_spec(image)
            finally:
                image.close()
            name = spec['image_name'] if spec else None
        return ids[0], ids[1:]

    @staticmethod
    def _parent_spec(image):
        rbd = rbd_module()
        try:
            return image.get_parent_image_spec()
        except rbd.ImageNotFound:
            return None

    def _depth(self, name):
        """How many clone parents ``name`` has above it."""
        depth = 0
        while True:
            image = self._image(name, read_only=True)
            try:
                parent = self._parent_of(image)
            finally:
                image.close()
            if parent is None:
                return depth
            depth += 1
            name = parent[0]

    def _clone(self, volume, parent, snap, flatten, what):
        rbd = rbd_module()
        name = volume_name(volume['id'])

        def make():
            rbd.RBD().clone(self.ioctx(), parent, snap, self.ioctx(), name,
                            features=self._features(volume),
                            order=self._order())
        how = 'a copy-on-write clone of %s@%s' % (parent, snap)
        return self._made_from(volume, make, flatten, what, how)

    def _copy(self, volume, parent, snap, what):
        """Make the volume a copy of the image ``parent`` at its snapshot
        ``snap`` (a dict of ``list_snaps``): librbd clones only from a
        snapshot it can name, and a group snapshot's image snapshot it
        finds by id only."""
        name = volume_name(volume['id'])

        # through a name of its own, renamed when whole: a copy cut short
        # never passes for the volume
        partial = '%s.copying' % name

        def make():
            rbd = rbd_module()
            self._remove_image(partial)
            source = self._image(parent, read_only=True)
            try:
                source.set_snap_by_id(snap['id'])
                source.copy(self.ioctx(), partial,
                            features=self._features(volume),
                            order=self._order())
            finally:
                source.close()
            try:
                rbd.RBD().rename(self.ioctx(), partial, name)
            except rbd.ImageExists:
                self._remove_image(partial)
                raise
        return self._made_from(volume, make, False, what,
                               'a copy of %s@%s' % (parent, snap['name']))

    def _made_from(self, volume, make, flatten, what, how):
        rbd = rbd_module()
        name = volume_name(volume['id'])
        started = time.monotonic()
        try:
            self._made_with_unique_id(name, make)
        except rbd.ImageExists:
            LOG.info('%s exists already in pool %s', name, self.pool)
            return False
        try:
            image = self._image(name)
            try:
                if image.size() < volume['size'] * GiB:
                    image.resize(volume['size'] * GiB)
            finally:
                image.close()
            if flatten or self._depth(name) > self.conf.rbd_max_clone_depth:
                self._flatten(name)
        except Exception:
            # not half made: the create's revert removes only what it
            # knows it made, and this raised before it knew
            LOG.warning('removing %s: its clone did not complete', name)
            self._remove_image(name)
            raise
        LOG.info('made %s by %s in %.3f s', what, how,
                 time.monotonic() - started)
        return True

    def create_volume_from_snapshot(self, volume, snapshot):
        parent = self._snapshot_image(snapshot['id'])
        grouped = self._group_snap_of(parent, snapshot_name(snapshot['id']))
        if grouped is not None:
            return self._copy(volume, parent, grouped, 'volume %s from '
                              'snapshot %s' % (volume['id'], snapshot['id']))
        return self._clone(
            volume, parent, snapshot_name(snapshot['id']),
            self.conf.rbd_flatten_volume_from_snapshot,
            'volume %s from snapshot %s' % (volume['id'], snapshot['id']))

    def create_cloned_volume(self, volume, source):
        rbd = rbd_module()
        parent = volume_name(source['id'])
        snap = CLONE_SNAP % volume['id']
        image = self._image(parent)
        try:
            try:
                image.create_snap(snap)
            except rbd.ImageExists:
                pass
            if not image.is_protected_snap(snap):
                image.protect_snap(snap)
        finally:
            image.close()
        try:
            made = self._clone(volume, parent, snap, False,
                               'volume %s as a clone of %s' % (
                                   volume['id'], source['id']))
        except Exception:
            self._drop_clone_snap(parent, snap)
            raise
        image = self._image(volume_name(volume['id']), read_only=True)
        try:
            still_child = self._parent_of(image) is not None
        finally:
            image.close()
        if not still_child:
            # flattened: the source's snapshot serves nothing
            self._drop_clone_snap(parent, snap)
        return made

    # -- images --------------------------------------------------------------
    def _qemu_target(self, volume):
        """qemu-img's name of the volume's image, as rbd_user."""
        parts = ['rbd:%s/%s' % (self.pool, volume_name(volume['id']))]
        if self.conf.rbd_user:
            parts.append('id=%s' % self.conf.rbd_user)
        if self.conf.rbd_ceph_conf:
            parts.append('conf=%s' % self.conf.rbd_ceph_conf)
        if self.conf.rbd_keyring_conf:
            parts.append('keyring=%s' % self.conf.rbd_keyring_conf)
        return ':'.join(parts)

    def copy_image_to_volume(self, volume, image_path, image_format):
        qemu_img.convert(image_path, image_format, self._qemu_target(volume),
                         'raw', dest_exists=True)

    def clear_volume(self, volume):
        # a discard of the whole image: its objects go, reads are zeros
        image = self._image(volume_name(volume['id']))
        try:
            image.discard(0, image.size())
        finally:
            image.close()

    def sync_volume(self, volume):
        # qemu-img flushed before it exited; a write librbd acknowledged is
        # on the OSDs
        pass

    def copy_volume_to_image(self, volume, image_path, image_format):
        qemu_img.convert(self._qemu_target(volume), 'raw', image_path,
                         image_format)

    # -- capacity ------------------------------------------------------------
    def get_volume_stats(self):
        df = self._mon({'prefix': 'df', 'format': 'json'})
        pool = next((p['stats'] for p in df['pools']
                     if p['name'] == self.pool), {})
        free = pool.get('max_avail', 0)
        used = pool.get('stored', pool.get('bytes_used', 0))
        provisioned = self._provisioned()
        return {
            'volume_backend_name': self.backend_name,
            'vendor_name': 'Open Source',
            'driver_version': self.VERSION,
            'storage_protocol': 'ceph',
            'total_capacity_gb': round((free + used) / GiB, 2),
            'free_capacity_gb': round(free / GiB, 2),
            'provisioned_capacity_gb': round(provisioned / GiB, 2),
            'max_over_subscription_ratio':
                self.conf.max_over_subscription_ratio,
            'reserved_percentage': self.conf.reserved_percentage,
            'thin_provisioning_support': True,
            'thick_provisioning_support': False,
            'multiattach': bool(self.conf.multiattach),
            'shared_targets': False,
            'persistent_reservations': False,
            # the keys and their records live in the pool: any member of
            # a cluster removes an export another (dead) member made
            'cluster_exports': True,
        }

    # the sum of the volumes' sizes is read again at most this often: it
    # opens every volume's image (services report every few seconds)
    PROVISIONED_EVERY = 60.0

    def _provisioned(self):
        rbd = rbd_module()
        now = time.monotonic()
        kept = getattr(self, '_provisioned_at', None)
        if kept is not None and now - kept[0] < self.PROVISIONED_EVERY:
            return kept[1]
        total = 0
        for name in rbd.RBD().list(self.ioctx()):
            if not name.startswith('volume-'):
                continue
            try:
                image = self._image(name, read_only=True)
            except rbd.ImageNotFound:      # deleted meanwhile
                continue
            try:
                total += image.size()
            finally:
                image.close()
        self._provisioned_at = (now, total)
        return total

    def shares_targets(self):
        return False

    # -- attachments: a cephx user each --------------------------------------
    def user(self, attachment_id):
        """The Ceph user (without ``client.``) of an attachment."""
        return '%s.%s' % (self.user_prefix, attachment_id)

    def _records(self):
        return {k: json.loads(v) for k, v in self._omap(self.records).items()}

    def _record(self, attachment_id):
        rados = rados_module()
        with rados.ReadOpCtx() as op:
            values, _ = self.ioctx().get_omap_vals_by_keys(op,
                                                           (attachment_id,))
            try:
                self.ioctx().operate_read_op(op, self.records)
            except rados.ObjectNotFound:
                return None
            found = dict(values)
        value = found.get(attachment_id)
        return json.loads(value) if value is not None else None

    def _add_key(self, record, attachment_id):
        name = record['image']
        image_id, ancestors = self._ancestry(name)
        entity = 'client.%s' % self.user(attachment_id)
        # not mon 'profile rbd': it may blocklist any client (so that
        # librbd can break a dead writer's exclusive lock), and a host
        # must not cut the others or the volume service.  The cut-off
        # breaks the locks of the clients it cuts instead (_break_locks)
        caps = ['mon', 'allow r',
                'osd', key_caps(image_id, name, record['mode'],
                                self.conf.rbd_read_only_keys_watch,
                                ancestors)]
        keyring = credentials.keyring(self.conf).cephx_keyring(
            attachment_id, entity)
        try:
            self._mon({'prefix': 'auth add', 'entity': entity, 'caps': caps},
                      inbuf=keyring.encode())
        except exception.BackendError:
            # made before with other caps (a mode changed by a takeover
            # that failed half-way): made again
            self._mon({'prefix': 'auth del', 'entity': entity})
            self._mon({'prefix': 'auth add', 'entity': entity, 'caps': caps},
                      inbuf=keyring.encode())

    def create_export(self, volume, connector, mode, attachment_id):
        qos.not_applied(volume.get('qos_specs'), 'RBD export of attachment '
                        '%s' % attachment_id, 'librbd limits are the '
                        'client\'s to apply (front-end specs)')
        # ``host``: the member that made it (its exports are the ones it
        # restores and prunes at start; any member may remove it)
        record = {'volume_id': volume['id'], 'mode': mode,
                  'image': volume_name(volume['id']), 'host': self.host}
        # the record first: no key is ever made that nothing accounts for
        self._set_omap(self.records, {attachment_id: json.dumps(record)})
        self._add_key(record, attachment_id)
        LOG.info('attachment %s: Ceph user %s may %s %s', attachment_id,
                 self.user(attachment_id),
                 'read and write' if mode == 'rw' else 'read',
                 record['image'])

    def remove_export(self, volume, connector, attachment_id, shared):
        entity = 'client.%s' % self.user(attachment_id)
        record = self._record(attachment_id)
        started = time.monotonic()
        # (a user that is not there is no error)
        self._mon({'prefix': 'auth del', 'entity': entity})
        cut, others = self._blocklist_clients(entity, record)
        self._barrier()
        if record is not None:
            self._break_locks(record['image'], others)
            try:
                self._remove_deferred(record['image'])
            except Exception as e:   # (the cut-off stands)
                LOG.warning('attachment %s: snapshots of %s whose removal '
                            'waited for it are still there: %s',
                            attachment_id, record['image'], e)
        self._remove_omap(self.records, (attachment_id,))
        if record is None and not cut:
            return None
        drained = time.monotonic() - started
        LOG.info('attachment %s: Ceph user %s removed, %d client(s) '
                 'blocklisted, applied by every placement group of %s in '
                 '%.1f ms', attachment_id, entity, len(cut), self.pool,
                 drained * 1000)
        return drained

    def _break_locks(self, name, others):
        """Release the locks on the image ``name`` (the exclusive lock of
        a single-writer image) held by any client but the live ones of
        other users, ``others``: the next writer takes the lock without
        having to blocklist anyone (its key may not)."""
        rbd = rbd_module()
        try:
            image = self._image(name)
        except rbd.ImageNotFound:
            return
        try:
            lockers = image.list_lockers() or {}
            for client, cookie, address in lockers.get('lockers', ()):
                if address not in others:
                    image.break_lock(client, cookie)
                    LOG.info('broke the lock %s of cut client %s (%s) on '
                             '%s', cookie, client, address, name)
        finally:
            image.close()

    def _mon_names(self):
        """The monitors in quorum (one that is down answers nothing)."""
        return self._mon({'prefix': 'quorum_status',
                          'format': 'json'})['quorum_names']

    def _sessions(self, entities=None):
        """{entity: [client address]} of the monitors' sessions of
        ``entities`` (every librados client keeps one; None: of every
        user)."""
        found = {}
        for mon in self._mon_names():
            for session in self._mon({'prefix': 'sessions',
                                      'format': 'json'}, target=mon) or ():
                name = session.get('entity_name')
                if entities is not None and name not in entities:
                    continue
                for addr in session.get('addrs', {}).get('addrvec', ()):
                    found.setdefault(name, []).append('%s/%d' % (
                        addr['addr'], addr['nonce']))
        return found

    def _image_clients(self, name):
        """Addresses of the clients watching or locking the image."""
        rbd = rbd_module()
        try:
            image = self._image(name, read_only=True)
        except rbd.ImageNotFound:
            return set()
        try:
            found = {w['addr'] for w in image.watchers_list()}
            found.update(address for _, _, address in (
                image.list_lockers() or {}).get('lockers', ()))
        finally:
            image.close()
        return found

    def _blocklisted(self):
        listed = self._mon({'prefix': 'osd blocklist ls', 'format': 'json'})
        return {entry['addr'] for entry in listed or ()}

    def _blocklist_clients(self, entity, record):
        """Blocklist every client instance that may act with ``entity``'s
        key: its monitor sessions, and the watchers and lock holders of
        the attachment's image that no monitor session of another user
        accounts for (a client cut off the monitors may still reach the
        OSDs with its tickets).  Returns (the addresses blocklisted now,
        the addresses of other users' live clients)."""
        sessions = self._sessions()
        mine = set(sessions.get(entity, ()))
        others = {a for name, addrs in sessions.items() if name != entity
                  for a in addrs}
        if record is not None:
            mine |= self._image_clients(record['image']) - others
        addrs = sorted(mine - self._blocklisted()) if mine else []
        if not addrs:
            return addrs, others

        def add(addr):
            self._mon({'prefix': 'osd blocklist', 'blocklistop': 'add',
                       'addr': addr,
                       'expire': float(self.conf.rbd_blocklist_expire)})
        # at once: each entry is a change of the osdmap, and the monitors
        # commit the changes pending together (one Paxos round, about
        # paxos_propose_interval) instead of one round each
        with futures.ThreadPoolExecutor(min(len(addrs), 16)) as pool:
            list(pool.map(add, addrs))
        return addrs, others

    def _barrier(self):
        """Return once every placement group of the pool has applied the
        newest osdmap: this client takes it, then lists a namespace of
        the pool, which asks every placement group's primary, and an OSD
        handles a request only at the map of the client that sent it."""
        self.ioctx()
        self._cluster.wait_for_latest_osdmap()
        barrier = self._cluster.open_ioctx(self.pool)
        try:
            barrier.set_namespace(BARRIER_NAMESPACE)
            for _ in barrier.list_objects():
                pass
        finally:
            barrier.close()

    def list_exports(self):
        """The exports this volume service made: the other members of
        its cluster record theirs in the same omap object, and
        reconcile_exports must not remove those."""
        return [attachment_id for attachment_id, record
                in self._records().items()
                if record.get('host', self.host) == self.host]

    def export_mode(self, attachment_id):
        return (self._record(attachment_id) or {}).get('mode')

    def _has_key(self, attachment_id):
        try:
            self._mon({'prefix': 'auth get',
                       'entity': 'client.%s' % self.user(attachment_id)})
        except exception.BackendError as e:
            if '(-%d)' % ENOENT in str(e.message):
                return False
            raise
        return True

    def ensure_export(self, volume, attachment_id, mode, connection_info,
                      connector):
        if self._has_key(attachment_id):
            have = self.export_mode(attachment_id)
            if have == mode:
                return True
            if have is not None:
                # clients that authenticated with the other mode keep its
                # caps in their tickets: cut them before the key changes
                self.remove_export(volume, connector, attachment_id, False)
        self.create_export(volume, connector, mode, attachment_id)
        return True

    def reach(self, volume_id, attachment_ids, initiators):
        exports = [a for a in attachment_ids if self._has_key(a)]
        entities = {'client.%s' % self.user(a) for a in attachment_ids}
        blocked = self._blocklisted()
        live = [addr for addrs in self._sessions(entities).values()
                for addr in addrs if addr not in blocked]
        return {'exports': exports,
                'acl': ['client.%s' % self.user(a) for a in exports],
                'sessions': len(live),
                'reachable': bool(exports or live)}

    def initialize_connection(self, volume, connector, mode, attachment_id):
        hosts, ports = [], []
        for mon in self._mon({'prefix': 'mon dump', 'format': 'json'})['mons']:
            for addr in mon['public_addrs']['addrvec']:
                if addr['type'] == 'v1':
                    host, _, port = addr['addr'].rpartition(':')
                    hosts.append(host.strip('[]'))
                    ports.append(port)
        data = {
            'name': '%s/%s' % (self.pool, volume_name(volume['id'])),
            'hosts': hosts,
            'ports': ports,
            'cluster_name': self.conf.rbd_cluster_name,
            'auth_enabled': True,
            'auth_username': self.user(attachment_id),
            'secret_type': 'ceph',
            'secret_uuid': self.conf.rbd_secret_uuid,
            'volume_id': volume['id'],
            'discard': self.conf.report_discard_supported,
            # made again for the callers that may connect
            'keyring': credentials.MASK,
            'access_mode': mode,
            'persistent_reservations': False,
        }
        return {'driver_volume_type': 'rbd', 'data': data}

    def terminate_connection(self, volume, connector, attachment_id):
        return None

    def create_backup_export(self, volume, snapshot_id, connector, mode,
                             export_id):
        # a key of the backup's own on the image (its snapshots are in the
        # same objects); the backup service opens the snapshot by name
        self.create_export(volume, connector, mode, export_id)
        info = self.initialize_connection(volume, connector, mode, export_id)
        if snapshot_id:
            snap = snapshot_name(snapshot_id)
            grouped = self._group_snap_of(volume_name(volume['id']), snap)
            # (the connector finds a group snapshot's image snapshot by
            # its name among the image's snapshots)
            info['data']['snapshot_name'] = grouped['name'] if grouped \
                else snap
        return info

    # -- backup snapshots of differential backups -----------------------------
    # (``backup.<backup id>.snap.<timestamp>``, Cinder's Ceph backup
    # names: not protected, never cloned; delete_volume removes them with
    # the image's other snapshots)
    def create_backup_snapshot(self, volume, name):
        rbd = rbd_module()
        if not name.startswith(BACKUP_SNAP_PREFIX):
            raise exception.InvalidInput(
                reason='%r is not the name of a backup snapshot' % name)
        image = self._image(volume_name(volume['id']))
        try:
            if self._locked_by_another(image):
                # a host writes it and holds its exclusive lock: librbd
                # would ask that host to make the snapshot, which its key
                # may not; the backup takes a temporary snapshot instead,
                # made with the lock handed over (create_snapshot)
                LOG.info('no backup snapshot %s of volume %s: a host '
                         'holds its exclusive lock', name, volume['id'])
                return False
            image.create_snap(name)
        except rbd.ImageExists:
            LOG.info('backup snapshot %s of volume %s exists already',
                     name, volume['id'])
        except rbd.PermissionError:
            # a host took the lock meanwhile
            LOG.info('no backup snapshot %s of volume %s: a host took '
                     'its exclusive lock', name, volume['id'])
            return False
        finally:
            image.close()
        LOG.info('made RBD backup snapshot %s@%s',
                 volume_name(volume['id']), name)
        return True

    def remove_backup_snapshots(self, volume, unwanted):
        rbd = rbd_module()
        try:
            image = self._image(volume_name(volume['id']))
        except rbd.ImageNotFound:
            return
        try:
            for snap in list(image.list_snaps()):
                name = snap['name']
                if name.startswith(BACKUP_SNAP_PREFIX) and unwanted(name):
                    try:
                        image.remove_snap(name)
                    except rbd.ImageNotFound:
                        continue
                    LOG.info('removed RBD backup snapshot %s@%s',
                             volume_name(volume['id']), name)
        finally:
            image.close()
