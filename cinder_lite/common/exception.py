"""Domain errors.

Errors carry a message, never an HTTP code: the API layer decides how each
named error reaches a client (see ``cinder_lite.api.faults``).
"""


class CinderLiteError(Exception):
    """Base class; ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)


# -- not found -------------------------------------------------------------
class NotFound(CinderLiteError):
    msg_fmt = 'Resource could not be found.'


class VolumeNotFound(NotFound):
    msg_fmt = 'Volume %(volume_id)s could not be found.'


class VolumeTypeNotFound(NotFound):
    msg_fmt = 'Volume type %(type_id)s could not be found.'


class ProjectDefaultTypeNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Default type for project %(project_id)s not found.'


class VolumeTypeNotFoundByName(NotFound):
    msg_fmt = 'Volume type with name %(name)s could not be found.'


class ExtraSpecNotFound(NotFound):
    msg_fmt = 'Volume type %(type_id)s has no extra spec with key %(key)s.'


class VolumeMetadataNotFound(NotFound):
    msg_fmt = 'Volume %(volume_id)s has no metadata with key %(key)s.'


class VolumeImageMetadataNotFound(NotFound):
    msg_fmt = ('Volume %(volume_id)s has no image metadata with key '
               '%(key)s.')


class ImageNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Image %(image_id)s could not be found.'


class ExtensionNotFound(NotFound):
    msg_fmt = 'Extension %(alias)s could not be found.'


class TypeAccessListNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Access list not available for public volume types.'


class TypeAccessNotFound(NotFound):
    msg_fmt = ('Volume type access not found for %(type_id)s / '
               '%(project_id)s combination.')


class AttachmentNotFound(NotFound):
    msg_fmt = 'Volume attachment %(attachment_id)s could not be found.'


class ServiceNotFound(NotFound):
    msg_fmt = 'Service %(binary)s on host %(host)s could not be found.'


class HostNotFound(NotFound):
    msg_fmt = 'Host %(host)s could not be found.'


class MessageNotFound(NotFound):
    msg_fmt = 'Message %(message_id)s could not be found.'


class TransferNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Transfer %(transfer_id)s could not be found.'


class QoSSpecsNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'No such QoS spec %(specs_id)s.'


class QoSSpecsKeyNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'QoS spec %(specs_id)s has no spec with key %(specs_key)s.'


class SnapshotNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Snapshot %(snapshot_id)s could not be found.'


class BackupNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Backup %(backup_id)s could not be found.'


class BackupMetadataNotFound(NotFound):
    msg_fmt = 'Backup %(backup_id)s has no metadata with key %(key)s.'


class GroupTypeNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Group type %(group_type_id)s could not be found.'


class GroupTypeNotFoundByName(NotFound):
    msg_fmt = 'Group type with name %(group_type_name)s could not be found.'


class GroupTypeSpecsNotFound(NotFound):
    # Cinder's words
    msg_fmt = ('Group Type %(group_type_id)s has no specs with key '
               '%(group_specs_key)s.')


class GroupTypeAccessNotFound(NotFound):
    msg_fmt = ('Group type access not found for %(group_type_id)s / '
               '%(project_id)s combination.')


class GroupNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'Group %(group_id)s could not be found.'


class GroupSnapshotNotFound(NotFound):
    # Cinder's words
    msg_fmt = 'GroupSnapshot %(group_snapshot_id)s could not be found.'


class MarkerNotFound(NotFound):
    # Cinder's words (404 on snapshot lists)
    msg_fmt = 'Marker %(marker)s could not be found.'


class SnapshotMetadataNotFound(NotFound):
    msg_fmt = ('Snapshot %(snapshot_id)s has no metadata with key '
               '%(key)s.')


class MetadataChanged(CinderLiteError):
    """An ``If-Match`` ETag names metadata that has changed since."""

    msg_fmt = 'The metadata of volume %(volume_id)s changed since.'


# -- invalid input or state -----------------------------------------------
class Invalid(CinderLiteError):
    msg_fmt = 'Unacceptable parameters.'


class BackendFrozen(Invalid):
    msg_fmt = ('Invalid input received: Modification operations are not '
               'allowed on frozen storage backends (%(backend)s).')


class InvalidInput(Invalid):
    msg_fmt = 'Invalid input received: %(reason)s'


class InvalidVolume(Invalid):
    msg_fmt = 'Invalid volume: %(reason)s'


class InvalidHost(Invalid):
    msg_fmt = 'Invalid host: %(reason)s'


class InvalidSnapshot(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid snapshot: %(reason)s'


class ImageUnacceptable(Invalid):
    # Cinder's words
    msg_fmt = 'Image %(image_id)s is unacceptable: %(reason)s'


class ImageServiceError(Invalid):
    """Glance could not be reached or did not do what was asked (a 400,
    as Cinder answers then)."""
    msg_fmt = 'The image service failed: %(reason)s'


class InvalidBackup(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid backup: %(reason)s'


class BackupDriverError(CinderLiteError):
    msg_fmt = 'The backup store failed: %(reason)s'


class InvalidGroup(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid Group: %(reason)s'


class InvalidGroupType(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid group type: %(reason)s'


class InvalidGroupSnapshot(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid GroupSnapshot: %(reason)s'


class GroupTypeInUse(Invalid):
    # Cinder's words
    msg_fmt = ('Group Type %(group_type_id)s deletion is not allowed with '
               'groups present with the type.')


class CannotHoldWrites(CinderLiteError):
    """A target cannot pause the writers of a volume (a group snapshot
    that must be one point in time is refused)."""
    msg_fmt = 'The writers of volume %(volume_id)s cannot be held: %(reason)s'


class InvalidVolumeType(Invalid):
    msg_fmt = 'Invalid volume type: %(reason)s'


class ManageExistingInvalidReference(Invalid):
    # Cinder's words
    msg_fmt = ('Manage existing volume failed due to invalid backend '
               'reference %(existing_ref)s: %(reason)s')


class ManageExistingAlreadyManaged(Invalid):
    msg_fmt = ('Unable to manage existing volume. Volume %(volume_ref)s '
               'already managed.')


class InvalidTransition(Invalid):
    """A compare-and-swap found the row in a state the change does not
    allow."""

    msg_fmt = ('Cannot move %(resource)s %(id)s to %(target)s: its status '
               'is %(actual)s, expected one of %(allowed)s.')


class InvalidAuthKey(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid auth key: %(reason)s'


class InvalidQoSSpecs(Invalid):
    # Cinder's words
    msg_fmt = 'Invalid qos specs: %(reason)s'


class QoSSpecsInUse(Invalid):
    # Cinder answers 400 "Qos specs still in use." (a conflict in its
    # exception, a 400 on the wire)
    msg_fmt = 'Qos specs still in use.'


class InvalidAttachMode(Invalid):
    msg_fmt = 'Invalid attach mode: %(reason)s'


class InvalidConnector(Invalid):
    msg_fmt = 'Invalid connector: %(reason)s'


class AttachmentRefused(Invalid):
    msg_fmt = '%(reason)s'


class NoValidBackend(Invalid):
    msg_fmt = 'No valid backend was found. %(reason)s'


class ConnectFailed(CinderLiteError):
    msg_fmt = 'The backend could not complete the connection: %(reason)s'


class ConnectRefused(Invalid):
    """The backend refused the connection because of what was asked (a
    connector or mode it cannot serve); the attachment is recorded
    ``error_attaching`` with the reason."""
    msg_fmt = 'The backend refused the connection: %(reason)s'


class DisconnectFailed(ConnectFailed):
    msg_fmt = 'The backend could not complete the disconnect: %(reason)s'


class DisconnectRefused(ConnectRefused):
    msg_fmt = 'The backend refused the disconnect: %(reason)s'


class BackendError(CinderLiteError):
    msg_fmt = 'The backend failed: %(reason)s'


class ServiceUnavailable(Invalid):
    msg_fmt = 'Service %(host)s is down: %(reason)s'


class DatabaseUnavailable(ServiceUnavailable):
    """A service answered a call but could not reach its database (down,
    restarting, the connection lost): the caller may retry."""
    msg_fmt = 'Service %(host)s could not answer: %(reason)s'


class NoauthOffLoopback(CinderLiteError):
    msg_fmt = ('auth_strategy = noauth trusts X-Auth-Token and X-Roles as '
               'sent, so it serves loopback only, and osapi_volume_listen '
               'is %(address)s. Listen on 127.0.0.1 (--listen), use '
               'auth_strategy = keystone, or set [DEFAULT] '
               'allow_noauth_off_loopback = true to serve anyone who can '
               'reach that address as any user.')


class CannotListen(CinderLiteError):
    msg_fmt = ('Cannot listen on %(address)s:%(port)s: %(reason)s. Stop '
               'what holds it or choose another address and port with '
               '--listen and --port, or [DEFAULT] osapi_volume_listen and '
               'osapi_volume_listen_port.')


# -- conflicts --------------------------------------------------------------
class Conflict(CinderLiteError):
    msg_fmt = 'Conflict with the current state of the resource.'


class AttachmentInUse(Conflict):
    msg_fmt = ('Attachment %(attachment_id)s is connected for instance '
               '%(instance)s by a compute service; detach it through that '
               'service (or as an administrator).')


class DuplicateConnector(Conflict):
    # Cinder's words (409 from attachment update)
    msg_fmt = ('Resource conflict: duplicate connectors detected on volume '
               '%(volume_id)s')


class TakeoverRefused(Conflict):
    msg_fmt = 'Attachment %(attachment_id)s cannot take over: %(reason)s'


class DetachNeedsAttachment(Conflict):
    # 409 as Cinder's os-detach of a volume with several attachments
    msg_fmt = ('Volume %(volume_id)s has %(count)d attachments; name the '
               'one to detach with attachment_id.')


class HostFenced(Conflict):
    """A host fenced off a volume (os-host-fences) asks for an export of
    it."""
    msg_fmt = 'host %(host)s is fenced off volume %(volume_id)s'


class AttachmentBusy(Conflict):
    msg_fmt = ('Attachment %(attachment_id)s is %(what)s by another '
               'request; try again when that has finished.')


class VolumeTypeExists(Conflict):
    msg_fmt = 'Volume type with name %(name)s already exists.'


class VolumeTypeDefaultDeletion(Invalid):
    # Cinder's words
    msg_fmt = ('The volume type %(type_id)s is a default volume type and '
               'cannot be deleted.')


class VolumeTypeInUse(Invalid):
    # Cinder's words
    msg_fmt = 'Target volume type is still in use.'


class GroupTypeExists(Conflict):
    # Cinder's words
    msg_fmt = 'Group Type %(id)s already exists.'


class GroupTypeAccessExists(Conflict):
    msg_fmt = ('Group type access for %(group_type_id)s / %(project_id)s '
               'combination already exists.')


class QoSSpecsExists(Conflict):
    # Cinder's words
    msg_fmt = 'QoS Specs %(specs_id)s already exists.'


class TypeAccessExists(Conflict):
    msg_fmt = ('Volume type access for %(type_id)s / %(project_id)s '
               'combination already exists.')


# -- over quota (413) -------------------------------------------------------
class OverQuota(CinderLiteError):
    msg_fmt = 'Quota exceeded for resources: %(overs)s'


class VolumeLimitExceeded(OverQuota):
    # Cinder's words
    msg_fmt = ("Maximum number of volumes allowed (%(allowed)d) exceeded "
               "for quota '%(name)s'.")


class GroupLimitExceeded(OverQuota):
    # Cinder's words
    msg_fmt = 'Maximum number of groups allowed (%(allowed)d) exceeded'


class SnapshotLimitExceeded(OverQuota):
    # Cinder's words
    msg_fmt = ("Maximum number of snapshots allowed (%(allowed)d) "
               "exceeded for quota '%(name)s'.")


class VolumeSizeExceedsAvailableQuota(OverQuota):
    # Cinder's words
    msg_fmt = ('Requested volume or snapshot exceeds allowed %(name)s '
               'quota. Requested %(requested)sG, quota is %(quota)sG and '
               '%(consumed)sG has been consumed.')


class VolumeSizeExceedsLimit(OverQuota):
    # Cinder's words
    msg_fmt = ('Requested volume size %(size)dG is larger than maximum '
               'allowed limit %(limit)dG.')


# -- authorisation ----------------------------------------------------------
class PolicyNotAuthorized(CinderLiteError):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class NotAuthorized(CinderLiteError):
    msg_fmt = 'Not authorized.'
