"""The attachment rulebook (cinder_lite/volume/rules.py), over every
combination of volume, requested mode and existing attachments.

Each table is checked against a plain statement of the rule written here
(DESIGN §4), and a few rows also pin the message a client reads."""
import itertools

import pytest
import webob.exc

from cinder_lite.api import validation
from cinder_lite.api.schemas import attachments as attachment_schemas
from cinder_lite.api.schemas import volume_actions as action_schemas
from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.volume import rules

A = rules.Attachment
I1 = '11111111-1111-4111-8111-111111111111'
I2 = '22222222-2222-4222-8222-222222222222'

# name -> (multiattach, the type's mode spec)
KINDS = {
    'plain': (False, None),
    'plain, type mode RO': (False, 'RO'),
    'multiattach': (True, None),
    'multiattach, type mode RW': (True, 'RW'),
    'single-writer': (True, 'RO'),
    "single-writer (' ro ')": (True, ' ro '),
}
VOLUMES = {
    '%s%s' % (kind, ', read-only' if readonly else ''): rules.Volume(
        'vol', multiattach=multiattach, type_mode=type_mode,
        readonly=readonly)
    for (kind, (multiattach, type_mode)), readonly in itertools.product(
        KINDS.items(), (False, True))}

# the volume's other live attachments, by their modes
OTHERS = {
    'none': [],
    'a reader': [A('r1', attach_mode='ro')],
    'a writer': [A('w1', attach_mode='rw')],
    'an undecided reservation': [A('u1')],
    'a reader taking over': [A('t1', attach_mode='ro',
                               operation=states.TAKING_OVER)],
    'several readers': [A('r1', attach_mode='ro'),
                        A('r2', attach_mode='ro')],
    'several with a writer': [A('r1', attach_mode='ro'),
                              A('w1', attach_mode='rw'),
                              A('r2', attach_mode='ro')],
}
REQUESTED = (None, 'ro', 'rw')


def _single_writer(volume):
    return volume.multiattach and \
        (volume.type_mode or '').strip().upper() == 'RO'


def _has_writer(others):
    return any(a.attach_mode == 'rw'
               or a.operation == states.TAKING_OVER for a in others)


def _refusal(volume, mode, others):
    if mode != 'rw':
        return None
    if volume.readonly:
        return 'is read-only'
    if _single_writer(volume) and _has_writer(others):
        return 'takes one writer'
    return None


def _combinations():
    return [pytest.param(VOLUMES[v], r, OTHERS[o], id='%s|%s|%s' % (v, r, o))
            for v, r, o in itertools.product(VOLUMES, REQUESTED, OTHERS)]


def _outcome(call):
    try:
        return call()
    except exception.InvalidAttachMode as e:
        return ('refused', str(e))


def _check(outcome, mode, refusal):
    if refusal is None:
        assert outcome == mode
    else:
        assert outcome[0] == 'refused' and refusal in outcome[1], outcome


@pytest.mark.parametrize('volume,requested,others', _combinations())
def test_reserve_mode(volume, requested, others):
    """A reservation records the mode asked for; none stays undecided
    (read-only on a read-only volume) until it connects."""
    mode = requested or ('ro' if volume.readonly else None)
    _check(_outcome(lambda: rules.reserve_mode(volume, requested, others)),
           mode, _refusal(volume, requested, others))


@pytest.mark.parametrize('volume,requested,others', _combinations())
@pytest.mark.parametrize('recorded', (None, 'ro', 'rw'))
def test_connect_mode(volume, requested, others, recorded):
    """The mode the attachment was made with, else the connector's, else
    the default: read-only on a read-only volume or beside a single
    writer's writer, read-write otherwise."""
    default = 'ro' if volume.readonly or (
        _single_writer(volume) and _has_writer(others)) else 'rw'
    mode = recorded or requested or default
    att = A('me', attach_mode=recorded)
    _check(_outcome(lambda: rules.connect_mode(volume, att, requested,
                                               others)),
           mode, _refusal(volume, mode, others))


@pytest.mark.parametrize('volume,requested,others', _combinations())
@pytest.mark.parametrize('recorded', (None, 'ro', 'rw'))
def test_attach_mode(volume, requested, others, recorded):
    """os-attach (its mode defaults to rw in the handler) records the
    mode it names, which must be the one the attachment was set up
    with."""
    requested = requested or 'rw'
    att = A('me', attach_mode=recorded)
    refusal = ('was set up' if recorded and recorded != requested
               else _refusal(volume, requested, others))
    _check(_outcome(lambda: rules.attach_mode(volume, att, requested,
                                              others)),
           requested, refusal)


