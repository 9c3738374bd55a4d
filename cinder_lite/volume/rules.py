"""The rulebook of attachments: which attachments a volume may have at
once, in which mode each one is made, who may become the writer, and what
a connector must carry.

Every function here is pure: it takes plain values -- a ``Volume`` (the
volume's flags and its type's default mode), attachments (anything with
the attributes of ``Attachment``: rows read under the volume's lock, or
records a test builds), the requested mode, the connector -- and returns
a decision or raises the named error the caller shows.  The callers read
the facts, under the volume's row lock where the decision must be
race-free, and act on the answer; none decides on its own:
``attachment_api`` (reserve, connect, complete, takeover, detach),
``actions`` (the legacy os-* actions, os-set_bootable, os-retype), the
REST schemas and the RPC endpoint (the connector), the volume manager
(the mode a takeover gives or gives back) and ``fence_api`` (which
attachments hold an export).

The rules (DESIGN §4):

* a plain volume serves one instance: another instance's attachment is
  refused, the same instance may hold a second one (live migration),
  and the volume is connected once per consumer host;
* a multiattach volume takes any number of attachments unless
  multi-attach is turned off in this cloud; sharing a bootable one asks
  the ``volume:multiattach_bootable_volume`` policy;
* a read-only volume (os-update_readonly_flag) gives read-only
  attachments only;
* a single-writer volume (a multiattach type with ``mode = RO``) has at
  most one writer: a read-write attachment, or one taking over as the
  writer.  An attachment nobody chose a mode for is read-only there once
  another is the writer, and read-write everywhere else.

A caller may pass only the attachments that can matter to a rule (the
first of another instance, the writer, those on one host) rather than all
of a volume's: each function says which.
"""
import dataclasses
import typing

import jsonschema

from cinder_lite.common import exception
from cinder_lite.common import iscsi_name
from cinder_lite.common import states

RW = 'rw'
RO = 'ro'
MODES = (RW, RO)
# the mode of an attachment nobody chose one for, where no rule says
# otherwise (and how the API shows one still undecided)
DEFAULT_MODE = RW
# the volume type's extra spec that makes a multiattach type single-writer
TYPE_MODE_KEY = 'mode'

# operations under way on an attachment (its ``operation``)


def check_type_mode(type_mode):
    """A type's ``mode`` spec, when it has one, is RO or RW."""
    if type_mode is not None and \
            str(type_mode).upper() not in ('RO', 'RW'):
        raise exception.InvalidInput(reason='mode must be RO or RW')


def single_writer(multiattach, type_mode):
    """A multiattach volume whose type says ``mode = RO`` takes one
    writer; on any other volume the spec means nothing."""
    return bool(multiattach) and \
        str(type_mode or '').strip().upper() == 'RO'


@dataclasses.dataclass(frozen=True)
class Volume:
    """What the rules know of a volume: its flags, and the ``mode`` extra
    spec of its type (None when it has none)."""
    id: str
    multiattach: bool = False
    type_mode: typing.Optional[str] = None
    readonly: bool = False
    bootable: bool = False

    @property
    def single_writer(self):
        return single_writer(self.multiattach, self.type_mode)


@dataclasses.dataclass(frozen=True)
class Attachment:
    """What the rules know of an attachment.  The names are the
    columns', so a row read from the database serves as well."""
    id: str
    instance_uuid: typing.Optional[str] = None
    attached_host: typing.Optional[str] = None
    attach_mode: typing.Optional[str] = None
    attach_status: str = states.ATTACH_RESERVED
    connection_info: typing.Optional[dict] = None
    connector: typing.Optional[dict] = None
    operation: typing.Optional[str] = None


# -- what an attachment holds ------------------------------------------------
def holds_connection(attachment):
    """Whether detaching must go through the backend.  error_attaching
    normally holds nothing (the connect flow reverted its export), unless
    the backend recorded the connection after the API gave up on it."""
    if attachment.attach_status in states.ATTACH_CONNECTED_STATUSES:
        return True
    return (attachment.attach_status == states.ERROR_ATTACHING
            and bool(attachment.connection_info))


def exported(attachment):
    """Connected, with the connection info its host was given."""
    return (attachment.attach_status in states.ATTACH_CONNECTED_STATUSES
            and bool(attachment.connection_info))


def may_be_exported(attachment):
    """Whether a target may serve the attachment now: it was given
    connection info, or its connect is under way."""
    return (bool(attachment.connection_info)
            or attachment.attach_status == states.ATTACH_ATTACHING)


