"""What a DELETE reads of a volume's other attachments under its lock
(``db_attachments.others_of``, with the connection info of those on its
host through a CASE of a JSON column), checked against the statements it
replaces on the database servers, whose JSON types differ from
SQLite's."""
import pytest

from tests.functional.test_locked_volume import check_what_a_detach_reads
from tests.harness import cluster as cluster_mod
from tests.harness import stack as stack_mod


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_what_a_detach_reads_on_a_database_server(tmp_path, kind):
    with stack_mod.on_server(tmp_path / 'st', kind, 'cl_reads') as api:
        check_what_a_detach_reads(api)
