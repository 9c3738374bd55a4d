"""The world the fuzzer plays in: the projects and callers, the kinds of
volume type and the slots the plans name, and the status strings the
checks read (``cinder_lite.common.states`` owns them)."""
import collections

PROJECT = '0123456789abcdef0123456789abcdef'
OTHER_PROJECT = 'fedcba9876543210fedcba9876543210'
# an id nothing ever has: requests about an object the model has not got
UNKNOWN_ID = '00000000-0000-4000-8000-00000000dead'

# -- callers ------------------------------------------------------------------

Caller = collections.namedtuple('Caller', 'user project roles service')

CALLERS = {
    'admin': Caller('admin', PROJECT, 'admin,member,reader', False),
    'member': Caller('member', PROJECT, 'member,reader', False),
    'reader': Caller('reader', PROJECT, 'reader', False),
    'other': Caller('intruder', OTHER_PROJECT, 'member,reader', False),
    'compute': Caller('nova', PROJECT, 'member,reader', True),
}
# callers that may change the project's volumes and attachments
WRITERS = ('member', 'member', 'member', 'admin', 'compute')

# -- volume types -------------------------------------------------------------

TYPE_KINDS = {
    'plain': {},
    'multi': {'multiattach': '<is> True'},
    'single': {'multiattach': '<is> True', 'mode': 'RO'},
    'pin-ma': {'volume_backend_name': 'ma'},
    'pin-noma': {'volume_backend_name': 'noma'},
    # no backend can hold it: its volumes end in error
    'multi-noma': {'multiattach': '<is> True', 'volume_backend_name': 'noma'},
}
MULTI_KINDS = ('multi', 'single', 'multi-noma')
TYPE_SLOTS = tuple('fz-%s-%d' % (kind, k) for kind in TYPE_KINDS
                   for k in range(2))
DEFAULT_TYPE = '__DEFAULT__'
VOLUME_SLOTS = 10
MAX_PER_SLOT = 2
HOSTS = ('compute-1', 'compute-2', 'compute-3')
INSTANCES = 5

# -- statuses (the wire strings; cinder_lite.common.states owns them) --------

SETTLED = ('available', 'in-use', 'attaching', 'detaching', 'reserved')
TRANSIENT_VOLUME = ('creating', 'deleting', 'extending', 'retyping',
                    'backing-up', 'reverting', 'maintenance')
# a migration under way (the admin view's migration_status)
TRANSIENT_MIGRATION = ('starting', 'migrating', 'completing')
TRANSIENT_BACKUP = ('creating', 'deleting', 'restoring')
SUSPECT_VOLUME = ('error_deleting', 'error_extending', 'error_restoring')
CONNECTED = ('attaching', 'attached', 'detaching', 'error_detaching')
# a reservation of the legacy os-reserve (status_reason below) shows its
# volume attaching, as Cinder's
LEGACY_RESERVED = 'reserved (os-reserve)'
LEGACY_REASON = 'reserved by os-reserve'
DERIVED = (('attached', 'in-use'), ('attaching', 'attaching'),
           ('detaching', 'detaching'), (LEGACY_RESERVED, 'attaching'),
           ('reserved', 'reserved'))


def status_consistent(volume_status, statuses):
    """Whether a settled volume status fits its live attachments: the one
    they imply, or ``detaching`` marked by os-begin_detaching on a
    volume with several attachments (none of them marked, as Cinder)."""
    if volume_status == derive(statuses):
        return True
    return volume_status == 'detaching' and \
        list(statuses).count('attached') > 1


def shown_status(attachment):
    """An attachment's status as the volume status derives from it."""
    if attachment['status'] == 'reserved' and \
            attachment.get('status_reason') == LEGACY_REASON:
        return LEGACY_RESERVED
    return attachment['status']


def derive(statuses):
    """The volume status live attachments imply (DESIGN §4)."""
    present = set(statuses)
    return next((v for a, v in DERIVED if a in present), 'available')


def access_mode(info):
    info = info or {}
    return info.get('access_mode') or (info.get('data') or {}).get(
        'access_mode')
