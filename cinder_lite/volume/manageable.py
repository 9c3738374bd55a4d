"""What a backend holds that volumes and snapshots could be made of
(``GET /manageable_volumes``, ``/manageable_snapshots``): the entries a
driver lists, judged against the database (an object whose name says it
is the storage of a live volume or snapshot is not safe to manage) and
paged as Cinder pages them (sorted by ``reference`` or ``size``, then
``marker``, ``offset`` and ``limit``).

Both drivers name their storage ``volume-<id>`` and ``snapshot-<id>``:
``owner_id`` reads the id a reference names, which is how a reference
that is already managed is refused.
"""
import functools
import json
import re

from cinder_lite.common import exception

SORT_KEYS = ('reference', 'size')
SORT_DIRS = ('asc', 'desc')

_UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
_NAMED = {'volume': re.compile('^volume-(%s)$' % _UUID),
          'snapshot': re.compile('^snapshot-(%s)$' % _UUID)}
_ID = re.compile('^%s$' % _UUID)


def owner_id(ref, kind='volume'):
    """The id of the volume (``kind`` 'snapshot': snapshot) whose storage
    ``ref`` names by our naming, or None."""
    if not isinstance(ref, dict):
        return None
    name = ref.get('source-name')
    if isinstance(name, str):
        match = _NAMED[kind].match(name)
        if match:
            return match.group(1)
    ident = ref.get('source-id')
    if isinstance(ident, str) and _ID.match(ident):
        return ident
    return None


def check_ref(ref):
    """A reference is a dict naming one object by ``source-name`` or
    ``source-id`` (a string each); InvalidInput otherwise."""
    if not isinstance(ref, dict) or not ref:
        raise exception.InvalidInput(
            reason='ref must be a dict such as {"source-name": "..."}')
    keys = set(ref) & {'source-name', 'source-id'}
    if not keys:
        raise exception.ManageExistingInvalidReference(
            existing_ref=ref,
            reason='it names no object: give source-name or source-id')
    for key in keys:
        if not isinstance(ref[key], str) or not ref[key]:
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='%s must be a non-empty string'
                                         % key)


def judge(entries, live, kind='volume'):
    """Cinder's fields for the driver's ``entries``: ``live`` maps the
    ids of live volumes (snapshots) to anything; an entry whose name
    says it belongs to one is not safe to manage and names it as
    ``cinder_id``."""
    key = '%s_id' % kind
    judged = []
    for entry in entries:
        owner = entry.get(key)
        reason = entry.get('reason_not_safe')
        if owner is not None and owner in live:
            reason = 'already managed'
        item = {
            'reference': entry['reference'],
            'size': entry['size'],
            'safe_to_manage': reason is None,
            'reason_not_safe': reason,
            'cinder_id': owner if owner in live else None,
            'extra_info': entry.get('extra_info'),
        }
        if kind == 'snapshot':
            item['source_reference'] = entry.get('source_reference')
        judged.append(item)
    return judged


def _reference_key(entry):
    return json.dumps(entry['reference'], sort_keys=True)


def page(entries, marker=None, limit=None, offset=None,
         sort_keys=('reference',), sort_dirs=('asc',)):
    """Sort and cut ``entries`` as Cinder's ``paginate_entries_list``:
    ``marker`` is the reference (JSON) of the last entry of the page
    before; InvalidInput for a marker that names no entry."""
    sort_keys = list(sort_keys or ['reference'])
    sort_dirs = list(sort_dirs or [])
    sort_dirs += ['asc'] * (len(sort_keys) - len(sort_dirs))

    def value(entry, key):
        return _reference_key(entry) if key == 'reference' else entry[key]

    def compare(a, b):
        for key, direction in zip(sort_keys, sort_dirs):
            x, y = value(a, key), value(b, key)
            if x != y:
                result = -1 if x < y else 1
                return result if direction == 'asc' else -result
        return 0

    ordered = sorted(entries, key=functools.cmp_to_key(compare))
    start = 0
    if marker:
        try:
            wanted = json.loads(marker) if isinstance(marker, str) \
                else marker
        except ValueError:
            raise exception.InvalidInput(
                reason='marker %s can not be analysed, please use json '
                       'like format' % marker) from None
        for index, entry in enumerate(ordered):
            if entry['reference'] == wanted:
                start = index + 1
                break
        else:
            raise exception.InvalidInput(
                reason='marker not found: %s' % marker)
    start += offset or 0
    end = None if limit is None else start + limit
    return ordered[start:end]
