"""Matching of one capability value against one extra-spec requirement.

Requirement grammar (Cinder's): ``<is> True``, ``<in> sub``, ``<or> a <or>
b``, ``== 10`` / ``!= 10`` / ``>= 10`` / ``<= 10`` / ``< 10`` / ``> 10``
(numeric), ``s== x`` / ``s!= x`` / ``s< x`` / ``s<= x`` / ``s> x`` / ``s>=
x`` (string), a bare ``= 10`` meaning numeric ``>=``, or a plain value
compared as a string.
"""
import operator

from cinder_lite.common import exception


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