@pytest.mark.parametrize('volume,requested,others', _combinations())
def test_complete_mode(volume, requested, others):
    """Completed without a connect: its own mode, else decided now."""
    default = 'ro' if volume.readonly or (
        _single_writer(volume) and _has_writer(others)) else 'rw'
    att = A('me', attach_mode=requested)
    assert rules.complete_mode(volume, att, others) == (requested
                                                        or default)


def test_mode_messages():
    single = rules.Volume('v1', multiattach=True, type_mode='RO')
    with pytest.raises(exception.InvalidAttachMode) as e:
        rules.reserve_mode(single, 'rw', OTHERS['a writer'])
    assert str(e.value) == (
        'Invalid attach mode: volume v1 takes one writer and attachment w1 '
        'is it; attach read-only or wait until it detaches')
    with pytest.raises(exception.InvalidAttachMode) as e:
        rules.connect_mode(rules.Volume('v2', readonly=True), A('a'), 'rw',
                           [])
    assert str(e.value) == ('Invalid attach mode: volume v2 is read-only; '
                            'attach it with mode ro')
    with pytest.raises(exception.InvalidAttachMode) as e:
        rules.reserve_mode(single, 'wo', [])
    assert str(e.value) == ("Invalid attach mode: mode must be 'rw' or "
                            "'ro', not 'wo'")
    with pytest.raises(exception.InvalidAttachMode) as e:
        rules.connect_mode(single, A('a'), 'x', [])
    assert "connector mode must be 'rw' or 'ro'" in str(e.value)
    with pytest.raises(exception.InvalidAttachMode) as e:
        rules.attach_mode(single, A('a', attach_mode='ro'), 'rw', [])
    assert str(e.value) == 'Invalid attach mode: attachment a was set up ro'


def test_the_writer_counts_only_on_a_single_writer_volume():
    for name, volume in VOLUMES.items():
        expected = volume.multiattach and 'single-writer' in name
        assert volume.single_writer == expected, name
        assert rules.single_writer(volume.multiattach,
                                   volume.type_mode) == expected


@pytest.mark.parametrize('spec,valid', [
    (None, True), ('RO', True), ('RW', True), ('ro', True), ('rw', True),
    ('WO', False), ('', False), ('<is> RO', False)])
def test_type_mode(spec, valid):
    """A type's ``mode`` spec is RO or RW, in any case."""
    if valid:
        rules.check_type_mode(spec)
    else:
        with pytest.raises(exception.InvalidInput,
                           match='mode must be RO or RW'):
            rules.check_type_mode(spec)


# -- sharing ------------------------------------------------------------------
SHARERS = {
    'none': [],
    'the same instance': [A('s1', instance_uuid=I1,
                            attach_status=states.ATTACHED)],
    'another instance': [A('o1', instance_uuid=I2,
                           attach_status=states.ATTACHED)],
    'no instance': [A('n1')],
    'several': [A('s1', instance_uuid=I1, attach_status=states.ATTACHED),
                A('o1', instance_uuid=I2, attach_status=states.ATTACHED)],
}


@pytest.mark.parametrize('multiattach,bootable,allowed,instance,sharers', [
    pytest.param(m, b, a, i, SHARERS[s],
                 id='%s|%s|%s|%s|%s' % (
                     'multiattach' if m else 'plain',
                     'bootable' if b else 'data',
                     'allowed' if a else 'multi-attach off',
                     'instance' if i else 'no instance', s))
    for m, b, a, i, s in itertools.product(
        (False, True), (False, True), (False, True), (I1, None), SHARERS)])
