"""What a volume type's QoS specs mean for one volume's connections.

The consumer of QoS specs says who applies them: ``front-end`` (the host
that attaches the volume, e.g. Nova's hypervisor: the specs are handed to
it in the connection info's ``qos_specs``, as Cinder does), ``back-end``
(the storage target: ``cinder_lite.volume.targets`` apply what they can,
see doc/source/qos.rst) or ``both``.

Per-GiB keys are resolved against the volume's size as Cinder resolves
them: ``<limit>_per_gb`` times the size, at least ``<limit>_per_gb_min``
and at most ``<limit>_max``, for the six limits below.
"""
import logging

LOG = logging.getLogger(__name__)

FRONT_END = 'front-end'
BACK_END = 'back-end'
BOTH = 'both'
CONSUMERS = (FRONT_END, BACK_END, BOTH)
DEFAULT_CONSUMER = BACK_END

# the limits a per-GiB key can scale
SCALABLE = ('read_iops_sec', 'read_bytes_sec', 'write_iops_sec',
            'write_bytes_sec', 'total_iops_sec', 'total_bytes_sec')


def resolve_per_gb(specs, size):
    """``specs`` with the per-GiB keys of ``SCALABLE`` limits replaced by
    the limit for a volume of ``size`` GiB.  A per-GiB key whose values
    are not integers is handed on as it is (the consumer decides), with a
    warning."""
    resolved = dict(specs)
    for limit in SCALABLE:
        per_gb = '%s_per_gb' % limit
        if per_gb not in resolved:
            continue
        minimum_key, maximum_key = '%s_per_gb_min' % limit, '%s_max' % limit
        try:
            minimum = int(resolved.get(minimum_key) or 0)
            value = max(minimum, int(resolved[per_gb]) * int(size))
            if resolved.get(maximum_key) is not None:
                value = min(value, int(resolved[maximum_key]))
        except (TypeError, ValueError):
            LOG.warning('QoS key %s (or its _min/_max) is not an integer; '
                        'handed on unresolved', per_gb)
            continue
        for key in (per_gb, minimum_key, maximum_key):
            resolved.pop(key, None)
        resolved[limit] = value
    return resolved


def for_consumer(qos, consumer, size):
    """The specs (per-GiB keys resolved; keys set to null left out) that
    ``consumer`` (FRONT_END or BACK_END) applies, of ``qos`` (``{'consumer':
    ..., 'specs': {...}}`` or None); None when it applies none."""
    if not qos or qos['consumer'] not in (consumer, BOTH):
        return None
    specs = {k: v for k, v in (qos['specs'] or {}).items() if v is not None}
    return resolve_per_gb(specs, size)


def not_applied(specs, what, why):
    """Log that back-end ``specs`` (for ``what``, an export) cannot be
    applied, and ``why``; nothing when there are none."""
    if specs:
        LOG.warning('%s: back-end QoS specs %s not applied: %s', what,
                    ', '.join('%s=%s' % kv for kv in sorted(specs.items())),
                    why)
