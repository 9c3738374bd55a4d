"""``db.services.serves``: live_members's verdict on the one member a
detach reads with its attachment (``db.attachments.get_to_detach``)."""
import datetime

from cinder_lite.db import models
from cinder_lite.db import services as db_services

DOWN_TIME = 20


def _service(host, cluster_name=None, age=1):
    beat = None if age is None else \
        models.utcnow() - datetime.timedelta(seconds=age)
    return db_services.ExportService(host, cluster_name, beat)


def test_the_backends_own_service_while_it_beats():
    assert db_services.serves(_service('node@file'), 'node@file', DOWN_TIME)


def test_a_member_of_the_backends_cluster_while_it_beats():
    member = _service('node2@file', cluster_name='cl@file')
    assert db_services.serves(member, 'cl@file', DOWN_TIME)


def test_no_service_at_all():
    assert not db_services.serves(None, 'node@file', DOWN_TIME)


def test_a_service_of_another_backend():
    assert not db_services.serves(_service('node@other'), 'node@file',
                                  DOWN_TIME)
    member = _service('node2@file', cluster_name='cl2@file')
    assert not db_services.serves(member, 'cl@file', DOWN_TIME)


def test_a_service_whose_beat_is_older_than_the_down_time():
    assert not db_services.serves(_service('node@file', age=DOWN_TIME + 5),
                                  'node@file', DOWN_TIME)
    assert not db_services.serves(_service('node@file', age=None),
                                  'node@file', DOWN_TIME)
