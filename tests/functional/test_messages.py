"""User messages over HTTP: filters, and 3.5's paging and sorting."""
import pytest

from tests.harness import stack as stack_mod


def _v(version):
    return {'OpenStack-API-Version': 'volume %s' % version}


@pytest.fixture(scope='module')
def failed(tmp_path_factory):
    """A stack holding four messages: four volumes no backend can take."""
    s = stack_mod.Stack(tmp_path_factory.mktemp('messages') / 'state').start()
    try:
        api = s.client()
        api.create_type('nowhere', {'volume_backend_name': 'nowhere'})
        vols = []
        for n in range(4):
            resp = api.post('/volumes', json={'volume': {
                'size': 1, 'volume_type': 'nowhere', 'name': 'v%d' % n}})
            assert resp.status_code == 202, resp.text
            vols.append(api.wait_volume(resp.json()['volume']['id'],
                                        'error')['id'])
        yield s, vols
    finally:
        s.stop()


def _ids(resp):
    assert resp.status_code == 200, resp.text
    return [m['resource_uuid'] for m in resp.json()['messages']]


def test_before_3_5_oldest_first_and_paging_words_ignored(failed):
    s, vols = failed
    api = s.client()
    resp = api.get('/messages?limit=1&sort=created_at:desc', headers=_v('3.4'))
    assert _ids(resp) == vols
    assert 'messages_links' not in resp.json()


def test_3_5_newest_first_in_pages_with_next_links(failed):
    s, vols = failed
    api = s.client()
    assert _ids(api.get('/messages', headers=_v('3.5'))) == vols[::-1]
    seen, path = [], '/messages?limit=3'
    while True:
        resp = api.get(path, headers=_v('3.5'))
        seen += _ids(resp)
        nxt = resp.json().get('messages_links')
        if not nxt:
            break
        assert nxt[0]['rel'] == 'next'
        href = nxt[0]['href']
        path = href[href.index('/messages'):]
    assert seen == vols[::-1]


def test_3_5_sort_marker_and_offset(failed):
    s, vols = failed
    api = s.client()
    asc = api.get('/messages?sort=created_at:asc', headers=_v('3.5'))
    assert _ids(asc) == vols
    first = asc.json()['messages'][0]['id']
    after = api.get('/messages?sort=created_at:asc&marker=%s' % first,
                    headers=_v('3.5'))
    assert _ids(after) == vols[1:]
    legacy = api.get('/messages?sort_key=created_at&sort_dir=asc&offset=2',
                     headers=_v('3.5'))
    assert _ids(legacy) == vols[2:]
    # filters still apply inside a page
    one = api.get('/messages?resource_uuid=%s&limit=5' % vols[1],
                  headers=_v('3.5'))
    assert _ids(one) == [vols[1]]


@pytest.mark.parametrize('query, status, words', [
    ('sort=user_message:asc', 400, 'Invalid sort key'),
    ('sort=created_at:sideways', 400, 'Invalid sort direction'),
    ('sort=created_at&sort_dir=asc', 400, 'cannot be used'),
    ('limit=-1', 400, 'limit param'),
    ('offset=x', 400, 'offset param'),
    ('marker=00000000-0000-0000-0000-000000000000', 404,
     'could not be found'),
])
def test_3_5_bad_paging_is_refused(failed, query, status, words):
    s, _ = failed
    resp = s.client().get('/messages?' + query, headers=_v('3.5'))
    assert resp.status_code == status, resp.text
    assert words in resp.text


def test_another_projects_message_is_no_marker(failed):
    s, _ = failed
    theirs = s.client().get('/messages', headers=_v('3.5')).json()[
        'messages'][0]['id']
    other = s.client(project='fedcba9876543210fedcba9876543210',
                     user='someone', roles='member')
    resp = other.get('/messages?marker=%s' % theirs, headers=_v('3.5'))
    assert resp.status_code == 404, resp.text
    assert other.get('/messages', headers=_v('3.5')).json() == {
        'messages': []}