def test_sharing(multiattach, bootable, allowed, instance, sharers):
    """A plain volume serves one instance (the same one may attach
    again); a multiattach volume any number unless multi-attach is off;
    sharing a bootable one asks the policy."""
    volume = rules.Volume('vol', multiattach=multiattach, bootable=bootable)
    others = [a for a in sharers
              if instance is None or a.instance_uuid != instance]
    if not others:
        expected = False
    elif not multiattach:
        expected = 'is not multiattach'
    elif not allowed:
        expected = 'Multi-attach is turned off'
    else:
        expected = bootable
    try:
        outcome = rules.check_sharing(volume, instance, sharers, allowed)
    except exception.AttachmentRefused as e:
        outcome = str(e)
        assert isinstance(expected, str) and expected in outcome, outcome
    else:
        assert outcome is expected
    # the facts matter exactly where a refusal or the policy can come
    if not rules.sharing_matters(volume, allowed):
        assert rules.check_sharing(volume, instance, sharers,
                                   allowed) is False


def test_sharing_message_names_the_other_attachment():
    with pytest.raises(exception.AttachmentRefused) as e:
        rules.check_sharing(rules.Volume('v'), I1, SHARERS['several'], True)
    assert str(e.value) == (
        'Volume v is not multiattach and already has an attachment (o1, '
        'attached); only the same instance may attach it again.')


@pytest.mark.parametrize('owner,instance,refused', [
    (None, I1, False), (I1, I1, False), (I2, I1, True), (I1, None, True),
    (None, None, False)])
def test_owner(owner, instance, refused):
    att = A('a1', instance_uuid=owner)
    if refused:
        with pytest.raises(exception.AttachmentRefused,
                           match='belongs to instance'):
            rules.check_owner(att, 'v', instance)
    else:
        rules.check_owner(att, 'v', instance)


MARKED = (states.ATTACH_DETACHING, None)          # os-begin_detaching
DISCONNECTING = (states.ATTACH_DETACHING, states.DISCONNECTING)


@pytest.mark.parametrize('statuses,refused', [
    ((), None), ((states.ATTACH_RESERVED, states.ATTACH_ATTACHING), None),
    ((states.ERROR_ATTACHING, DISCONNECTING), None),
    ((states.ATTACHED,), 'a0'), ((states.ERROR_DETACHING, MARKED), 'a1'),
    ((states.ATTACH_RESERVED, states.ATTACHED, MARKED), 'a1, a2')])
def test_a_volume_is_deleted_only_while_not_attached(statuses, refused):
    """Attached, or marked detaching with its host still on it."""
    live = [A('a%d' % i, attach_status=s, operation=None)
            if isinstance(s, str) else
            A('a%d' % i, attach_status=s[0], operation=s[1])
            for i, s in enumerate(statuses)]
    if refused is None:
        rules.check_not_attached('v', live)
        return
    with pytest.raises(exception.InvalidVolume) as e:
        rules.check_not_attached('v', live)
    assert str(e.value) == ('Invalid volume: Volume v must not be attached '
                            'to be deleted; attached: %s.' % refused)


CONNECTION_STATES = [
    (states.ATTACH_RESERVED, None, False),
    (states.ATTACH_ATTACHING, None, True),
    (states.ATTACH_ATTACHING, {'x': 1}, True),
    (states.ATTACHED, {'x': 1}, True),
    (states.ATTACH_DETACHING, {'x': 1}, True),
    (states.ERROR_DETACHING, {'x': 1}, True),
    (states.ERROR_ATTACHING, None, False),
    (states.ERROR_ATTACHING, {'x': 1}, True),
]


@pytest.mark.parametrize('multiattach', (False, True))
@pytest.mark.parametrize('status,info,holds', CONNECTION_STATES)
@pytest.mark.parametrize('other_host', ('c1', 'c2'))
def test_one_connection_per_host(multiattach, status, info, holds,
                                 other_host):
    """A plain volume is connected once per host; a multiattach volume
    as often as its hosts ask."""
    volume = rules.Volume('v', multiattach=multiattach)
    others = [A('o', attached_host=other_host, attach_status=status,
                connection_info=info)]
    assert rules.holds_connection(others[0]) is holds
    if not multiattach and holds and other_host == 'c1':
        with pytest.raises(exception.DuplicateConnector):
            rules.check_one_connection(volume, 'c1', others)
    else:
        rules.check_one_connection(volume, 'c1', others)


@pytest.mark.parametrize('status,info,holds', CONNECTION_STATES)
def test_what_an_attachment_holds(status, info, holds):
    att = A('a', attach_status=status, connection_info=info)
    assert rules.exported(att) is (
        status in (states.ATTACH_ATTACHING, states.ATTACHED,
                   states.ATTACH_DETACHING, states.ERROR_DETACHING)
        and info is not None)
    assert rules.may_be_exported(att) is (
        info is not None or status == states.ATTACH_ATTACHING)
    assert rules.half_connected(att) is (
        status == states.ATTACH_ATTACHING and info is None)
    assert rules.completed_unconnected(att) is False
    assert rules.completed_unconnected(A('b', attach_status=states.ATTACHED))


