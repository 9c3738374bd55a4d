"""Telling Nova what happened to a volume its servers use, through Nova's
server external events API (``POST /os-server-external-events``), as
Cinder does: after an attached volume grew, ``volume-extended`` for each
server attached to it, so the hypervisor resizes the guest's disk; after
a reserved volume was re-imaged (os-reimage, Nova rebuilding a server
booted from it), ``volume-reimaged``, which the rebuild waits for.

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
