"""The dashboard at /dashboard/ in a real browser: Debian's chromium,
driven by Playwright (nothing downloaded).  Skipped where chromium is
absent, unless CINDER_LITE_REQUIRE_SERVICES=1 (CI), which makes it
mandatory.  Screenshots go to the test's directory, and also to
$CINDER_LITE_SCREENSHOTS when that is set (how doc/source/images/ was made)."""
import itertools
import os
import re
import shutil
import uuid

import pytest
import requests

from tests.harness import backups as bk
from tests.harness import stack as stack_mod
from tests.harness.volumes import write

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT
WAIT_MS = 15000
PHONE = {'width': 390, 'height': 844}
DESKTOP = {'width': 1280, 'height': 800}


def _chromium():
    # Debian's /usr/bin/chromium is a wrapper script around this binary
    for path in ('/usr/lib/chromium/chromium', shutil.which('chromium'),
                 shutil.which('chromium-browser')):
        if path and os.path.exists(path):
            return path
    return None


@pytest.fixture(scope='module')
def chromium():
    """One chromium for the module (a launch costs seconds of CPU here);
    each test's pages have contexts of their own (``browser``)."""
    path = _chromium()
    required = os.environ.get('CINDER_LITE_REQUIRE_SERVICES', '').lower() \
        in ('1', 'true', 'yes', 'on')
    if path is None:
        if required:
            pytest.fail('chromium is not installed (apt-get install '
                        'chromium), and CINDER_LITE_REQUIRE_SERVICES=1 '
                        'makes the browser tests mandatory', pytrace=False)
        pytest.skip('chromium is not installed (apt-get install chromium)')
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=['--no-sandbox'])
        yield b
        b.close()


@pytest.fixture
def browser(chromium):
    """The module's chromium; what a test opened (``new_page`` makes a
    context of its own: cookies, storage) is closed after it."""
    before = set(chromium.contexts)
    yield chromium
    for context in chromium.contexts:
        if context not in before:
            context.close()


def shoot(page, tmp_path, name, doc=True):
    """A full-page screenshot in the test's directory; ``doc``: also in
    $CINDER_LITE_SCREENSHOTS (the ones doc/ shows or names)."""
    page.screenshot(path=str(tmp_path / name), full_page=True)
    out = os.environ.get('CINDER_LITE_SCREENSHOTS')
    if out and doc:
        os.makedirs(out, exist_ok=True)
        page.screenshot(path=os.path.join(out, name), full_page=True)


def sign_in(page, url, user, project, role):
    page.goto(url + '/dashboard/')
    page.wait_for_selector('#signin:not([hidden])')
    page.fill('#user', user)
    page.fill('#project', project)
    page.select_option('#role', role)
    page.click('#signin button[type=submit]')
    page.wait_for_selector('#volumes', timeout=WAIT_MS)


_ips = itertools.count(20)


def attach(api, vid, host, mode):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vid, 'instance_uuid': str(uuid.uuid4()),
        'mode': mode, 'connector': {
            'host': host, 'ip': '127.0.0.%d' % next(_ips),
            'initiator': 'iqn.2026-11.org.example:%s' % host}}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']['id']
    resp = api.post('/attachments/%s/action' % att,
                    json={'os-complete': None})
    assert resp.status_code == 204, resp.text
    return att


def test_served_as_static_files(stack):
    resp = requests.get(stack.url + '/dashboard', allow_redirects=False)
    assert resp.status_code == 301
    assert resp.headers['Location'].endswith('/dashboard/')
    page = requests.get(stack.url + '/dashboard/')
    assert page.status_code == 200
    assert page.headers['Content-Type'].startswith('text/html')
    for script in ('snapshots.js', 'backups.js', 'app.js'):
        assert '<script src="%s"' % script in page.text
        assert requests.get(stack.url + '/dashboard/' + script).headers[
            'Content-Type'].startswith('text/javascript')
    assert requests.get(stack.url + '/dashboard/nope.js').status_code == 404
    assert requests.post(stack.url + '/dashboard/').status_code == 405


def test_what_the_page_reads_from_the_api(stack):
    # the volume list filters by type (name or id), as Cinder's
    api = stack.client()
    gold = api.create_type('gold')
    mine = api.create_volume(volume_type='gold')
    api.create_volume()
    for ident in ('gold', gold['id']):
        listed = api.get('/volumes?volume_type=%s' % ident).json()[
            'volumes']
        assert [v['id'] for v in listed] == [mine['id']]
    assert api.get('/volumes?volume_type=nope').json()['volumes'] == []
    # admins see where an attachment is and which service exports it;
    # members see it without hosts, as the volume view's host_name
    attach(api, mine['id'], 'host-1', 'rw')
    (att,) = api.get('/attachments/detail').json()['attachments']
    assert (att['attached_host'], att['export_host']) == (
        'host-1', 'testnode@file')
    member = stack.client(user='m', roles='member,reader')
    (att,) = member.get('/attachments/detail').json()['attachments']
    assert 'attached_host' not in att and 'export_host' not in att


