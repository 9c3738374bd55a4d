"""Cinder's personas over every route: a reader, a member and an admin of
the project, a member of another project and a made-up role each get
what Cinder gives them (cinder/policies, since Xena).

``ROUTES`` lists every path and method of cinder_lite.api.router (a test
fails when the router has one the table lacks) with, per persona, the
status it must get.  Resources are the project's, made by its admin; a
request that changes or ends one gets a fresh one per persona.  In
noauth roles come as sent: the member sends only ``member`` and the admin
only ``admin``, so neither reads through a reader role Keystone would
have added."""
import collections
import uuid

import pytest

from cinder_lite.api import router
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from tests.harness.attach import connector
from tests.harness import backups as bk
from tests.harness import groups as gh
from tests.harness import stack as stack_mod
from tests.harness import util

R, M, A, O, F = 'reader', 'member', 'admin', 'other-project', 'foo-role'
PERSONAS = {
    R: dict(user='r', roles='reader'),
    M: dict(user='m', roles='member'),
    A: dict(user='a', roles='admin'),
    O: dict(project=stack_mod.OTHER_PROJECT, user='o',
            roles='member,reader'),
    F: dict(user='f', roles='foo'),
}


def _codes(reader, member, admin, other, foo):
    return {R: reader, M: member, A: admin, O: other, F: foo}


# a project's resource by id: readers read, another project does not
# find it, a made-up role is refused
READ = _codes(200, 200, 200, 404, 403)
# a list or a project-wide read: another project gets its own
LIST = _codes(200, 200, 200, 200, 403)
# another project's quotas are refused outright (the target is the
# project named in the URL, not a resource looked up in the caller's)
QUOTA_READ = _codes(200, 200, 200, 403, 403)
# open to anyone authenticated, as in Cinder (no policy)
OPEN = _codes(200, 200, 200, 200, 200)


def WRITE(code):
    """A change of the project's resource: members and admins."""
    return _codes(403, code, code, 404, 403)


def CREATE(code):
    """A new resource in the caller's own project."""
    return _codes(403, code, code, code, 403)


def ADMIN(code, other=403):
    """An admin action."""
    return _codes(403, 403, code, other, 403)


# another project's member takes a transfer into its project
UNLIMITED = {'volumes': -1, 'gigabytes': -1, 'snapshots': -1,
             'backups': -1, 'backup_gigabytes': -1, 'groups': -1}
ACCEPT = _codes(403, 202, 202, 202, 403)

Route = collections.namedtuple('Route', 'method path make expect')


