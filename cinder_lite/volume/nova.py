"""Telling Nova what happened to a volume its servers use, through Nova's
server external events API (``POST /os-server-external-events``), as
Cinder does: after an attached volume grew, ``volume-extended`` for each
server attached to it, so the hypervisor resizes the guest's disk; after
a reserved volume was re-imaged (os-reimage, Nova rebuilding a server
booted from it), ``volume-reimaged``, which the rebuild waits for.

It also asks Nova to swap an attached volume's disk for the temporary
volume of its migration (``PUT /servers/{id}/os-volume_attachments/
{volume_id}``, as Cinder's generic migration of an in-use volume);
Nova copies the data on its host and calls ``os-migrate_volume_
completion`` back.

Credentials and the endpoint are the ``[nova]`` options (a keystoneauth
session, auth plugin and adapter; the endpoint from the catalog unless
``endpoint_override`` names one).  With no ``auth_type`` there is no Nova
to tell and nothing is sent.  A failure to tell Nova never fails the
extend: the volume did grow; it is logged."""
import logging
import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from cinder_lite.conf import nova as nova_conf

LOG = logging.getLogger(__name__)

# the first compute API microversion that knows volume-extended
VOLUME_EXTENDED_VERSION = '2.51'
# ... and volume-reimaged
VOLUME_REIMAGED_VERSION = '2.93'
# the swap of a server's volume: Cinder asks it at the base version (its
# only behaviour before 2.85, where the same PUT also updates a BDM)
SWAP_VERSION = '2.1'


class SwapRefused(Exception):
    """Nova did not take the swap of a volume (``message`` says why)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class NovaNotifier:

    def __init__(self, conf):
        self.conf = conf
        self._adapter = None
        self._lock = threading.Lock()

    @property
    def configured(self):
        return bool(self.conf[nova_conf.GROUP].auth_type)

    def _client(self):
        with self._lock:
            if self._adapter is None:
                group = nova_conf.GROUP
                auth = ks_loading.load_auth_from_conf_options(self.conf,
                                                              group)
                session = ks_loading.load_session_from_conf_options(
                    self.conf, group, auth=auth)
                self._adapter = ks_loading.load_adapter_from_conf_options(
                    self.conf, group, session=session, auth=auth)
            return self._adapter

    def volume_extended(self, volume_id, instance_uuids, request_id=None):
        """Send ``volume-extended`` for ``volume_id`` to each server of
        ``instance_uuids``; returns the servers Nova accepted it for."""
        return self._send('volume-extended', VOLUME_EXTENDED_VERSION,
                          'grew', volume_id, instance_uuids, request_id)

    def volume_reimaged(self, volume_id, instance_uuids, request_id=None):
        """``volume-reimaged`` for ``volume_id`` to each server of
        ``instance_uuids``, as ``volume_extended``."""
        return self._send('volume-reimaged', VOLUME_REIMAGED_VERSION,
                          'was re-imaged', volume_id, instance_uuids,
                          request_id)

    def swap_volume(self, instance_uuid, volume_id, new_volume_id,
                    request_id=None):
        """Ask Nova to move server ``instance_uuid`` from ``volume_id``
        to ``new_volume_id`` (the temporary volume of a migration).
        Nova answers 202 once its API reserved the new volume and cast
        the swap to the compute host; SwapRefused otherwise (also when
        no Nova is configured)."""
        if not self.configured:
            raise SwapRefused('no [nova] auth_type is set: there is no '
                              'Nova to swap the attached disk')
        headers = {'X-OpenStack-Request-ID': request_id} if request_id \
            else None
        try:
            resp = self._client().put(
                '/servers/%s/os-volume_attachments/%s' % (instance_uuid,
                                                          volume_id),
                json={'volumeAttachment': {'volumeId': new_volume_id}},
                microversion=SWAP_VERSION, headers=headers,
                raise_exc=False)
        except (ks_exc.ClientException, ValueError) as e:
            raise SwapRefused('Nova could not be asked: %s' % e)
        if resp.status_code != 202:
            raise SwapRefused('Nova refused the swap of server %s\'s '
                              'volume: %s %s' % (instance_uuid,
                                                 resp.status_code,
                                                 _fault(resp)))
        LOG.info('volume %s: Nova swaps server %s to %s', volume_id,
                 instance_uuid, new_volume_id)

    def _send(self, name, version, what, volume_id, instance_uuids,
              request_id):
        servers = sorted({u for u in instance_uuids if u})
        if not servers:
            return []
        if not self.configured:
            LOG.info('volume %s %s while attached to %d server(s); no '
                     '[nova] auth_type is set, so Nova is not told',
                     volume_id, what, len(servers))
            return []
        events = [{'name': name, 'server_uuid': server,
                   'tag': volume_id} for server in servers]
        headers = {'X-OpenStack-Request-ID': request_id} if request_id \
            else None
        try:
            resp = self._client().post(
                '/os-server-external-events', json={'events': events},
                microversion=version, headers=headers,
                raise_exc=False)
        except (ks_exc.ClientException, ValueError) as e:
            LOG.warning('volume %s %s; telling Nova failed: %s',
                        volume_id, what, e)
            return []
        if resp.status_code not in (200, 207):
            LOG.warning('volume %s %s; Nova refused the %s events: %s %s',
                        volume_id, what, name, resp.status_code,
                        resp.text[:300])
            return []
        answered = resp.json().get('events', [])
        taken = [e['server_uuid'] for e in answered if e.get('code') == 200]
        refused = ['%s (%s)' % (e['server_uuid'], e.get('code'))
                   for e in answered if e.get('code') != 200]
        # 404: Nova does not know the server, or the [nova] user may not
        # see it (Nova looks servers up in every project only for admins)
        (LOG.warning if refused else LOG.info)(
            'volume %s %s; Nova told for server(s) %s%s', volume_id, what,
            ', '.join(taken) or 'none',
            '; refused for %s' % ', '.join(refused) if refused else '')
        return taken


def _fault(resp):
    """The message of a Nova error body (``{"badRequest": {"message":
    ...}}``), else the start of the body."""
    try:
        body = resp.json()
        (fault,) = body.values()
        return fault['message']
    except (ValueError, TypeError, KeyError, AttributeError):
        return resp.text[:300]