def completed_unconnected(attachment):
    """``attached`` without ever being connected: Nova completes the
    attachment of a volume to a shelved-offloaded server at once and
    connects it when the server is unshelved (PUT, then os-complete
    again), as Cinder allows."""
    return (attachment.attach_status == states.ATTACHED
            and not attachment.connector
            and not attachment.connection_info)


def half_connected(attachment):
    """``attaching`` without connection info: the connect has not
    finished (or its volume service went down before it did)."""
    return (attachment.attach_status == states.ATTACH_ATTACHING
            and not attachment.connection_info)


def is_writer(attachment):
    """Read-write, or taking over as the writer (it counts as the writer
    from the moment it is marked)."""
    return (attachment.attach_mode == RW
            or attachment.operation == states.TAKING_OVER)


def busy_with(attachment):
    """What another request is doing to the attachment (a disconnect, a
    takeover, a connect), or None."""
    if attachment.operation == states.DISCONNECTING:
        return 'being disconnected'
    if attachment.operation == states.TAKING_OVER:
        return 'taking over as the writer'
    if half_connected(attachment):
        return 'being connected'
    return None


def check_not_busy(attachment):
    """AttachmentBusy (409) while another request works on it."""
    what = busy_with(attachment)
    if what is not None:
        raise exception.AttachmentBusy(attachment_id=attachment.id,
                                       what=what)


# -- sharing -----------------------------------------------------------------
def _of_other_instance(instance_uuid, attachments):
    """The first of ``attachments`` that is not ``instance_uuid``'s (any,
    when it is None: an attachment of no instance shares with nobody)."""
    for other in attachments:
        if instance_uuid is None or other.instance_uuid != instance_uuid:
            return other
    return None


def sharing_matters(volume, allow_multiattach):
    """Whether another instance's attachment can change what a new
    attachment may do: always on a plain volume; on a multiattach volume
    only where multi-attach is off or the volume is bootable.  A caller
    reads the other instances' attachments only then."""
    return (not volume.multiattach or not allow_multiattach
            or volume.bootable)


def check_one_instance(volume, instance_uuid, others):
    """A plain volume serves one instance: AttachmentRefused (400) when
    one of ``others`` (its live attachments other than the one decided;
    the first of another instance suffices) is not ``instance_uuid``'s.
    The same instance may attach it again (live migration)."""
    if volume.multiattach:
        return
    other = _of_other_instance(instance_uuid, others)
    if other is not None:
        raise exception.AttachmentRefused(
            reason='Volume %s is not multiattach and already has an '
                   'attachment (%s, %s); only the same instance may '
                   'attach it again.' % (volume.id, other.id,
                                         other.attach_status))


def check_sharing(volume, instance_uuid, others, allow_multiattach):
    """Whether a new attachment for ``instance_uuid`` may join
    ``others`` (as ``check_one_instance``).  Returns True when the caller
    must also authorize sharing a bootable volume between instances."""
    check_one_instance(volume, instance_uuid, others)
    if _of_other_instance(instance_uuid, others) is None:
        return False
    if not allow_multiattach:
        raise exception.AttachmentRefused(
            reason='Multi-attach is turned off in this cloud.')
    return bool(volume.bootable)


def bootable_sharing(volume, attachments):
    """Whether making the volume bootable must ask the policy a
    reservation would (``check_sharing``): it is multiattach and its live
    ``attachments`` share it between instances (or with attachments of
    no instance)."""
    if not volume.multiattach:
        return False
    instances = {a.instance_uuid for a in attachments}
    return len(attachments) > 1 and (len(instances) > 1
                                     or None in instances)


def check_owner(attachment, volume_id, instance_uuid):
    """os-attach of an attachment for ``instance_uuid``: refused (400)
    when it belongs to another instance."""
    if attachment.instance_uuid not in (None, instance_uuid):
        raise exception.AttachmentRefused(
            reason='Attachment %s of volume %s belongs to instance %s.'
                   % (attachment.id, volume_id, attachment.instance_uuid))


def check_one_connection(volume, host, others):
    """A plain volume is connected once per consumer host: a second
    attachment (the same instance, live migrating) connects from another
    host.  DuplicateConnector (409) when one of ``others`` (its other
    live attachments; those on ``host`` suffice) holds a connection
    there."""
    if volume.multiattach or not host:
        return
    for other in others:
        if other.attached_host == host and holds_connection(other):
            raise exception.DuplicateConnector(volume_id=volume.id)