class World:
    """The project's resources, made by its admin."""

    def __init__(self, s):
        self.s = s
        self.admin = s.client()
        # a fresh volume per persona and request: more than the defaults
        self.ok(self.admin.put('/os-quota-sets/%s' % stack_mod.PROJECT,
                               json={'quota_set': UNLIMITED}))
        self.type = self.admin.create_type('personas-type', {'k': 'v'})
        self.private_type = self.fresh_private_type()
        self.alias = self.admin.get('/extensions').json()[
            'extensions'][0]['alias']
        self.volume = self.admin.create_volume(name='personas')['id']
        self.admin.post('/volumes/%s/metadata' % self.volume,
                        json={'metadata': {'k': 'v'}})
        self.snapshot = self.fresh_snapshot()
        self.attachment = self.fresh_attachment()
        self.transfer = self.fresh_transfer()[0]
        self.qos = self.fresh_qos()
        host = self.admin.get('/os-services').json()['services']
        self.volume_host = [x['host'] for x in host
                            if x['binary'] == 'cinder-volume'][0]
        self.message = self.fresh_message()
        self.backup = self.fresh_backup()
        self.record = self.deleted_backup_record()
        self.group_type = self.fresh_group_type()
        self.group_vtype = self.fresh_type()
        self.group = self.fresh_group()
        self.admin.create_volume(volume_type=self.group_vtype,
                                 group_id=self.group)
        self.group_snapshot = self.fresh_group_snapshot()

    def ok(self, resp, code=None):
        assert resp.status_code == (code or resp.status_code) and \
            resp.status_code < 300, resp.text
        return resp.json() if resp.content else None

    def fresh_volume(self):
        return self.admin.create_volume()['id']

    def fresh_snapshot(self):
        snap = self.ok(self.admin.post('/snapshots', json={'snapshot': {
            'volume_id': self.volume, 'force': True}}))['snapshot']
        util.wait_for(lambda: self.admin.get('/snapshots/%s' % snap['id'])
                      .json()['snapshot']['status'] == 'available',
                      what='snapshot available')
        self.ok(self.admin.put('/snapshots/%s/metadata' % snap['id'],
                               json={'metadata': {'k': 'v'}}))
        return snap['id']

    def fresh_backup(self):
        return bk.backup(self.admin, self.fresh_volume())['id']

    def deleted_backup_record(self):
        """The export of a backup since deleted: importable once."""
        bid = self.fresh_backup()
        record = self.ok(self.admin.get('/backups/%s/export_record' % bid))
        self.ok(self.admin.delete('/backups/%s' % bid))
        bk.wait_gone(self.admin, bid)
        return record

    def fresh_attachment(self):
        return self.ok(self.admin.post('/attachments', json={'attachment': {
            'volume_uuid': self.fresh_volume(),
            'instance_uuid': str(uuid.uuid4())}}))['attachment']['id']

    def fresh_transfer(self):
        transfer = self.ok(self.admin.post('/volume-transfers', json={
            'transfer': {'volume_id': self.fresh_volume()}}))['transfer']
        return transfer['id'], transfer['auth_key']

    def fresh_type(self):
        return self.admin.create_type()['id']

    def fresh_private_type(self):
        return self.admin.create_type(is_public=False)['id']

    def fresh_message(self):
        # (the row a failed schedule leaves: the test makes no failure)
        with db_api.writer() as session:
            db_messages.create(session, stack_mod.PROJECT, 'VOLUME_000001',
                               'schedule allocate volume: personas',
                               resource_type='VOLUME',
                               resource_uuid=self.volume)
        return self.admin.get('/messages?sort=created_at:desc').json()[
            'messages'][0]['id']

    def fresh_qos(self):
        return self.ok(self.admin.post('/qos-specs', json={'qos_specs': {
            'name': 'qos-%s' % uuid.uuid4().hex,
            'read_iops_sec': '100'}}))['qos_specs']['id']

    def fresh_group_type(self):
        gtype = gh.create_group_type(self.admin, specs={'vendor:k': 'v'})
        return gtype['id']

    def fresh_group(self):
        return gh.create_group(self.admin, self.group_type,
                               [self.group_vtype])['id']

    def fresh_group_snapshot(self):
        return gh.create_group_snapshot(self.admin, self.group)['id']

    def project_ids(self):
        """Ids of the project's resources another project must not see."""
        return (self.volume, self.snapshot, self.attachment, self.transfer,
                self.message, self.backup, self.group, self.group_snapshot)


def _path(template, **kw):
    return lambda w: (template.format(**kw, w=w), None)


def _with(template, body):
    return lambda w: (template.format(w=w), body)


def _fresh(template, kind, body=None):
    def make(w):
        made = getattr(w, 'fresh_' + kind)()
        return template.format(id=made, w=w), body
    return make


def _accept(template):
    def make(w):
        tid, key = w.fresh_transfer()
        return template.format(id=tid), {'accept': {'auth_key': key}}
    return make


def _manage_snapshot(path):
    return lambda w: (path, {'snapshot': {
        'volume_id': w.volume, 'ref': {'source-name': 'personas-none'}}})


def _fresh_volume_action(body):
    return _fresh('/volumes/{id}/action', 'volume', body)