def test_switched_off(tmp_path):
    off = stack_mod.Stack(tmp_path / 'off', sections={
        'dashboard': {'enabled': 'false'}}).start()
    try:
        # not there: like any unknown path, after auth
        resp = off.client().get('/dashboard/', raw_path=True)
        assert resp.status_code == 404, resp.text
    finally:
        off.stop()


def test_shared_volume_story(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    expect(page.locator('#who')).to_contain_text('admin (admin)')

    # a multiattach volume, created through the page
    page.fill('#new-name', 'web-shared')
    page.fill('#new-size', '2')
    page.select_option('#new-type', 'shared')
    page.click('#create-volume')
    row = page.locator('#volumes tbody tr', has_text='web-shared')
    expect(row).to_contain_text('available', timeout=WAIT_MS)
    expect(row).to_contain_text('shared')
    vid = row.get_attribute('data-volume')

    # three hosts through the API: two read-write, one read-only
    for host, mode in (('host-1', 'rw'), ('host-2', 'rw'), ('host-3', 'ro')):
        attach(api, vid, host, mode)
    expect(row.locator('li.chip')).to_have_count(3, timeout=WAIT_MS)
    assert chips(row) == [('host-1', 'rw'), ('host-2', 'rw'),
                          ('host-3', 'ro')]

    row.locator('a').click()
    rows = page.locator('#attachments tbody tr')
    expect(rows).to_have_count(3, timeout=WAIT_MS)
    for host, mode in (('host-1', 'rw'), ('host-2', 'rw'), ('host-3', 'ro')):
        line = page.locator('#attachments tbody tr', has_text=host)
        expect(line).to_contain_text(mode)
        expect(line).to_contain_text('attached')
        expect(line).to_contain_text('testnode@file')
    # the picture: one node per host, solid rw edges, a dashed ro one
    expect(page.locator('svg.picture g.host-node')).to_have_count(3)
    expect(page.locator('svg.picture line.edge.rw')).to_have_count(2)
    dashed = page.locator('svg.picture line.edge.ro')
    expect(dashed).to_have_count(1)
    assert dashed.get_attribute('stroke-dasharray')
    assert page.locator('svg.picture line.edge.rw').first.get_attribute(
        'stroke-dasharray') is None
    # the audit trail of the volume
    trail = page.locator('#timeline li')
    expect(trail.first).to_be_visible()
    expect(page.locator('#timeline')).to_contain_text('attaching → attached')
    expect(page.locator('#timeline')).to_contain_text('host-3')
    shoot(page, tmp_path, 'dashboard.png')

    # detach one from the page: it goes
    page.locator('#attachments tbody tr', has_text='host-3').locator(
        'button.detach').click()
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator('svg.picture line.edge.ro')).to_have_count(0)
    live = api.get('/attachments?volume_id=%s' % vid).json()['attachments']
    assert len(live) == 2

    # a refusal is shown with the API's message
    page.fill('#extend-size', '1')
    page.click('#extend')
    expect(page.locator('#error')).to_contain_text('HTTP 400')
    expect(page.locator('#error')).to_contain_text(
        'New size for extend must be greater than current size')

    # it refreshes by itself: a change made elsewhere shows up
    attach(api, vid, 'host-4', 'ro')
    expect(rows).to_have_count(3, timeout=WAIT_MS)

    page.click('#nav-backends')
    pool = page.locator('[data-pool="testnode@file#file"]')
    expect(pool).to_contain_text('Multiattach', timeout=WAIT_MS)
    expect(pool.locator('meter')).to_have_count(2)
    expect(page.locator('#services')).to_contain_text('cinder-volume')
    expect(page.locator('#services')).to_contain_text('up')
    shoot(page, tmp_path, 'backends.png')

    phone = browser.new_page(viewport=PHONE)
    sign_in(phone, stack.url, 'admin', P, 'admin')
    phone.goto(stack.url + '/dashboard/#/volume/%s' % vid)
    expect(phone.locator('#attachments tbody tr')).to_have_count(
        3, timeout=WAIT_MS)
    shoot(phone, tmp_path, 'volume-phone.png')
    # nothing wider than the phone's screen but the tables' own scroller
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width