@pytest.mark.parametrize('instances,shared', [
    ([], False), ([I1], False), ([None], False), ([I1, I1], False),
    ([I1, I2], True), ([I1, None], True), ([None, None], True)])
@pytest.mark.parametrize('multiattach', (False, True))
def test_bootable_sharing(instances, shared, multiattach):
    volume = rules.Volume('v', multiattach=multiattach)
    live = [A('a%d' % n, instance_uuid=i) for n, i in enumerate(instances)]
    assert rules.bootable_sharing(volume, live) is (shared and multiattach)


@pytest.mark.parametrize('multiattach,target,mode,target_mode,changes', [
    (False, False, None, None, False),
    (False, True, None, None, True),
    (True, False, None, None, True),
    (True, True, 'RO', 'RO', False),
    (True, True, None, 'RO', True),
    (True, True, 'RO', None, True),
    (False, False, 'RO', None, True),
])
def test_retype_changes_sharing(multiattach, target, mode, target_mode,
                                changes):
    volume = rules.Volume('v', multiattach=multiattach)
    assert rules.changes_sharing(volume, target, mode,
                                 target_mode) is changes


# -- takeover -----------------------------------------------------------------
READER = dict(attach_mode='ro', attach_status=states.ATTACHED,
              connection_info={'x': 1})
TAKEOVER_CASES = [
    ('multiattach', READER, None, exception.InvalidInput,
     'not a single-writer volume'),
    ('plain', READER, None, exception.InvalidInput,
     'not a single-writer volume'),
    ('single-writer', dict(READER, attach_mode='rw'), None,
     exception.TakeoverRefused, 'is the writer of volume'),
    ('single-writer, read-only', READER, None, exception.InvalidInput,
     'nobody may write it'),
    ('single-writer', dict(READER, operation=states.DISCONNECTING), None,
     exception.AttachmentBusy, 'being disconnected'),
    ('single-writer', dict(READER, operation=states.TAKING_OVER), 'me',
     exception.AttachmentBusy, 'taking over as the writer'),
    ('single-writer', dict(READER, attach_status=states.ATTACH_ATTACHING,
                           connection_info=None), None,
     exception.AttachmentBusy, 'being connected'),
    ('single-writer', dict(READER, attach_status=states.ATTACH_RESERVED,
                           connection_info=None), None,
     exception.InvalidInput, 'only a connected attachment'),
    ('single-writer', dict(READER, connection_info=None), None,
     exception.InvalidInput, 'only a connected attachment'),
    ('single-writer', READER, 'other', exception.TakeoverRefused,
     'attachment other of volume vol is taking over'),
    ('single-writer', READER, None, None, None),
]


@pytest.mark.parametrize('kind,fields,taking_over,error,message',
                         TAKEOVER_CASES)
def test_takeover(kind, fields, taking_over, error, message):
    volume = VOLUMES[kind]
    att = A('me', **fields)
    if error is None:
        rules.check_takeover(volume, att, taking_over)
        return
    with pytest.raises(error) as e:
        rules.check_takeover(volume, att, taking_over)
    assert message in str(e.value)


def test_takeover_modes():
    assert rules.TAKEOVER_MODE == 'rw'
    assert rules.mode_to_restore({'host': 'h', 'mode': 'rw'}) == 'rw'
    assert rules.mode_to_restore({'host': 'h'}) == 'ro'
    assert rules.mode_to_restore(None) == 'ro'


