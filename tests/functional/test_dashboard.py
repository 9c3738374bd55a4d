"""The dashboard at /dashboard/ in a real browser: Debian's chromium,
driven by Playwright (nothing downloaded).  Skipped where chromium is
absent, unless CINDER_LITE_REQUIRE_SERVICES=1 (CI), which makes it
mandatory.  Screenshots go to the test's directory, and also to
$CINDER_LITE_SCREENSHOTS when that is set (how doc/images/ was made)."""
import os
import shutil
import uuid

import pytest
import requests

from tests import stack as stack_mod

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


@pytest.fixture
def browser():
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


def shoot(page, tmp_path, name):
    page.screenshot(path=str(tmp_path / name), full_page=True)
    out = os.environ.get('CINDER_LITE_SCREENSHOTS')
    if out:
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


def attach(api, vid, host, mode):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vid, 'instance_uuid': str(uuid.uuid4()),
        'mode': mode, 'connector': {
            'host': host, 'ip': '127.0.0.%d' % (20 + int(host[-1])),
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
    assert '<script src="app.js"' in page.text
    assert requests.get(stack.url + '/dashboard/app.js').headers[
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
    expect(row.locator('td.modes')).to_contain_text('2', timeout=WAIT_MS)
    expect(row.locator('td.modes')).to_contain_text('ro')
    shoot(page, tmp_path, 'volumes.png')

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
