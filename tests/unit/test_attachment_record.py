"""``db.attachments.new``: a new attachment as a ``Record`` before it is
written."""
import pytest

from cinder_lite.db import attachments as db_attachments


def test_a_new_attachment_has_every_column_and_only_those():
    new = db_attachments.new({'id': 'a1', 'attach_status': 'reserved'})
    assert (new.id, new.attach_status, new.connector) == (
        'a1', 'reserved', None)
    with pytest.raises(TypeError, match='no attachment column bogus'):
        db_attachments.new({'id': 'a2', 'bogus': 1})
