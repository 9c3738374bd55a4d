"""What the fuzzer knows of the server's objects: believed after each quiet
period, updated from answers during a burst."""
import threading

from tests.stateful.world import DEFAULT_TYPE
from tests.stateful.world import TYPE_KINDS


class Model:
    """What the fuzzer knows: refreshed from the server after each burst,
    and updated from answers during one.  Thread-safe."""

    def __init__(self):
        self.lock = threading.RLock()
        self.types = {}          # name -> id of the live type
        self.type_kind = {}      # id -> kind, for every type ever seen
        self.type_names = {}     # id -> name, for every type ever seen
        self.volumes = {}        # id -> dict(slot, size, type_id, status...)
        self.attachments = {}    # id -> dict(volume_id, status, instance)
        self.history = {}        # volume id -> dict(slot, retyped, reset)
        self.snapshots = {}      # id -> volume id
        self.backups = {}        # id -> volume id
        self.pools = []          # the backends' pool names (migrations)

    @staticmethod
    def kind_of_name(name):
        if name == DEFAULT_TYPE:
            return 'plain'
        for kind in TYPE_KINDS:
            if name.startswith('fz-%s-' % kind) and \
                    name[len('fz-%s-' % kind):].isdigit():
                return kind
        return None

    def type_id(self, tslot):
        with self.lock:
            return self.types.get(tslot)

    def volume_ids(self, slot):
        with self.lock:
            return sorted(v for v, d in self.volumes.items()
                          if d['slot'] == slot)

    def volume(self, slot, pick):
        ids = self.volume_ids(slot)
        return ids[int(pick * len(ids))] if ids else None

    def attachment_of(self, volume_id, pick):
        with self.lock:
            ids = sorted(a for a, d in self.attachments.items()
                         if d['volume_id'] == volume_id)
        return ids[int(pick * len(ids))] if ids else None

    def note(self, volume_id, **flags):
        with self.lock:
            entry = self.history.setdefault(volume_id, {
                'slot': None, 'retyped': False, 'reset': False,
                'ever_reset': False, 'multiattach': None, 'type_id': None})
            entry.update(flags)

    def add_volume(self, view, slot):
        with self.lock:
            self.volumes[view['id']] = {
                'slot': slot, 'size': view['size'], 'status': view['status'],
                'type_id': view.get('volume_type_id'),
                'host': view.get('os-vol-host-attr:host')}
            self.note(view['id'], slot=slot,
                      multiattach=view.get('multiattach'),
                      type_id=view.get('volume_type_id'))

    def drop_volume(self, volume_id):
        with self.lock:
            self.volumes.pop(volume_id, None)

    def add_snapshot(self, view):
        with self.lock:
            self.snapshots[view['id']] = view['volume_id']

    def drop_snapshot(self, snapshot_id):
        with self.lock:
            self.snapshots.pop(snapshot_id, None)

    def snapshot_of(self, volume_id, pick):
        with self.lock:
            ids = sorted(s for s, v in self.snapshots.items()
                         if v == volume_id)
        return ids[int(pick * len(ids))] if ids else None

    def add_backup(self, view):
        with self.lock:
            self.backups[view['id']] = view.get('volume_id')

    def drop_backup(self, backup_id):
        with self.lock:
            self.backups.pop(backup_id, None)

    def backup_of(self, volume_id, pick):
        with self.lock:
            ids = sorted(b for b, v in self.backups.items()
                         if v == volume_id)
        return ids[int(pick * len(ids))] if ids else None

    def add_attachment(self, view):
        with self.lock:
            self.attachments[view['id']] = {
                'volume_id': view['volume_id'], 'status': view['status'],
                'instance': view.get('instance')}

    def drop_attachment(self, attachment_id):
        with self.lock:
            self.attachments.pop(attachment_id, None)

    def refresh(self, snap):
        """Believe the server: after a quiet period its state is the
        truth."""
        with self.lock:
            self.types = {}
            for t in snap['types'].values():
                self.types[t['name']] = t['id']
                self.type_kind[t['id']] = self.kind_of_name(t['name'])
                self.type_names[t['id']] = t['name']
            self.volumes = {}
            for v in snap['volumes'].values():
                if v.get('name') and v['name'].startswith('fz-vol-'):
                    slot = int(v['name'][len('fz-vol-'):])
                else:
                    slot = None
                self.add_volume(v, slot)
            self.attachments = {}
            for a in snap['attachments'].values():
                self.add_attachment(a)
            self.snapshots = {}
            for sn in snap.get('snapshots', {}).values():
                self.add_snapshot(sn)
            self.backups = {}
            for b in snap.get('backups', {}).values():
                self.add_backup(b)