def test_another_project_sees_none_of_it(stack, browser, tmp_path):
    from playwright.sync_api import expect
    # an empty project is no project: the API refuses it, so the page
    # stays on the sign-in form with the API's reason
    page = browser.new_page(viewport=DESKTOP)
    page.goto(stack.url + '/dashboard/')
    page.wait_for_selector('#signin:not([hidden])')
    page.fill('#user', 'someone')
    page.fill('#project', '')
    page.click('#signin button[type=submit]')
    expect(page.locator('#error')).to_contain_text('HTTP 401',
                                                   timeout=WAIT_MS)
    expect(page.locator('#error')).to_contain_text('neither part empty')
    assert page.locator('#signin').is_visible()
    assert page.locator('#nav').is_hidden()
    page.close()

    api = stack.client()
    vol = api.create_volume(name='private-one')
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'someone', OTHER, 'member')
    expect(page.locator('#volumes')).to_contain_text('No volumes.',
                                                     timeout=WAIT_MS)
    assert 'private-one' not in page.content()
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(page.locator('#error')).to_contain_text('HTTP 404',
                                                   timeout=WAIT_MS)
    page.click('#nav-backends')
    expect(page.locator('#error')).to_contain_text('HTTP 403',
                                                   timeout=WAIT_MS)
    # a lost connection shows the banner, and it goes when the API is back
    page.click('#nav-volumes')
    expect(page.locator('#volumes')).to_be_visible(timeout=WAIT_MS)
    page.route('**/v3/**', lambda route: route.abort())
    expect(page.locator('#banner')).to_be_visible(timeout=WAIT_MS)
    page.unroute('**/v3/**')
    expect(page.locator('#banner')).to_be_hidden(timeout=WAIT_MS)


def chips(row):
    """(host, mode) of each host chip of a volume's row, in order."""
    return [(c.get_attribute('data-host'), c.get_attribute('data-mode'))
            for c in row.locator('li.chip:not(.more)').all()]