def in_use_by_host(attachment):
    """Attached, or marked detaching by os-begin_detaching with no
    disconnect under way: its host may still use it (Cinder keeps such a
    volume's attach_status ``attached``)."""
    return (attachment.attach_status == states.ATTACHED
            or (attachment.attach_status == states.ATTACH_DETACHING
                and attachment.operation != states.DISCONNECTING))


def check_not_attached(volume_id, live):
    """A volume is deleted, forced or not, only while none of its live
    attachments (``live``, read under its lock) is in use by its host
    (``in_use_by_host``): 400 naming those, as Cinder refuses."""
    attached = [a.id for a in live if in_use_by_host(a)]
    if attached:
        raise exception.InvalidVolume(
            reason='Volume %s must not be attached to be deleted; '
                   'attached: %s.' % (volume_id, ', '.join(attached)))


def changes_sharing(volume, target_multiattach, type_mode,
                    target_type_mode):
    """Whether a retype changes how the volume may be shared (its
    multiattach flag, or its type's ``mode`` spec as written): such a
    retype is allowed only on an available volume without attachments."""
    return (bool(target_multiattach) != bool(volume.multiattach)
            or type_mode != target_type_mode)


# -- modes -------------------------------------------------------------------
def check_mode(mode, what='mode'):
    """InvalidAttachMode (400) for anything but 'rw', 'ro' or None."""
    if mode is not None and mode not in MODES:
        raise exception.InvalidAttachMode(
            reason="%s must be 'rw' or 'ro', not %r" % (what, mode))


def writer_of(others):
    """The first of ``others`` that is a writer (``is_writer``), or
    None."""
    for other in others:
        if is_writer(other):
            return other
    return None


def default_mode(volume, others):
    """The mode of an attachment nobody chose one for: read-only on a
    read-only volume, and on a single-writer volume once one of
    ``others`` is its writer; read-write otherwise."""
    if volume.readonly:
        return RO
    if volume.single_writer and writer_of(others) is not None:
        return RO
    return DEFAULT_MODE


def check_allowed(volume, mode, others):
    """InvalidAttachMode (400) for a read-write attachment of a read-only
    volume, or of a single-writer volume one of ``others`` (its other live
    attachments; its writer suffices) is the writer of."""
    if mode != RW:
        return
    if volume.readonly:
        raise exception.InvalidAttachMode(
            reason='volume %s is read-only; attach it with mode ro'
                   % volume.id)
    writer = writer_of(others) if volume.single_writer else None
    if writer is not None:
        raise exception.InvalidAttachMode(
            reason='volume %s takes one writer and attachment %s is it; '
                   'attach read-only or wait until it detaches'
                   % (volume.id, writer.id))


def reserve_mode(volume, requested, others):
    """The mode a new reservation records: the requested one once it is
    allowed, read-only on a read-only volume, else None (undecided: the
    connect decides, when the writer may have gone)."""
    check_mode(requested)
    check_allowed(volume, requested, others)
    if requested is None and volume.readonly:
        return RO
    return requested


def connect_mode(volume, attachment, requested, others):
    """The mode ``attachment`` is connected in, as Cinder: the one given
    when it was made, else the connector's (``requested``), else the
    default; refused when not allowed."""
    check_mode(requested, 'connector mode')
    mode = (attachment.attach_mode or requested
            or default_mode(volume, others))
    check_allowed(volume, mode, others)
    return mode


def attach_mode(volume, attachment, requested, others):
    """The mode os-attach records: the requested one, which must be the
    one the attachment was set up with, if any, and allowed."""
    check_mode(requested)
    if attachment.attach_mode and attachment.attach_mode != requested:
        raise exception.InvalidAttachMode(
            reason='attachment %s was set up %s' % (attachment.id,
                                                    attachment.attach_mode))
    check_allowed(volume, requested, others)
    return requested


def complete_mode(volume, attachment, others):
    """The mode of an attachment completed (os-complete): its own, or,
    completed without a connect, decided now so that a single-writer
    volume never shows two writers."""
    return attachment.attach_mode or default_mode(volume, others)


