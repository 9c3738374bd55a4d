"""The service layer behind ``/os-volume-transfer`` and
``/volume-transfers``: offering a volume to another project, and
accepting or withdrawing the offer.

A transfer is made for an ``available`` volume without attachments,
which becomes ``awaiting-transfer``: nothing else may be done to it
(attach, extend, retype, delete) until the transfer is accepted, or
deleted, which makes it ``available`` again.  The auth key handed to the
creator once is kept only as an HMAC keyed by a random salt, as Cinder
keeps it.  Accepting moves the volume and what it counts against quota
(volumes, gigabytes and their per-type forms) to the accepting project in
one transaction: the accepting project's limits are checked there, with
its usage rows locked, and of two requests ending one transfer exactly
one succeeds.
"""
import hashlib
import hmac
import logging
import secrets
import uuid

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import transfers as db_transfers
from cinder_lite.db import volumes as db_volumes

LOG = logging.getLogger(__name__)

# Cinder's defaults (volume_transfer_salt_length, _key_length): hex
# digits, which the recipient can type
SALT_LENGTH = 8
KEY_LENGTH = 16


def _random_hex(length):
    return secrets.token_hex((length + 1) // 2)[:length]


def crypt_hash(salt, auth_key):
    """HMAC-SHA1 of the auth key keyed by the salt, as Cinder stores it
    (an integer key counts as its decimal string)."""
    return hmac.new(str(salt).encode(), str(auth_key).encode(),
                    hashlib.sha1).hexdigest()


def as_dict(transfer, auth_key=None):
    found = {'id': transfer.id, 'volume_id': transfer.volume_id,
             'name': transfer.name, 'created_at': transfer.created_at,
             'no_snapshots': transfer.no_snapshots,
             'source_project_id': transfer.source_project_id,
             'destination_project_id': transfer.destination_project_id,
             'accepted': transfer.accepted}
    if auth_key is not None:
        found['auth_key'] = auth_key
    return found


class TransferService:

    def __init__(self, conf):
        self.conf = conf

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    def create(self, context, volume_id, name, no_snapshots=False):
        """Offer a volume; returns the transfer with its auth key (the
        only time the key is shown)."""
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id,
                                    self._scope(context))
        policy.authorize(context, policy.TRANSFER_CREATE,
                         {'project_id': volume.project_id})
        salt = _random_hex(SALT_LENGTH)
        auth_key = _random_hex(KEY_LENGTH)
        transfer_id = str(uuid.uuid4())

        # (run again from its start on a deadlock, as an attachment of the
        # volume through another Galera node makes it)
        def _offer(session):
            # the volume's row lock: no attachment is made between the
            # check and the status change
            try:
                vol = db_attachments.lock_volume(
                    session, volume_id, allowed=(states.AVAILABLE,))
            except exception.InvalidVolume:
                raise exception.InvalidVolume(
                    reason='status must be available, but the status of '
                           'volume %s is %s' % (
                               volume_id, db_volumes.get(
                                   session, volume_id).status)) from None
            live = db_attachments.live_for_volume(session, volume_id)
            if live:
                raise exception.InvalidVolume(
                    reason='volume %s still has attachments (%s); delete '
                           'them first' % (volume_id, ', '.join(
                               '%s %s' % (a.id, a.attach_status)
                               for a in live)))
            if not no_snapshots:
                # they go with the volume, as in Cinder
                for snapshot in db_snapshots.of_volume(session, volume_id):
                    if snapshot.status != states.AVAILABLE:
                        raise exception.InvalidSnapshot(
                            reason='snapshot: %s status must be available'
                                   % snapshot.id)
            db_volumes.transition(session, volume_id, 'offer')
            transfer = db_transfers.create(session, {
                'id': transfer_id, 'volume_id': volume_id, 'name': name,
                'salt': salt, 'crypt_hash': crypt_hash(salt, auth_key),
                'no_snapshots': bool(no_snapshots),
                'source_project_id': vol.project_id,
                'accepted': False, 'deleted': False})
            return as_dict(transfer, auth_key)
        created = db_api.run_writer(_offer)
        LOG.info('volume %s: available -> awaiting-transfer (transfer %s)',
                 volume_id, transfer_id)
        return created

    def get(self, context, transfer_id):
        policy.authorize(context, policy.TRANSFER_GET)
        with db_api.reader() as session:
            return as_dict(db_transfers.get(session, transfer_id,
                                            self._scope(context)))

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False):
        """The caller's project's transfers; an admin's ``all_tenants``:
        every project's (as Cinder, not a separate rule)."""
        policy.authorize(context, policy.TRANSFER_GET_ALL)
        project = None if (context.is_admin and all_tenants) \
            else context.project_id
        with db_api.reader() as session:
            return [as_dict(t) for t in db_transfers.list_transfers(
                session, project, filters, sort_keys, sort_dirs, limit,
                marker)]

    def delete(self, context, transfer_id):
        """Withdraw the offer: the volume is ``available`` again (left
        alone when an operator changed its status meanwhile, as in
        Cinder)."""
        with db_api.reader() as session:
            transfer = db_transfers.get(session, transfer_id,
                                        self._scope(context))
        policy.authorize(context, policy.TRANSFER_DELETE,
                         {'project_id': transfer.source_project_id})

        def _end(session):
            db_transfers.end(session, transfer_id, accepted=False)
            try:
                db_volumes.transition(session, transfer.volume_id,
                                      'transfer_ended')
            except (exception.InvalidTransition,
                    exception.VolumeNotFound) as e:
                return e
            return None
        left_alone = db_api.run_writer(_end)
        if left_alone is not None:
            LOG.error('transfer %s deleted; its volume %s was left alone: '
                      '%s', transfer_id, transfer.volume_id, left_alone)
            return
        LOG.info('volume %s: awaiting-transfer -> available (transfer %s '
                 'deleted)', transfer.volume_id, transfer_id)

    def accept(self, context, transfer_id, auth_key):
        """Take the volume into the caller's project; returns the
        transfer as it was."""
        policy.authorize(context, policy.TRANSFER_ACCEPT)
        with db_api.reader() as session:
            transfer = db_transfers.get(session, transfer_id)
        if not hmac.compare_digest(crypt_hash(transfer.salt, auth_key),
                                   transfer.crypt_hash):
            LOG.error('attempt to accept transfer %s with an invalid auth '
                      'key', transfer_id)
            raise exception.InvalidAuthKey(
                reason='Attempt to transfer %s with invalid auth key.'
                       % transfer_id)
        volume_id = transfer.volume_id

        # (run again from its start on a deadlock, as another accept or
        # a delete of the transfer through another Galera node makes it)
        def _take(session):
            # the transfer first: of two accepts (or an accept and a
            # delete) one ends it, the other finds it gone
            db_transfers.end(session, transfer_id, accepted=True,
                             destination_project_id=context.project_id)
            try:
                vol = db_attachments.lock_volume(
                    session, volume_id, allowed=(states.AWAITING_TRANSFER,))
            except exception.InvalidVolume:
                raise exception.InvalidVolume(
                    reason='Transfer %s: Volume id %s expected in '
                           'awaiting-transfer state.' % (
                               transfer_id, volume_id)) from None
            donor = vol.project_id
            check = quota.Checker(self.conf, session, size=vol.size)
            db_volumes.give(session, volume_id, context.project_id,
                            context.user_id, check)
            if not transfer.no_snapshots:
                # the volume's snapshots and what they count go with it,
                # checked against the new project's quota
                db_snapshots.give(session, volume_id, donor,
                                  context.project_id, context.user_id, check)
            db_transfers.end_for_volume(session, volume_id, keep=transfer_id)
            return donor
        donor = quota.ensuring_rows(lambda: db_api.run_writer(_take))
        LOG.info('volume %s: awaiting-transfer -> available, project %s -> '
                 '%s (transfer %s accepted)', volume_id, donor,
                 context.project_id, transfer_id)
        return {'id': transfer_id, 'name': transfer.name,
                'volume_id': volume_id}