ROUTES = [
    # volumes
    Route('GET', '/volumes', _path('/volumes'), LIST),
    Route('POST', '/volumes', _with('/volumes', {'volume': {'size': 1}}),
          CREATE(202)),
    Route('GET', '/volumes/detail', _path('/volumes/detail'), LIST),
    Route('GET', '/volumes/summary', _path('/volumes/summary'), LIST),
    Route('GET', '/volumes/{volume_id}', _path('/volumes/{w.volume}'), READ),
    Route('PUT', '/volumes/{volume_id}', _with(
        '/volumes/{w.volume}', {'volume': {'description': 'seen'}}),
        WRITE(200)),
    Route('DELETE', '/volumes/{volume_id}', _fresh('/volumes/{id}',
                                                   'volume'), WRITE(202)),
    Route('POST', '/volumes/{volume_id}/action', _with(
        '/volumes/{w.volume}/action', {'os-show_image_metadata': None}),
        READ),
    Route('POST', '/volumes/{volume_id}/action', _with(
        '/volumes/{w.volume}/action',
        {'os-update_readonly_flag': {'readonly': False}}), WRITE(202)),
    Route('POST', '/volumes/{volume_id}/action', _fresh_volume_action(
        {'os-extend': {'new_size': 2}}), WRITE(202)),
    Route('POST', '/volumes/{volume_id}/action', _fresh_volume_action(
        {'os-reserve': None}), WRITE(202)),
    Route('POST', '/volumes/{volume_id}/action', _with(
        '/volumes/{w.volume}/action',
        {'os-reset_status': {'status': 'available'}}), ADMIN(202, 404)),
    Route('POST', '/volumes/{volume_id}/action', _fresh_volume_action(
        {'os-force_delete': None}), ADMIN(202, 404)),
    # volume metadata
    Route('GET', '/volumes/{volume_id}/metadata',
          _path('/volumes/{w.volume}/metadata'), READ),
    Route('POST', '/volumes/{volume_id}/metadata', _with(
        '/volumes/{w.volume}/metadata', {'metadata': {'k': 'v'}}),
        WRITE(200)),
    Route('PUT', '/volumes/{volume_id}/metadata', _with(
        '/volumes/{w.volume}/metadata', {'metadata': {'k': 'v'}}),
        WRITE(200)),
    Route('GET', '/volumes/{volume_id}/metadata/{key}',
          _path('/volumes/{w.volume}/metadata/k'), READ),
    Route('PUT', '/volumes/{volume_id}/metadata/{key}', _with(
        '/volumes/{w.volume}/metadata/k', {'meta': {'k': 'v'}}),
        WRITE(200)),
    Route('DELETE', '/volumes/{volume_id}/metadata/{key}', _with(
        '/volumes/{w.volume}/metadata/gone', None), WRITE(404)),
    # snapshots
    Route('GET', '/snapshots', _path('/snapshots'), LIST),
    Route('POST', '/snapshots', _with('/snapshots', {'snapshot': {
        'volume_id': '{w.volume}', 'force': True}}), WRITE(202)),
    Route('GET', '/snapshots/detail', _path('/snapshots/detail'), LIST),
    Route('GET', '/snapshots/{snapshot_id}',
          _path('/snapshots/{w.snapshot}'), READ),
    Route('PUT', '/snapshots/{snapshot_id}', _with(
        '/snapshots/{w.snapshot}', {'snapshot': {'description': 'seen'}}),
        WRITE(200)),
    Route('DELETE', '/snapshots/{snapshot_id}',
          _fresh('/snapshots/{id}', 'snapshot'), WRITE(202)),
    Route('POST', '/snapshots/{snapshot_id}/action', _with(
        '/snapshots/{w.snapshot}/action',
        {'os-reset_status': {'status': 'available'}}), ADMIN(202, 404)),
    Route('GET', '/snapshots/{snapshot_id}/metadata',
          _path('/snapshots/{w.snapshot}/metadata'), READ),
    Route('POST', '/snapshots/{snapshot_id}/metadata', _with(
        '/snapshots/{w.snapshot}/metadata', {'metadata': {'k': 'v'}}),
        WRITE(200)),
    Route('PUT', '/snapshots/{snapshot_id}/metadata', _with(
        '/snapshots/{w.snapshot}/metadata', {'metadata': {'k': 'v'}}),
        WRITE(200)),
    Route('GET', '/snapshots/{snapshot_id}/metadata/{key}',
          _path('/snapshots/{w.snapshot}/metadata/k'), READ),
    Route('PUT', '/snapshots/{snapshot_id}/metadata/{key}', _with(
        '/snapshots/{w.snapshot}/metadata/k', {'meta': {'k': 'v'}}),
        WRITE(200)),
    Route('DELETE', '/snapshots/{snapshot_id}/metadata/{key}', _with(
        '/snapshots/{w.snapshot}/metadata/gone', None), WRITE(404)),
    # backups
    Route('GET', '/backups', _path('/backups'), LIST),
    Route('POST', '/backups', lambda w: ('/backups', {
        'backup': {'volume_id': w.fresh_volume()}}), WRITE(202)),
    Route('GET', '/backups/detail', _path('/backups/detail'), LIST),
    Route('POST', '/backups/import_record', lambda w: (
        '/backups/import_record', {'backup-record': w.record[
            'backup-record']}), ADMIN(201)),
    Route('GET', '/backups/{backup_id}', _path('/backups/{w.backup}'),
          READ),
    Route('PUT', '/backups/{backup_id}', _with(
        '/backups/{w.backup}', {'backup': {'description': 'seen'}}),
        WRITE(200)),
    Route('DELETE', '/backups/{backup_id}', _fresh('/backups/{id}',
                                                   'backup'), WRITE(202)),
    Route('POST', '/backups/{backup_id}/restore', _fresh(
        '/backups/{id}/restore', 'backup', {'restore': {}}), WRITE(202)),
    Route('GET', '/backups/{backup_id}/progress',
          _path('/backups/{w.backup}/progress'), READ),
    Route('GET', '/backups/{backup_id}/export_record',
          _path('/backups/{w.backup}/export_record'), ADMIN(200, 404)),
    Route('POST', '/backups/{backup_id}/action', _with(
        '/backups/{w.backup}/action',
        {'os-reset_status': {'status': 'available'}}), ADMIN(202, 404)),
    Route('POST', '/backups/{backup_id}/action', _fresh(
        '/backups/{id}/action', 'backup', {'os-force_delete': None}),
        ADMIN(202, 404)),
    # attachments
    Route('GET', '/attachments', _path('/attachments'), LIST),
    Route('POST', '/attachments', lambda w: ('/attachments', {
        'attachment': {'volume_uuid': w.fresh_volume(),
                       'instance_uuid': str(uuid.uuid4())}}), WRITE(200)),
    Route('GET', '/attachments/detail', _path('/attachments/detail'), LIST),
    Route('GET', '/attachments/{attachment_id}',
          _path('/attachments/{w.attachment}'), READ),
    Route('PUT', '/attachments/{attachment_id}', _fresh(
        '/attachments/{id}', 'attachment',
        {'attachment': {'connector': connector()}}), WRITE(200)),
    Route('DELETE', '/attachments/{attachment_id}',
          _fresh('/attachments/{id}', 'attachment'), WRITE(200)),
    Route('POST', '/attachments/{attachment_id}/action', _fresh(
        '/attachments/{id}/action', 'attachment', {'os-complete': None}),
        WRITE(204)),
    # volume types
    Route('GET', '/types', _path('/types'), LIST),
    Route('POST', '/types', lambda w: ('/types', {'volume_type': {
        'name': 'type-%s' % uuid.uuid4().hex}}), ADMIN(200)),
    Route('GET', '/types/{type_id}', _path('/types/{w.type[id]}'), LIST),
    Route('PUT', '/types/{type_id}', _with(
        '/types/{w.type[id]}', {'volume_type': {'description': 'seen'}}),
        ADMIN(200)),
    Route('DELETE', '/types/{type_id}', _fresh('/types/{id}', 'type'),
          ADMIN(202)),
    Route('GET', '/types/{type_id}/extra_specs',
          _path('/types/{w.type[id]}/extra_specs'), LIST),
    Route('POST', '/types/{type_id}/extra_specs', _with(
        '/types/{w.type[id]}/extra_specs', {'extra_specs': {'k': 'v'}}),
        ADMIN(200)),
    Route('GET', '/types/{type_id}/extra_specs/{key}',
          _path('/types/{w.type[id]}/extra_specs/k'), LIST),
    Route('PUT', '/types/{type_id}/extra_specs/{key}', _with(
        '/types/{w.type[id]}/extra_specs/k', {'k': 'v'}), ADMIN(200)),
    Route('DELETE', '/types/{type_id}/extra_specs/{key}', _with(
        '/types/{w.type[id]}/extra_specs/gone', None), ADMIN(404)),
    Route('GET', '/types/{type_id}/os-volume-type-access',
          _path('/types/{w.private_type}/os-volume-type-access'),
          ADMIN(200)),
    Route('POST', '/types/{type_id}/action', _fresh(
        '/types/{id}/action', 'private_type',
        {'addProjectAccess': {'project': stack_mod.OTHER_PROJECT}}),
        ADMIN(202)),
    # default volume types (3.62): admins only
    Route('GET', '/default-types', _path('/default-types'), ADMIN(200)),
    Route('PUT', '/default-types/{target_project_id}', _with(
        '/default-types/%s' % stack_mod.OTHER_PROJECT,
        {'default_type': {'volume_type': 'personas-type'}}), ADMIN(200)),
    # a project no default was set for
    Route('GET', '/default-types/{target_project_id}', _path(
        '/default-types/%s' % ('ab' * 16)), ADMIN(404)),
    Route('DELETE', '/default-types/{target_project_id}', _path(
        '/default-types/%s' % stack_mod.OTHER_PROJECT), ADMIN(204)),
    # the rest of the catalogue
    Route('GET', '/resource_filters', _path('/resource_filters'), OPEN),
    Route('POST', '/workers/cleanup', _with('/workers/cleanup', {}),
          ADMIN(202)),
    Route('GET', '/os-availability-zone', _path('/os-availability-zone'),
          OPEN),
    # manage and unmanage (a reference no backend holds: the volume or
    # snapshot is recorded, and fails on the backend)
    Route('POST', '/os-volume-manage', lambda w: ('/os-volume-manage', {
        'volume': {'host': w.volume_host,
                   'ref': {'source-name': 'personas-none'}}}), ADMIN(202)),
    Route('POST', '/manageable_volumes', lambda w: ('/manageable_volumes', {
        'volume': {'host': w.volume_host,
                   'ref': {'source-name': 'personas-none'}}}), ADMIN(202)),
    Route('GET', '/manageable_volumes', lambda w: (
        '/manageable_volumes?host=%s' % w.volume_host, None), ADMIN(200)),
    Route('GET', '/manageable_volumes/detail', lambda w: (
        '/manageable_volumes/detail?host=%s' % w.volume_host, None),
        ADMIN(200)),
    Route('POST', '/os-snapshot-manage',
          _manage_snapshot('/os-snapshot-manage'), ADMIN(202)),
    Route('POST', '/manageable_snapshots',
          _manage_snapshot('/manageable_snapshots'), ADMIN(202)),
    Route('GET', '/manageable_snapshots', lambda w: (
        '/manageable_snapshots?host=%s' % w.volume_host, None), ADMIN(200)),
    Route('GET', '/manageable_snapshots/detail', lambda w: (
        '/manageable_snapshots/detail?host=%s' % w.volume_host, None),
        ADMIN(200)),
    Route('POST', '/volumes/{volume_id}/action', _fresh_volume_action(
        {'os-unmanage': None}), ADMIN(202, 404)),
    Route('POST', '/snapshots/{snapshot_id}/action', _fresh(
        '/snapshots/{id}/action', 'snapshot', {'os-unmanage': None}),
        ADMIN(202, 404)),
    Route('GET', '/os-hosts', _path('/os-hosts'), ADMIN(200)),
    Route('GET', '/os-hosts/{host_name}',
          _path('/os-hosts/{w.volume_host}'), ADMIN(200)),
    Route('GET', '/extensions', _path('/extensions'), OPEN),
    Route('GET', '/extensions/{alias}', _path('/extensions/{w.alias}'),
          OPEN),
    Route('GET', '/os-services', _path('/os-services'), ADMIN(200)),
    Route('PUT', '/os-services/{action}', _with('/os-services/enable', {
        'host': '{w.volume_host}', 'binary': 'cinder-volume'}), ADMIN(200)),
    Route('GET', '/scheduler-stats/get_pools',
          _path('/scheduler-stats/get_pools'), ADMIN(200)),
    Route('GET', '/capabilities/{host}',
          _path('/capabilities/{w.volume_host}'), ADMIN(200)),
    Route('GET', '/messages', _path('/messages'), LIST),
    Route('GET', '/messages/{message_id}', _path('/messages/{w.message}'),
          READ),
    Route('DELETE', '/messages/{message_id}',
          _fresh('/messages/{id}', 'message'), WRITE(204)),
    Route('GET', '/os-attachment-events', _path('/os-attachment-events'),
          ADMIN(200)),
    Route('GET', '/os-host-fences', _path('/os-host-fences'), ADMIN(200)),
    Route('GET', '/os-host-fences/{host}', _path(
        '/os-host-fences/compute-9?volume_id={w.volume}'), ADMIN(200)),
    Route('POST', '/os-host-fences/{host}/action', _with(
        '/os-host-fences/compute-9/action',
        {'os-unfence': {'volume_id': '{w.volume}'}}), ADMIN(200)),
    # quotas and limits
    Route('GET', '/os-quota-sets/{target_project_id}/defaults', _path(
        '/os-quota-sets/%s/defaults' % stack_mod.PROJECT), QUOTA_READ),
    Route('GET', '/os-quota-sets/{target_project_id}', _path(
        '/os-quota-sets/%s' % stack_mod.PROJECT), QUOTA_READ),
    Route('PUT', '/os-quota-sets/{target_project_id}', _with(
        '/os-quota-sets/%s' % stack_mod.PROJECT,
        {'quota_set': UNLIMITED}), ADMIN(200)),
    Route('DELETE', '/os-quota-sets/{target_project_id}', _with(
        '/os-quota-sets/%s' % stack_mod.OTHER_PROJECT, None), ADMIN(200)),
    Route('GET', '/os-quota-class-sets/{class_name}',
          _path('/os-quota-class-sets/default'), ADMIN(200)),
    Route('PUT', '/os-quota-class-sets/{class_name}', _with(
        '/os-quota-class-sets/personas',
        {'quota_class_set': {'volumes': 10}}), ADMIN(200)),
    Route('GET', '/limits', _path('/limits'), LIST),
    # transfers, under both prefixes
    Route('GET', '/os-volume-transfer', _path('/os-volume-transfer'), LIST),
    Route('POST', '/os-volume-transfer', lambda w: (
        '/os-volume-transfer', {'transfer': {'volume_id': w.fresh_volume()}}),
        WRITE(202)),
    Route('GET', '/os-volume-transfer/detail',
          _path('/os-volume-transfer/detail'), LIST),
    Route('GET', '/os-volume-transfer/{transfer_id}',
          _path('/os-volume-transfer/{w.transfer}'), READ),
    Route('DELETE', '/os-volume-transfer/{transfer_id}', lambda w: (
        '/os-volume-transfer/%s' % w.fresh_transfer()[0], None),
        WRITE(202)),
    Route('POST', '/os-volume-transfer/{transfer_id}/accept',
          _accept('/os-volume-transfer/{id}/accept'), ACCEPT),
    Route('GET', '/volume-transfers', _path('/volume-transfers'), LIST),
    Route('POST', '/volume-transfers', lambda w: (
        '/volume-transfers', {'transfer': {'volume_id': w.fresh_volume()}}),
        WRITE(202)),
    Route('GET', '/volume-transfers/detail',
          _path('/volume-transfers/detail'), LIST),
    Route('GET', '/volume-transfers/{transfer_id}',
          _path('/volume-transfers/{w.transfer}'), READ),
    Route('DELETE', '/volume-transfers/{transfer_id}', lambda w: (
        '/volume-transfers/%s' % w.fresh_transfer()[0], None), WRITE(202)),
    Route('POST', '/volume-transfers/{transfer_id}/accept',
          _accept('/volume-transfers/{id}/accept'), ACCEPT),
    # QoS specs: admins only
    Route('GET', '/qos-specs', _path('/qos-specs'), ADMIN(200)),
    Route('POST', '/qos-specs', lambda w: ('/qos-specs', {'qos_specs': {
        'name': 'qos-%s' % uuid.uuid4().hex}}), ADMIN(200)),
    Route('GET', '/qos-specs/{qos_id}', _path('/qos-specs/{w.qos}'),
          ADMIN(200)),
    Route('PUT', '/qos-specs/{qos_id}', _with(
        '/qos-specs/{w.qos}', {'qos_specs': {'read_iops_sec': '200'}}),
        ADMIN(200)),
    Route('DELETE', '/qos-specs/{qos_id}', _fresh('/qos-specs/{id}', 'qos'),
          ADMIN(202)),
    Route('PUT', '/qos-specs/{qos_id}/delete_keys', _fresh(
        '/qos-specs/{id}/delete_keys', 'qos', {'keys': ['read_iops_sec']}),
        ADMIN(202)),
    Route('GET', '/qos-specs/{qos_id}/associations',
          _path('/qos-specs/{w.qos}/associations'), ADMIN(200)),
    Route('GET', '/qos-specs/{qos_id}/associate', _path(
        '/qos-specs/{w.qos}/associate?vol_type_id={w.type[id]}'),
        ADMIN(202)),
    Route('GET', '/qos-specs/{qos_id}/disassociate', _path(
        '/qos-specs/{w.qos}/disassociate?vol_type_id={w.type[id]}'),
        ADMIN(202)),
    Route('GET', '/qos-specs/{qos_id}/disassociate_all',
          _path('/qos-specs/{w.qos}/disassociate_all'), ADMIN(202)),
    # group types: everyone reads the public ones, admins change them
    Route('GET', '/group_types', _path('/group_types'), OPEN),
    Route('POST', '/group_types', lambda w: ('/group_types', {'group_type': {
        'name': 'gt-%s' % uuid.uuid4().hex}}), ADMIN(202)),
    Route('GET', '/group_types/{group_type_id}',
          _path('/group_types/{w.group_type}'), OPEN),
    Route('PUT', '/group_types/{group_type_id}', _with(
        '/group_types/{w.group_type}', {'group_type': {
            'description': 'seen'}}), ADMIN(200)),
    Route('DELETE', '/group_types/{group_type_id}',
          _fresh('/group_types/{id}', 'group_type'), ADMIN(202)),
    Route('GET', '/group_types/{group_type_id}/group_specs',
          _path('/group_types/{w.group_type}/group_specs'), ADMIN(200)),
    Route('POST', '/group_types/{group_type_id}/group_specs', _with(
        '/group_types/{w.group_type}/group_specs',
        {'group_specs': {'vendor:k': 'v'}}), ADMIN(202)),
    Route('GET', '/group_types/{group_type_id}/group_specs/{key}',
          _path('/group_types/{w.group_type}/group_specs/vendor:k'),
          ADMIN(200)),
    Route('PUT', '/group_types/{group_type_id}/group_specs/{key}', _with(
        '/group_types/{w.group_type}/group_specs/vendor:k',
        {'vendor:k': 'v'}), ADMIN(200)),
    Route('DELETE', '/group_types/{group_type_id}/group_specs/{key}',
          _fresh('/group_types/{id}/group_specs/vendor:k', 'group_type'),
          ADMIN(202)),
    # groups and group snapshots: the project's
    Route('GET', '/groups', _path('/groups'), LIST),
    Route('POST', '/groups', _with('/groups', {'group': {
        'group_type': '{w.group_type}',
        'volume_types': ['{w.group_vtype}']}}), CREATE(202)),
    Route('GET', '/groups/detail', _path('/groups/detail'), LIST),
    Route('POST', '/groups/action', _with('/groups/action', {
        'create-from-src': {'source_group_id': '{w.group}'}}), WRITE(202)),
    Route('GET', '/groups/{group_id}', _path('/groups/{w.group}'), READ),
    Route('PUT', '/groups/{group_id}', _with('/groups/{w.group}', {
        'group': {'description': 'seen'}}), WRITE(202)),
    Route('POST', '/groups/{group_id}/action', _fresh(
        '/groups/{id}/action', 'group', {'delete': {}}), WRITE(202)),
    Route('GET', '/group_snapshots', _path('/group_snapshots'), LIST),
    Route('POST', '/group_snapshots', _with('/group_snapshots', {
        'group_snapshot': {'group_id': '{w.group}'}}), WRITE(202)),
    Route('GET', '/group_snapshots/detail', _path('/group_snapshots/detail'),
          LIST),
    Route('GET', '/group_snapshots/{group_snapshot_id}',
          _path('/group_snapshots/{w.group_snapshot}'), READ),
    Route('DELETE', '/group_snapshots/{group_snapshot_id}', _fresh(
        '/group_snapshots/{id}', 'group_snapshot'), WRITE(202)),
    Route('POST', '/group_snapshots/{group_snapshot_id}/action', _with(
        '/group_snapshots/{w.group_snapshot}/action',
        {'reset_status': {'status': 'available'}}), ADMIN(202)),
]


