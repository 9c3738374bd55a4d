"""A finding: what broke, in which burst, about which objects; and how the
report tells two findings of one sort apart.

Every finding fails the run: there is no list of tolerated ones."""
import dataclasses
import re


@dataclasses.dataclass
class Finding:
    kind: str
    detail: str
    burst: int
    op: str = None
    status: int = None
    volume_id: str = None
    attachment_id: str = None
    type_id: str = None
    evidence: str = None


def signature(finding):
    """What tells two findings apart: kind, request and the message with
    its ids and numbers blanked."""
    text = re.sub(r'[0-9a-f]{8}-[0-9a-f-]{27}', 'ID', finding.detail)
    text = re.sub(r'\d+', 'N', text)
    return finding.kind, finding.op, finding.status, text[:160]