def test_volumes_list_shows_who_has_each_volume(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    other = stack.client(project=OTHER)
    api.create_type('shared', {'multiattach': '<is> True'})
    db = api.create_volume(
        name='db-shared', size=20, volume_type='shared',
        description='PostgreSQL data; the reporting nodes read it')
    for host, mode in (('node-2', 'ro'), ('node-1', 'rw'), ('node-3', 'ro')):
        attach(api, db['id'], host, mode)
    assets = api.create_volume(name='web-assets', size=5,
                               volume_type='shared',
                               description='images and scripts')
    for host, mode in (('node-9', 'ro'), ('node-8', 'ro'), ('node-7', 'ro'),
                       ('node-6', 'ro'), ('node-5', 'ro'), ('node-4', 'rw')):
        attach(api, assets['id'], host, mode)
    scratch = api.create_volume(name='scratch', size=2)
    attach(api, scratch['id'], 'node-2', 'rw')
    api.create_volume(name='spare', size=1)
    cache = other.create_volume(name='ci-cache', size=10,
                                volume_type='shared',
                                description="the CI runners' cache")
    attach(other, cache['id'], 'ci-1', 'ro')
    attach(other, cache['id'], 'ci-2', 'ro')

    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    rows = page.locator('#volumes tbody tr')
    expect(rows).to_have_count(5, timeout=WAIT_MS)

    def row(name):
        return page.locator('#volumes tbody tr', has_text=name)

    # who has it, in which mode, without opening it: read-write first
    expect(row('db-shared').locator('li.chip')).to_have_count(3)
    assert chips(row('db-shared')) == [('node-1', 'rw'), ('node-2', 'ro'),
                                       ('node-3', 'ro')]
    first = row('db-shared').locator('li.chip').first
    expect(first).to_have_text('node-1 rw')
    assert chips(row('scratch')) == [('node-2', 'rw')]
    expect(row('spare').locator('td.holders')).to_have_text('-')
    # read-only looks different from read-write
    rw, ro = (row('db-shared').locator('li.chip.%s' % m).first.evaluate(
        'e => getComputedStyle(e).borderStyle') for m in ('rw', 'ro'))
    assert (rw, ro) == ('solid', 'dashed')
    # beyond four hosts, a count of the others (named in its title)
    assert chips(row('web-assets')) == [('node-4', 'rw'), ('node-5', 'ro'),
                                        ('node-6', 'ro'), ('node-7', 'ro')]
    more = row('web-assets').locator('li.chip.more')
    expect(more).to_have_text('+2')
    expect(more).to_have_attribute('title', 'node-8 ro, node-9 ro')
    # admins see every project's volumes, with the project
    expect(page.locator('#volumes th', has_text='Project')).to_have_count(1)
    expect(row('ci-cache').locator('td.project')).to_have_text(OTHER)
    expect(row('db-shared').locator('td.project')).to_have_text(P)
    assert chips(row('ci-cache')) == [('ci-1', 'ro'), ('ci-2', 'ro')]
    # the description, under the name
    desc = row('db-shared').locator('.description')
    expect(desc).to_have_text('PostgreSQL data; the reporting nodes read it')
    expect(desc).to_have_attribute('title',
                                   'PostgreSQL data; the reporting nodes '
                                   'read it')
    expect(row('spare').locator('.description')).to_have_count(0)
    shoot(page, tmp_path, 'volumes.png')
    # at a phone's width the hosts stay on the screen (other columns go)
    phone = browser.new_page(viewport=PHONE)
    sign_in(phone, stack.url, 'admin', P, 'admin')
    chip = phone.locator('#volumes tbody tr', has_text='db-shared').locator(
        'li.chip').first
    expect(chip).to_be_visible(timeout=WAIT_MS)
    box = chip.bounding_box()
    assert box['x'] + box['width'] <= PHONE['width'], box

    # a member: the project's volumes, no project column, and (as the API
    # shows attachments to members) instances instead of hosts
    member = browser.new_page(viewport=DESKTOP)
    sign_in(member, stack.url, 'someone', P, 'member')
    rows = member.locator('#volumes tbody tr')
    expect(rows).to_have_count(4, timeout=WAIT_MS)
    expect(member.locator('#volumes th', has_text='Project')).to_have_count(0)
    expect(member.locator('#volumes td.project')).to_have_count(0)
    assert 'ci-cache' not in member.content()
    shared = member.locator('#volumes tbody tr', has_text='db-shared')
    expect(shared.locator('.description')).to_contain_text('PostgreSQL')
    instances = api.get('/attachments?volume_id=%s' % db['id']).json()[
        'attachments']
    labels = sorted(h for h, _ in chips(shared))
    assert labels == sorted('instance ' + a['instance'][:8]
                            for a in instances)
    assert sorted(m for _, m in chips(shared)) == ['ro', 'ro', 'rw']


def test_pager_and_long_names(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    long_name = 'analytics-warehouse-primary-replica-2026-11-nightly-' \
                'snapshots-and-exports'
    resp = api.put('/os-quota-sets/%s' % P,
                   json={'quota_set': {'volumes': 25}})
    assert resp.status_code == 200, resp.text
    vol = api.create_volume(name=long_name)
    for i in range(19):
        api.create_volume(name='bulk-%02d' % i)
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    rows = page.locator('#volumes tbody tr')
    expect(rows).to_have_count(20, timeout=WAIT_MS)
    prev = page.locator('.pager button', has_text='Previous')
    nxt = page.locator('.pager button', has_text='Next')

    def cursor(button):
        return button.evaluate('e => getComputedStyle(e).cursor')

    # exactly one page: neither button works, and both look it
    expect(prev).to_be_disabled()
    expect(nxt).to_be_disabled()
    assert cursor(prev) == cursor(nxt) == 'not-allowed'
    # one more volume: a next page
    api.create_volume(name='bulk-19')
    expect(nxt).to_be_enabled(timeout=WAIT_MS)
    assert cursor(nxt) == 'pointer'
    enabled, disabled = (b.evaluate('e => getComputedStyle(e).color')
                         for b in (nxt, prev))
    assert enabled != disabled
    nxt.click()
    expect(rows).to_have_count(1, timeout=WAIT_MS)
    expect(nxt).to_be_disabled()
    expect(prev).to_be_enabled()
    prev.click()
    expect(rows).to_have_count(20, timeout=WAIT_MS)
    expect(prev).to_be_disabled()

    # a long name: whole in the list, wrapped inside the picture's circle
    # and cut with an ellipsis there, the full name in its title
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    label = page.locator('svg.picture .volume-label')
    expect(label).to_have_attribute('title', long_name, timeout=WAIT_MS)
    geometry = label.evaluate('''e => {
        const c = document.querySelector('svg.picture circle.volume')
            .getBoundingClientRect();
        const l = e.getBoundingClientRect();
        const r = c.width / 2, cx = c.left + r, cy = c.top + r;
        const corners = [[l.left, l.top], [l.right, l.top],
                         [l.left, l.bottom], [l.right, l.bottom]];
        return {inside: corners.every(([x, y]) =>
                    Math.hypot(x - cx, y - cy) <= r + 0.5),
                lines: Math.round(l.height / parseFloat(
                    getComputedStyle(e).lineHeight)),
                clipped: e.scrollHeight > e.clientHeight,
                tooWide: e.scrollWidth > e.clientWidth,
                ellipsis: getComputedStyle(e).webkitLineClamp};
    }''')
    assert geometry == {'inside': True, 'lines': 3, 'clipped': True,
                        'tooWide': False, 'ellipsis': '3'}, geometry
    expect(page.locator('#live h1')).to_contain_text(long_name)
    # at a phone's width, the long name wraps instead of widening the page
    phone = browser.new_page(viewport=PHONE)
    sign_in(phone, stack.url, 'admin', P, 'admin')
    phone.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(phone.locator('#live h1')).to_contain_text(long_name,
                                                      timeout=WAIT_MS)
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width


def test_an_api_with_small_pages(tmp_path, browser):
    # osapi_max_limit below what the page asks for: it pages by the API's
    # own links, and says when the attachments did not fit in one answer
    from playwright.sync_api import expect
    small = stack_mod.Stack(tmp_path / 'small',
                            extra={'osapi_max_limit': '2'}).start()
    try:
        api = small.client()
        api.create_type('shared', {'multiattach': '<is> True'})
        vol = api.create_volume(name='shared-one', volume_type='shared')
        for host, mode in (('node-1', 'rw'), ('node-2', 'ro'),
                           ('node-3', 'ro')):
            attach(api, vol['id'], host, mode)
        api.create_volume(name='two')
        api.create_volume(name='three')
        page = browser.new_page(viewport=DESKTOP)
        sign_in(page, small.url, 'admin', P, 'admin')
        rows = page.locator('#volumes tbody tr')
        expect(rows).to_have_count(2, timeout=WAIT_MS)
        nxt = page.locator('.pager button', has_text='Next')
        expect(nxt).to_be_enabled()
        nxt.click()
        row = page.locator('#volumes tbody tr', has_text='shared-one')
        expect(row).to_have_count(1, timeout=WAIT_MS)
        # the two newest attachments are all one answer holds
        assert chips(row) == [('node-2', 'ro'), ('node-3', 'ro')]
        expect(page.locator('#holders-partial')).to_contain_text(
            'newest 2 live attachments')
    finally:
        small.stop()


def snapshot_row(page, name):
    return page.locator('#snapshots tbody tr', has_text=name)


def test_snapshots_through_the_page(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    vol = api.create_volume(name='db-data', size=2,
                            description='the primary database')
    busy = api.create_volume(name='web-root', size=1)
    attach(api, busy['id'], 'node-1', 'rw')
    api.wait_volume(busy['id'], 'in-use')
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(page.locator('#snapshots')).to_contain_text('No snapshots.',
                                                       timeout=WAIT_MS)
    # an available volume needs no force
    expect(page.locator('#snapshot-force-row')).to_be_hidden()
    expect(page.locator('#take-snapshot')).to_be_enabled()

    # take one through the page: it becomes available in the table
    page.fill('#snapshot-name', 'nightly')
    page.fill('#snapshot-description', 'before the upgrade')
    page.click('#take-snapshot')
    row = snapshot_row(page, 'nightly')
    expect(row).to_contain_text('available', timeout=WAIT_MS)
    expect(row).to_contain_text('2 GiB')
    expect(row.locator('.description')).to_have_text('before the upgrade')
    expect(page.locator('#snapshot-name')).to_have_value('')
    (snap,) = api.get('/snapshots/detail?volume_id=%s' % vol['id']).json()[
        'snapshots']
    assert (snap['name'], snap['description'], snap['size'],
            snap['status']) == ('nightly', 'before the upgrade', 2,
                                'available')
    assert row.get_attribute('data-snapshot') == snap['id']
    shoot(page, tmp_path, 'volume-snapshots.png')

    # over quota: the API's own refusal, word for word
    resp = api.put('/os-quota-sets/%s' % P,
                   json={'quota_set': {'snapshots': 1}})
    assert resp.status_code == 200, resp.text
    refused = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id'], 'name': 'one-too-many'}})
    assert refused.status_code == 413, refused.text
    message = refused.json()['overLimit']['message']
    page.fill('#snapshot-name', 'one-too-many')
    page.click('#take-snapshot')
    expect(page.locator('#error')).to_contain_text('HTTP 413: ' + message,
                                                   timeout=WAIT_MS)
    expect(page.locator('#snapshots tbody tr')).to_have_count(1)
    resp = api.put('/os-quota-sets/%s' % P,
                   json={'quota_set': {'snapshots': 10}})
    assert resp.status_code == 200, resp.text

    # the snapshot's page: its facts, and a volume made from it with the
    # snapshot's size, which the form starts with
    row.locator('td.name a').click()
    facts = page.locator('#snapshot-facts')
    expect(facts).to_contain_text('available', timeout=WAIT_MS)
    expect(facts).to_contain_text('db-data')
    expect(page.locator('#from-snapshot-size')).to_have_value('2')
    shoot(page, tmp_path, 'snapshot.png')
    # smaller than the snapshot: the API says no, and the page says why
    page.fill('#from-snapshot-size', '1')
    page.fill('#from-snapshot-name', 'too-small')
    page.click('#create-from-snapshot')
    expect(page.locator('#error')).to_contain_text('HTTP 400',
                                                   timeout=WAIT_MS)
    small = api.post('/volumes', json={'volume': {
        'size': 1, 'snapshot_id': snap['id']}})
    assert small.status_code == 400, small.text
    expect(page.locator('#error')).to_contain_text(
        small.json()['badRequest']['message'])
    page.fill('#from-snapshot-size', '2')
    page.fill('#from-snapshot-name', 'db-restored')
    page.click('#create-from-snapshot')
    expect(page.locator('#error')).to_be_hidden()
    expect(page.locator('#live h1')).to_contain_text('db-restored',
                                                     timeout=WAIT_MS)
    facts = page.locator('#live dl.facts')
    expect(facts).to_contain_text('available', timeout=WAIT_MS)
    expect(facts).to_contain_text('2 GiB')
    expect(facts.locator('a[href="#/snapshot/%s"]' % snap['id'])
           ).to_have_count(1)
    (made,) = api.get('/volumes/detail?name=db-restored').json()['volumes']
    assert (made['status'], made['size'], made['snapshot_id']) == (
        'available', 2, snap['id'])
    assert page.url.endswith('#/volume/%s' % made['id'])

    # an attached volume: force must be ticked first
    page.goto(stack.url + '/dashboard/#/volume/%s' % busy['id'])
    expect(page.locator('#snapshot-force-row')).to_be_visible(
        timeout=WAIT_MS)
    expect(page.locator('#take-snapshot')).to_be_disabled()
    page.fill('#snapshot-name', 'live-copy')
    shoot(page, tmp_path, 'volume-in-use.png', doc=False)
    page.check('#snapshot-force')
    expect(page.locator('#take-snapshot')).to_be_enabled()
    page.click('#take-snapshot')
    expect(snapshot_row(page, 'live-copy')).to_contain_text(
        'available', timeout=WAIT_MS)
    # the next one is confirmed again
    expect(page.locator('#snapshot-force')).not_to_be_checked()
    expect(page.locator('#take-snapshot')).to_be_disabled()

    # the list of every snapshot, each with its volume
    page.click('#nav-snapshots')
    listed = page.locator('#snapshot-list tbody tr')
    expect(listed).to_have_count(2, timeout=WAIT_MS)
    line = page.locator('#snapshot-list tbody tr', has_text='nightly')
    expect(line.locator('td.volume')).to_have_text('db-data')
    expect(line.locator('td.project')).to_have_text(P)
    page.select_option('#snapshot-filter-status', 'available')
    page.fill('#snapshot-filter-name', 'live-copy')
    page.click('#snapshot-filters button[type=submit]')
    expect(listed).to_have_count(1, timeout=WAIT_MS)
    expect(listed).to_contain_text('web-root')
    page.fill('#snapshot-filter-name', '')
    page.click('#snapshot-filters button[type=submit]')
    expect(listed).to_have_count(2, timeout=WAIT_MS)
    shoot(page, tmp_path, 'snapshots.png')

    # at a phone's width: nothing wider than the screen
    phone = browser.new_page(viewport=PHONE)
    sign_in(phone, stack.url, 'admin', P, 'admin')
    phone.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(snapshot_row(phone, 'nightly')).to_be_visible(timeout=WAIT_MS)
    shoot(phone, tmp_path, 'volume-snapshots-phone.png')
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width
    phone.click('#nav-snapshots')
    expect(phone.locator('#snapshot-list tbody tr')).to_have_count(
        2, timeout=WAIT_MS)
    shoot(phone, tmp_path, 'snapshots-phone.png', doc=False)
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width
    phone.goto(stack.url + '/dashboard/#/snapshot/%s' % snap['id'])
    expect(phone.locator('#snapshot-facts')).to_contain_text(
        'db-data', timeout=WAIT_MS)
    shoot(phone, tmp_path, 'snapshot-phone.png', doc=False)
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width
    # the row's buttons stay on the screen, not behind the scroller
    phone.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    delete = snapshot_row(phone, 'nightly').locator('button.delete-snapshot')
    expect(delete).to_be_visible(timeout=WAIT_MS)
    box = delete.bounding_box()
    assert box['x'] + box['width'] <= PHONE['width'], box

    # delete it from its page: back to its volume, where it goes
    page.goto(stack.url + '/dashboard/#/snapshot/%s' % snap['id'])
    expect(page.locator('#snapshot-facts')).to_contain_text(
        'available', timeout=WAIT_MS)
    page.click('#delete-snapshot')
    expect(page.locator('#live h1')).to_contain_text('db-data',
                                                     timeout=WAIT_MS)
    expect(page.locator('#snapshots')).to_contain_text('No snapshots.',
                                                       timeout=WAIT_MS)
    gone = api.get('/snapshots/%s' % snap['id'])
    assert gone.status_code == 404, gone.text


def test_a_reader_sees_but_cannot_act(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    vol = api.create_volume(name='reports', size=1)
    attach(api, vol['id'], 'node-1', 'rw')
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id'], 'name': 'monday', 'force': True}})
    assert resp.status_code == 202, resp.text
    sid = resp.json()['snapshot']['id']
    # what the page leaves out, the API refuses to a reader
    reader = stack.client(user='r', roles='reader')
    resp = reader.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id'], 'force': True}})
    assert resp.status_code == 403, resp.text

    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'r', P, 'reader')
    expect(page.locator('#volumes tbody tr')).to_have_count(
        1, timeout=WAIT_MS)
    expect(page.locator('#reader-note')).to_be_visible()
    expect(page.locator('#create')).to_have_count(0)

    actions = page.locator('#view button, #live button, main a.button')
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(snapshot_row(page, 'monday')).to_contain_text(
        'available', timeout=WAIT_MS)
    expect(page.locator('#attachments tbody tr')).to_have_count(1)
    expect(page.locator('#reader-note')).to_be_visible()
    expect(actions).to_have_count(0)
    shoot(page, tmp_path, 'volume-reader.png', doc=False)

    page.goto(stack.url + '/dashboard/#/snapshot/%s' % sid)
    expect(page.locator('#snapshot-facts')).to_contain_text(
        'reports', timeout=WAIT_MS)
    expect(actions).to_have_count(0)

    page.click('#nav-snapshots')
    expect(page.locator('#snapshot-list tbody tr')).to_have_count(
        1, timeout=WAIT_MS)
    # only the list's own filter and pager
    assert sorted(b.inner_text() for b in actions.all()) == [
        'Filter', 'Next ›', '‹ Previous']


# ids a crafted link may put in the hash: each would name another API path
# (or add a query) if the page put it into the path as it is
CRAFTED = [('volume', '../os-host-fences'), ('volume', '../../os-host-fences'),
           ('volume', 'x?all_tenants=1'), ('volume', 'x#y'),
           ('snapshot', '../os-services'),
           ('snapshot', '..%2F..%2Fos-host-fences')]


def test_an_id_in_the_hash_names_no_other_api_path(stack, browser,
                                                   tmp_path):
    from urllib.parse import quote, urlsplit

    from playwright.sync_api import expect
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    seen = []
    page.on('request', lambda r: seen.append(r.url))

    def api_requests():
        return [urlsplit(u) for u in seen
                if urlsplit(u).path.startswith('/v3/')]

    for view, raw in CRAFTED + [('volume', '..'), ('snapshot', '.')]:
        page.goto(stack.url + '/dashboard/#/volumes')
        expect(page.locator('#volumes')).to_be_visible(timeout=WAIT_MS)
        expect(page.locator('#error')).to_be_hidden()
        del seen[:]
        page.goto(stack.url + '/dashboard/#/%s/%s' % (view, quote(
            raw, safe='')))
        live = page.locator('#live')
        error = page.locator('#error')
        if raw in ('.', '..'):
            # a browser resolves those even escaped: the page refuses them
            expect(live).to_contain_text('the link names no volume',
                                         timeout=WAIT_MS)
            expect(error).to_contain_text('Not an id')
            assert api_requests() == [], seen
            continue
        expect(live).to_contain_text('Nothing to show: the API refused.',
                                     timeout=WAIT_MS)
        expect(error).to_contain_text('HTTP 404')
        if raw == '../os-host-fences':
            shoot(page, tmp_path, 'crafted-id.png', doc=False)
        # the id went as one escaped path segment, and only there
        wanted = '/v3/%ss/%s' % (view, quote(raw, safe=''))
        got = api_requests()
        assert got and all(u.path == wanted and not u.query for u in got), (
            raw, seen)
    shoot(page, tmp_path, 'dot-id.png', doc=False)


def test_the_page_may_not_be_framed(stack):
    page = requests.get(stack.url + '/dashboard/')
    assert "frame-ancestors 'none'" in page.headers[
        'Content-Security-Policy']
    assert page.headers['X-Frame-Options'] == 'DENY'
    for name in ('app.js', 'snapshots.js', 'backups.js', 'style.css'):
        resp = requests.get(stack.url + '/dashboard/' + name)
        assert "frame-ancestors 'none'" in resp.headers[
            'Content-Security-Policy'], name


def backup_row(page, bid):
    return page.locator('#backups tbody tr[data-backup="%s"]' % bid)


def percent_shown(page, selector):
    """The percent the bar under ``selector`` shows, once it shows more
    than 0 (the backup service writes its progress every second)."""
    page.wait_for_function(
        '(sel) => { const p = document.querySelector(sel);'
        ' return p && Number(p.dataset.percent) > 0; }',
        arg=selector + ' .progress', timeout=WAIT_MS)
    return float(page.locator(selector + ' .progress').get_attribute(
        'data-percent'))


# what a bar's words look like: "42.5% · 435.2 MiB of 1.0 GiB"
PROGRESS_TEXT = re.compile(r'^\d+\.\d% · \d+\.\d (MiB|GiB) of 1\.0 GiB$')


def test_backups_through_the_page(browser, tmp_path):
    # one copy at a time (backup_max_operations = 1): a restore asked for
    # while a long backup runs waits in ``restoring`` until it is done
    stack = stack_mod.Stack(tmp_path / 'state', extra={
        'backup_max_operations': '1'}).start()
    try:
        _backups_through_the_page(stack, browser, tmp_path)
    finally:
        stack.stop()


def _backups_through_the_page(stack, browser, tmp_path):
    from playwright.sync_api import expect
    api = stack.client()
    vol = api.create_volume(name='db-data', size=1)
    write(stack, vol['id'], 0, b'the first block')
    full = bk.backup(api, vol['id'], name='nightly',
                     description='the whole volume')
    write(stack, vol['id'], 1 << 20, b'a change')
    # a name with markup: shown as text, never parsed
    crafted = '<img src=x onerror="window.pwned=1">weekly & <b>bold</b>'
    inc = bk.backup(api, vol['id'], name=crafted, incremental=True)
    page = browser.new_page(viewport=DESKTOP)
    sign_in(page, stack.url, 'admin', P, 'admin')
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    rows = page.locator('#backups tbody tr')
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    # in the API's order (the newest first), each as the API says
    listed = api.get('/backups/detail?volume_id=%s' % vol['id']).json()[
        'backups']
    assert [b['id'] for b in listed] == [inc['id'], full['id']]
    assert [r.get_attribute('data-backup') for r in rows.all()] == [
        inc['id'], full['id']]
    for b, kind in ((full, 'full'), (inc, 'incremental')):
        shown = bk.show(api, b['id'])
        row = backup_row(page, b['id'])
        expect(row.locator('td.backup-status')).to_have_text('available')
        expect(row.locator('td.size')).to_have_text('1 GiB')
        expect(row.locator('td.kind')).to_have_text(kind)
        expect(row.locator('td.objects')).to_have_text(
            str(shown['object_count']))
        expect(row.locator('td').nth(4)).to_have_text(
            shown['created_at'].replace('T', ' ')[:19])
        expect(row.locator('.progress')).to_have_count(0)
    expect(backup_row(page, full['id']).locator('.description')
           ).to_have_text('the whole volume')
    name = backup_row(page, inc['id']).locator('td.name')
    expect(name).to_have_text(crafted)
    expect(page.locator('#backups img, #backups b')).to_have_count(0)
    assert page.evaluate('window.pwned') is None

    # a backup under way: data that does not compress makes it last
    # (about 20 s here), and its bar moves
    for offset in range(4 << 20, 324 << 20, 16 << 20):
        write(stack, vol['id'], offset, os.urandom(16 << 20))
    big = bk.create(api, vol['id'], name='before-upgrade')
    row = backup_row(page, big['id'])
    expect(row.locator('td.backup-status')).to_contain_text(
        'creating', timeout=WAIT_MS)
    expect(row.locator('.progress progress')).to_be_visible()
    selector = '#backups tr[data-backup="%s"]' % big['id']
    first = percent_shown(page, selector)
    # the API's answer is as far or further than what the page shows
    now = api.get('/backups/%s/progress' % big['id']).json()['progress']
    assert now['status'] == 'creating', now
    assert 0 < first <= now['percent'] < 100, (first, now)
    assert now['bytes_total'] == 1024 ** 3
    # the bar and its words say the same
    shown = row.locator('.progress').evaluate(
        'e => [Number(e.dataset.percent), e.querySelector("progress").value,'
        ' e.querySelector(".progress-text").textContent]')
    assert shown[0] == shown[1] >= first, shown
    assert PROGRESS_TEXT.match(shown[2]), shown
    assert shown[2].startswith('%.1f%%' % shown[0]), shown
    shoot(page, tmp_path, 'dashboard-backups.png')

    # a restore into a new volume, behind that backup: the new volume's
    # page shows it, with the backup's volume
    answer = bk.restore(api, full['id'], name='db-copy')
    page.goto(stack.url + '/dashboard/#/volume/%s' % answer['volume_id'])
    panel = page.locator('.restore-into[data-backup="%s"]' % full['id'])
    expect(panel.locator('progress')).to_be_visible(timeout=WAIT_MS)
    expect(panel).to_contain_text('Restoring from backup nightly')
    expect(panel.locator('a[href="#/volume/%s"]' % vol['id'])
           ).to_have_count(1)
    text = panel.locator('.progress-text').inner_text()
    assert PROGRESS_TEXT.match(text), text
    assert bk.show(api, big['id'])['status'] == 'creating'
    shoot(page, tmp_path, 'volume-restoring.png', doc=False)
    expect(page.locator('#live dl.facts')).to_contain_text(
        'available', timeout=bk.TIMEOUT * 1000)
    expect(panel).to_have_count(0)
    expect(page.locator('#backups')).to_contain_text('No backups.')

    # done: the bar goes, and the row says what the API says
    page.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(row.locator('td.backup-status')).to_have_text(
        'available', timeout=bk.TIMEOUT * 1000)
    expect(row.locator('.progress')).to_have_count(0)
    done = bk.show(api, big['id'])
    expect(row.locator('td.objects')).to_have_text(
        str(done['object_count']))
    expect(rows).to_have_count(3)

    # a member of the project sees the same rows; at a phone's width the
    # page is no wider than the screen
    phone = browser.new_page(viewport=PHONE)
    sign_in(phone, stack.url, 'm', P, 'member')
    phone.goto(stack.url + '/dashboard/#/volume/%s' % vol['id'])
    expect(phone.locator('#backups tbody tr')).to_have_count(
        3, timeout=WAIT_MS)
    expect(backup_row(phone, inc['id']).locator('td.name')).to_have_text(
        crafted)
    shoot(phone, tmp_path, 'volume-backups-phone.png', doc=False)
    width = phone.evaluate('document.documentElement.scrollWidth')
    assert width <= PHONE['width'], width
