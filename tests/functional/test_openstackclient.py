"""python-openstackclient against cinder_lite (noauth, through
keystoneauth's token_endpoint plugin).

``openstack volume attachment create`` looks the server up in Nova, which
is not part of cinder_lite: the attachment is reserved through the API
here, then connected, completed, listed, shown and deleted with the
``openstack`` CLI."""
import json
import uuid

from tests.harness.clients import openstack
from tests.harness import util


def as_json(stack, *args, **kw):
    return json.loads(openstack(stack, *args, '-f', 'json', **kw))


def test_openstack_cli_volumes_types_attachments(stack):
    vtype = as_json(stack, 'volume', 'type', 'create', '--property',
                    'multiattach=<is> True', 'shared')
    assert vtype['properties'] == {'multiattach': '<is> True'}
    created = as_json(stack, 'volume', 'create', '--type', 'shared',
                      '--size', '1', 'osc-v1')
    assert created['multiattach'] is True and created['type'] == 'shared'
    util.wait_for(lambda: as_json(stack, 'volume', 'show', 'osc-v1')[
        'status'] == 'available', what='osc-v1 available')
    listed = as_json(stack, 'volume', 'list')
    assert [(v['Name'], v['Status']) for v in listed] == [
        ('osc-v1', 'available')]

    api = stack.client()
    instance = str(uuid.uuid4())
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': created['id'], 'instance_uuid': instance,
        'mode': 'ro'}})
    assert resp.status_code == 200, resp.text
    att_id = resp.json()['attachment']['id']
    updated = as_json(stack, 'volume', 'attachment', 'set', '--host',
                      'compute-1', '--ip', '127.0.0.5', '--initiator',
                      'iqn.2026-11.org.example:compute-1', att_id)
    assert updated['Status'] == 'attaching'
    assert updated['Attach Mode'] == 'ro'
    assert updated['Properties']['access_mode'] == 'ro'
    openstack(stack, 'volume', 'attachment', 'complete', att_id)
    (row,) = as_json(stack, 'volume', 'attachment', 'list')
    assert (row['ID'], row['Server ID'], row['Status']) == (
        att_id, instance, 'attached')
    shown = as_json(stack, 'volume', 'attachment', 'show', att_id)
    assert shown['Volume ID'] == created['id']
    assert as_json(stack, 'volume', 'show', 'osc-v1')['status'] == 'in-use'
    openstack(stack, 'volume', 'attachment', 'delete', att_id)
    assert as_json(stack, 'volume', 'attachment', 'list') == []
    openstack(stack, 'volume', 'delete', 'osc-v1')
    util.wait_for(lambda: as_json(stack, 'volume', 'list') == [],
                  what='osc-v1 deleted')
