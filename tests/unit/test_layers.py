"""The import graph of cinder_lite only looks down (``python -m
tests.layers``; the floors are explained in doc/source/layout.rst), and the
check finds each kind of wrong arrow in a small package made for it."""
import textwrap

from tests import layers


def test_every_arrow_of_cinder_lite_looks_down(capsys):
    code = layers.main()
    out = capsys.readouterr().out
    assert code == 0, out
    assert 'every arrow looks down' in out


def _house(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / 'cinder_lite' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for directory in [tmp_path / 'cinder_lite'] + [
            p for p in (tmp_path / 'cinder_lite').rglob('*') if p.is_dir()]:
        (directory / '__init__.py').touch()
    return layers.check(str(tmp_path))


def test_a_sound_house_has_no_problem(tmp_path):
    assert _house(tmp_path, {
        'common/exception.py': '',
        'db/volumes.py': 'from cinder_lite.common import exception\n',
        'scheduler/rpcapi.py': 'from cinder_lite.common import exception\n',
        'volume/rpcapi.py': 'from cinder_lite.common import exception\n',
        'volume/manager.py': 'from cinder_lite.db import volumes\n'
                             'from cinder_lite.scheduler import rpcapi\n',
        'scheduler/manager.py': 'from cinder_lite.volume import rpcapi\n',
        'api/rpcapi.py': 'from cinder_lite.common import exception\n',
        'connector/client.py': 'from cinder_lite.api import rpcapi\n'
                               'from cinder_lite.common import exception\n',
        'cmd/volume.py': 'from cinder_lite.volume import manager\n',
    }) == []


def test_an_arrow_up_a_floor_is_found(tmp_path):
    problems = _house(tmp_path, {
        'common/service.py': 'from cinder_lite.db import api as db_api\n',
        'db/api.py': '',
    })
    assert problems == [
        'cinder_lite/common/service.py:1: cinder_lite.common.service -> '
        'cinder_lite.db.api: a back-arrow: db is above ground']


def test_peers_talk_only_through_rpcapi(tmp_path):
    problems = _house(tmp_path, {
        'scheduler/host_state.py': '',
        'scheduler/rpcapi.py': '',
        'volume/actions.py': 'from cinder_lite.scheduler import rpcapi\n'
                             'from cinder_lite.scheduler import host_state\n',
    })
    assert len(problems) == 1
    assert 'volume.actions -> cinder_lite.scheduler.host_state: peers ' \
        'talk only through rpcapi' in problems[0]


def test_a_doorway_imports_only_the_ground_floor(tmp_path):
    problems = _house(tmp_path, {
        'db/models.py': '',
        'volume/rpcapi.py': 'from cinder_lite.db import models\n',
    })
    assert len(problems) == 1
    assert 'a doorway (rpcapi) imports only the ground floor' in \
        problems[0]


def test_the_compute_side_uses_only_doorways(tmp_path):
    problems = _house(tmp_path, {
        'db/api.py': '',
        'api/rpcapi.py': '',
        'connector/client.py': 'from cinder_lite.api import rpcapi\n'
                               'from cinder_lite.db import api\n',
    })
    assert len(problems) == 1
    assert 'connector.client -> cinder_lite.db.api: the compute side' in \
        problems[0]


def test_a_circle_hidden_in_a_function_is_found(tmp_path):
    problems = _house(tmp_path, {
        'common/config.py': '''\
            def parse_args():
                from cinder_lite.common import opts
            ''',
        'common/opts.py': 'from cinder_lite.common import config\n',
    })
    assert problems == [
        'circle: cinder_lite.common.config <-> cinder_lite.common.opts']


def test_a_package_on_no_floor_is_found(tmp_path):
    problems = _house(tmp_path, {'replication/manager.py': ''})
    assert 'cinder_lite/replication/manager.py: module ' \
        'cinder_lite.replication.manager is on no floor' in '\n'.join(problems)
