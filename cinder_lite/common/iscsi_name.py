"""iSCSI names as RFC 7143 spells them: ``iqn.YYYY-MM.reversed.domain[:x]``,
``eui.`` plus 16 hex digits, ``naa.`` plus 16 or 32 hex digits; at most
223 bytes."""
import re

MAX_LENGTH = 223
_FORMS = (
    re.compile(r'^iqn\.\d{4}-\d{2}\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?'
               r'(:[\x21-\x7e]+)?$', re.IGNORECASE),
    re.compile(r'^eui\.[0-9a-f]{16}$', re.IGNORECASE),
    re.compile(r'^naa\.([0-9a-f]{16}|[0-9a-f]{32})$', re.IGNORECASE),
)


def valid(name):
    return (isinstance(name, str) and len(name.encode()) <= MAX_LENGTH and
            any(form.match(name) for form in _FORMS))