# -- takeover ----------------------------------------------------------------
def check_takeover(volume, attachment, taking_over=None):
    """Whether ``attachment`` may become the writer of ``volume``
    (os-takeover); ``taking_over``: the id of an attachment of the volume
    marked taking over, or None."""
    if not volume.single_writer:
        raise exception.InvalidInput(
            reason='volume %s is not a single-writer volume (a type with '
                   'multiattach and mode = RO); its attachments are '
                   'read-write already or read-only by choice' % volume.id)
    if attachment.attach_mode == RW:
        raise exception.TakeoverRefused(
            attachment_id=attachment.id,
            reason='it is the writer of volume %s already' % volume.id)
    if volume.readonly:
        raise exception.InvalidInput(
            reason='volume %s is read-only: nobody may write it'
                   % volume.id)
    check_not_busy(attachment)
    if attachment.attach_status != states.ATTACHED or \
            not attachment.connection_info:
        raise exception.InvalidInput(
            reason='attachment %s is %s; only a connected attachment '
                   '(attached) can take over' % (attachment.id,
                                                 attachment.attach_status))
    if taking_over is not None:
        raise exception.TakeoverRefused(
            attachment_id=attachment.id,
            reason='attachment %s of volume %s is taking over' % (
                taking_over, volume.id))


# the mode a takeover gives its attachment
TAKEOVER_MODE = RW


def mode_to_restore(connector):
    """The mode of an attachment whose takeover did not finish: the one
    its recorded connector says (the database's), a reader's when it
    says none."""
    return (connector or {}).get('mode') or RO


# -- connectors --------------------------------------------------------------
_TEXT = {'type': ['string', 'null'], 'maxLength': 255,
         'description': 'a string of at most 255 characters'}

# What a connector (os-brick's ``get_connector_properties``, or the
# compute side's) must carry: a consumer host, and the keys cinder_lite
# reads with their types.  Others (wwpns, nqn, multipath...) pass: the
# drivers that need them check them.  The REST schemas and the RPC
# endpoint validate with this one schema; each ``description`` is what
# the error says the value must be.
CONNECTOR = {
    'type': 'object',
    'properties': {
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                 'pattern': r'\S',
                 'description': 'a non-empty string of at most 255 '
                                'characters'},
        'initiator': _TEXT,
        'mountpoint': _TEXT,
        'platform': _TEXT,
        'os_type': _TEXT,
        # (formats are checked on strings only)
        'ip': dict(_TEXT, anyOf=[{'format': 'ipv4'}, {'format': 'ipv6'}],
                   description='an IPv4 or IPv6 address'),
        'mode': {'type': ['string', 'null'], 'enum': [RW, RO, None],
                 'description': "'rw' or 'ro'"},
    },
    'required': ['host'],
    'description': "an object with a 'host'",
}

# Where a connector is optional (POST /attachments reserves without one):
# null or {} mean none.
CONNECTOR_OR_NONE = dict(
    CONNECTOR, type=['object', 'null'], required=[],
    anyOf=[{'maxProperties': 0}, {'required': ['host']}],
    description="null, {} or an object with a 'host'")

_CONNECTOR_VALIDATOR = jsonschema.Draft4Validator(
    CONNECTOR, format_checker=jsonschema.FormatChecker())


def check_connector(connector):
    """InvalidConnector (400) saying what is wrong with ``connector``
    against ``CONNECTOR`` (InvalidAttachMode for its mode)."""
    error = jsonschema.exceptions.best_match(
        _CONNECTOR_VALIDATOR.iter_errors(connector))
    if error is None:
        return
    if error.path:
        key = error.path[0]
    elif error.validator == 'required':
        key = error.validator_value[0]
    else:
        raise exception.InvalidConnector(reason='it must be %s'
                                         % CONNECTOR['description'])
    what = CONNECTOR['properties'][key]['description']
    if key == 'mode':
        raise exception.InvalidAttachMode(
            reason='connector mode must be %s, not %r' % (what,
                                                          error.instance))
    reason = "'%s' must be %s" % (key, what)
    if error.validator == 'anyOf':
        reason += ', not %r' % (error.instance,)
    raise exception.InvalidConnector(reason=reason)


def check_initiator(connector, protocols):
    """An iSCSI backend puts the connector's initiator into an ACL: a name
    that is not an iSCSI name is refused before anything is recorded.  NBD
    and local exports never read it (Nova's fake compute driver sends
    ``'fake'``).  ``protocols``: the storage protocols the backend's
    services reported."""
    initiator = connector.get('initiator')
    if initiator is None or iscsi_name.valid(initiator):
        return
    if 'iscsi' in protocols:
        raise exception.InvalidConnector(
            reason="'initiator' must be an iSCSI name (iqn.YYYY-MM.domain"
                   "[:name], eui.<16 hex> or naa.<16 or 32 hex>) for an "
                   "iSCSI backend, not %r" % initiator)
