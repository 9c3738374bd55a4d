"""What a volume type asks of a backend, and whether a backend's reported
capabilities give it: the one definition the scheduler (its filters and
its index), the API's create check, retype and the admin handlers share.

A type's extra specs that are unscoped or scoped ``capabilities:`` are
requirements; other scopes (``qos:``, ``os:`` ...) and keys that describe
attachments rather than storage (``mode``) are not.

Requirement grammar (Cinder's): ``<is> True``, ``<in> sub``, ``<or> a <or>
b``, ``== 10`` / ``!= 10`` / ``>= 10`` / ``<= 10`` / ``< 10`` / ``> 10``
(numeric), ``s== x`` / ``s!= x`` / ``s< x`` / ``s<= x`` / ``s> x`` / ``s>=
x`` (string), a bare ``= 10`` meaning numeric ``>=``, or a plain value
compared as a string.
"""
import json
import operator

from cinder_lite.common import exception

# extra specs about attachments, not storage
NOT_CAPABILITIES = frozenset(['mode'])
# What differs between backends that are otherwise alike: capacity (it
# changes with every report) and the backend's name.  Everything else a
# backend reports is the same for every backend of a group.
CAPACITY_KEYS = frozenset(['total_capacity_gb', 'free_capacity_gb',
                           'provisioned_capacity_gb',
                           'allocated_capacity_gb'])
NAME_KEY = 'volume_backend_name'
PER_BACKEND_KEYS = CAPACITY_KEYS | {NAME_KEY}


def _bool(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ('true', '1', 'yes', 'on')


def _num(value):
    return float(value)


_NUMERIC = {'=': operator.ge, '==': operator.eq, '!=': operator.ne,
            '>=': operator.ge, '<=': operator.le, '<': operator.lt,
            '>': operator.gt}
_STRING = {'s==': operator.eq, 's!=': operator.ne, 's<': operator.lt,
           's<=': operator.le, 's>': operator.gt, 's>=': operator.ge}
OPERATORS = frozenset(list(_NUMERIC) + list(_STRING) + ['<is>', '<in>',
                                                          '<or>'])


def validate(requirement):
    """Raise InvalidInput when a requirement cannot be evaluated."""
    words = str(requirement).split()
    if not words:
        return
    op = words[0]
    if op in _NUMERIC:
        try:
            _num(' '.join(words[1:]))
        except ValueError:
            raise exception.InvalidInput(
                reason='%r needs a number after %s' % (requirement, op))
    elif op == '<is>' and ' '.join(words[1:]).lower() not in ('true',
                                                              'false'):
        raise exception.InvalidInput(
            reason='%r: <is> takes True or False' % requirement)


def match(value, requirement):
    """True when the capability ``value`` satisfies ``requirement``."""
    if value is None:
        return False
    requirement = str(requirement)
    words = requirement.split()
    if not words:
        return str(value) == requirement
    op, rest = words[0], ' '.join(words[1:])
    if op == '<is>':
        return _bool(value) == _bool(rest)
    if op == '<in>':
        return rest in str(value)
    if op == '<or>':
        choices = [w for w in words if w != '<or>']
        return str(value) in choices
    if op in _STRING:
        return _STRING[op](str(value), rest)
    if op in _NUMERIC:
        try:
            return _NUMERIC[op](_num(value), _num(rest))
        except (TypeError, ValueError):
            return False
    if isinstance(value, bool):
        return value == _bool(requirement)
    return str(value) == requirement


def capability_requirements(extra_specs):
    """The extra specs that the storage must satisfy, scope stripped."""
    wanted = {}
    for key, requirement in (extra_specs or {}).items():
        scope, sep, name = key.partition(':')
        if sep and scope != 'capabilities':
            continue
        name = name if sep else key
        if name in NOT_CAPABILITIES:
            continue
        wanted[name] = requirement
    return wanted


def satisfies(capabilities, extra_specs):
    return all(match(capabilities.get(name), requirement)
               for name, requirement
               in capability_requirements(extra_specs).items())


def signature(capabilities):
    """What backends of one group report alike: everything but capacity
    and name."""
    return json.dumps({k: v for k, v in (capabilities or {}).items()
                       if k not in PER_BACKEND_KEYS},
                      sort_keys=True, default=str)


def pinned_name(required):
    """The backend name capability ``required`` (as
    ``capability_requirements`` gives it) asks for as a plain value,
    compared as a string; None when it asks for none or with an
    operator."""
    name = required.get(NAME_KEY)
    words = str(name).split() if name is not None else ()
    if words and words[0] not in OPERATORS:
        return str(name)
    return None


def capacity_limit(caps):
    """The most a backend could ever hold: its size, times the
    over-subscription ratio when it is thin."""
    total = float(caps.get('total_capacity_gb') or 0)
    if caps.get('thin_provisioning_support'):
        total *= float(caps.get('max_over_subscription_ratio') or 1)
    return total