def _fill(value, w):
    """``value`` with ``{w...}`` placeholders in its strings filled."""
    if isinstance(value, str):
        return value.format(w=w) if '{w.' in value else value
    if isinstance(value, dict):
        return {_fill(k, w): _fill(v, w) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, w) for v in value]
    return value


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    s = stack_mod.Stack(tmp_path_factory.mktemp('personas')).start()
    try:
        yield World(s)
    finally:
        s.stop()


def test_the_table_has_every_route():
    declared = {(m, p) for p, methods in router.ROUTE_DECLARATIONS
                for m in methods}
    tabled = {(r.method, r.path) for r in ROUTES}
    assert declared - tabled == set()
    assert tabled - declared == set()


def _id(route):
    return '%s %s' % (route.method, route.path)


@pytest.mark.parametrize('route', [r for r in ROUTES if r.make and
                                   r.expect], ids=_id)
def test_each_persona_gets_what_cinder_gives(world, route):
    wrong = []
    for persona, who in PERSONAS.items():
        path, body = route.make(world)
        body = _fill(body, world)
        client = world.s.client(**who)
        resp = client.request(route.method, path, json=body)
        if resp.status_code != route.expect[persona]:
            wrong.append('%s: %s %s -> %d, not %d: %s' % (
                persona, route.method, path, resp.status_code,
                route.expect[persona], resp.text[:200]))
        elif persona == O and resp.status_code < 300:
            leaked = [i for i in world.project_ids() if i in resp.text]
            if leaked:
                wrong.append('%s sees %s in %s %s' % (persona, leaked,
                                                      route.method, path))
        if resp.status_code == 403:
            assert 'forbidden' in resp.json(), resp.text
    assert not wrong, '\n'.join(wrong)