# -- connectors ---------------------------------------------------------------
GOOD_CONNECTORS = [
    {'host': 'c1'},
    {'host': 'c1', 'ip': '10.0.0.1', 'initiator': 'iqn.2004-10.org:c1',
     'mode': 'ro', 'platform': 'x86_64', 'os_type': 'linux2',
     'mountpoint': '/dev/vdb', 'multipath': False, 'wwpns': ['ab']},
    {'host': 'c1', 'ip': '::1', 'initiator': None, 'mode': None},
]
# connector -> (error, what the RPC error says)
BAD_CONNECTORS = [
    ('x', exception.InvalidConnector, "it must be an object with a 'host'"),
    ({'ip': '1.2.3.4'}, exception.InvalidConnector,
     "'host' must be a non-empty string of at most 255 characters"),
    ({'host': ''}, exception.InvalidConnector, "'host' must be"),
    ({'host': '  '}, exception.InvalidConnector, "'host' must be"),
    ({'host': 5}, exception.InvalidConnector, "'host' must be"),
    ({'host': 'x' * 256}, exception.InvalidConnector, "'host' must be"),
    ({'host': 'h', 'initiator': 7}, exception.InvalidConnector,
     "'initiator' must be a string of at most 255 characters"),
    ({'host': 'h', 'os_type': 'x' * 256}, exception.InvalidConnector,
     "'os_type' must be a string"),
    ({'host': 'h', 'ip': 5}, exception.InvalidConnector,
     "'ip' must be"),
    ({'host': 'h', 'ip': '300.1.2.3'}, exception.InvalidConnector,
     "'ip' must be an IPv4 or IPv6 address, not '300.1.2.3'"),
    ({'host': 'h', 'ip': 'compute-1'}, exception.InvalidConnector,
     "'ip' must be an IPv4 or IPv6 address, not 'compute-1'"),
    ({'host': 'h', 'mode': 'rwx'}, exception.InvalidAttachMode,
     "connector mode must be 'rw' or 'ro', not 'rwx'"),
]
# every request body that carries a connector, through its REST schema
REST_BODIES = [
    (attachment_schemas.update, lambda c: {'attachment': {'connector': c}}),
    (attachment_schemas.create, lambda c: {'attachment': {
        'volume_uuid': I1, 'connector': c}}),
    (attachment_schemas.create_v354, lambda c: {'attachment': {
        'volume_uuid': I1, 'connector': c}}),
    (action_schemas.ACTIONS['os-initialize_connection'],
     lambda c: {'connector': c}),
    (action_schemas.ACTIONS['os-terminate_connection'],
     lambda c: {'connector': c}),
]


@pytest.mark.parametrize('connector', GOOD_CONNECTORS)
def test_good_connectors_pass_rest_and_rpc(connector):
    rules.check_connector(connector)
    for schema, body in REST_BODIES:
        validation.validate(schema, body(connector))


@pytest.mark.parametrize('connector,error,message', BAD_CONNECTORS)
def test_bad_connectors_fail_rest_and_rpc_alike(connector, error, message):
    with pytest.raises(error) as e:
        rules.check_connector(connector)
    assert message in str(e.value)
    for schema, body in REST_BODIES:
        with pytest.raises(webob.exc.HTTPBadRequest) as e:
            validation.validate(schema, body(connector))
        assert 'connector' in e.value.explanation


def test_rest_says_what_a_connector_value_must_be():
    with pytest.raises(webob.exc.HTTPBadRequest) as e:
        validation.validate(action_schemas.ACTIONS[
            'os-initialize_connection'], {'connector': {
                'host': 'h', 'ip': 'compute-1'}})
    assert e.value.explanation == (
        "Invalid input for field/attribute connector/ip. Value: "
        "'compute-1'. It must be an IPv4 or IPv6 address.")


@pytest.mark.parametrize('connector', [None, {}])
def test_a_create_may_leave_the_connector_out(connector):
    for schema in (attachment_schemas.create,
                   attachment_schemas.create_v354):
        validation.validate(schema, {'attachment': {
            'volume_uuid': I1, 'connector': connector}})
    with pytest.raises(webob.exc.HTTPBadRequest):
        validation.validate(attachment_schemas.update,
                            {'attachment': {'connector': connector}})


@pytest.mark.parametrize('initiator,protocols,refused', [
    (None, {'iscsi'}, False),
    ('iqn.2004-10.org.example:c1', {'iscsi'}, False),
    ('fake', {'iscsi'}, True),
    ('fake', {'nbd', 'iscsi'}, True),
    ('fake', {'nbd'}, False),
    ('fake', {None}, False),
])
def test_initiator(initiator, protocols, refused):
    connector = {'host': 'c1', 'initiator': initiator}
    if refused:
        with pytest.raises(exception.InvalidConnector,
                           match='must be an iSCSI name'):
            rules.check_initiator(connector, protocols)
    else:
        rules.check_initiator(connector, protocols)
