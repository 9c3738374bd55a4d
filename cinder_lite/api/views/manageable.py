"""Views of ``/manageable_volumes`` and ``/manageable_snapshots``
(Cinder's keys: the summary, and the detail with why an entry is not
safe, the id of the volume or snapshot that owns it and the driver's
extra information)."""

_SUMMARY = ('reference', 'size', 'safe_to_manage')
_DETAIL = ('reason_not_safe', 'cinder_id', 'extra_info')


def entries(found, kind, detailed):
    keys = _SUMMARY + (('source_reference',) if kind == 'snapshots'
                       else ())
    if detailed:
        keys += _DETAIL
    return {'manageable-%s' % kind: [{k: entry.get(k) for k in keys}
                                     for entry in found]}
