"""noauth is for a laptop: it says so at start, refuses an address that
is not loopback, and answers only requests addressed to loopback or to
the API's own address (DNS rebinding: a page whose name resolves to
127.0.0.1 still sends its name in the Host header)."""
import json
import logging
import os
import socket
import subprocess
import sys

import pytest
import requests

from cinder_lite.api import auth
from cinder_lite.common import exception
from tests.harness import stack as stack_mod

P = stack_mod.PROJECT
TOKEN = {'X-Auth-Token': 'admin:%s' % P}


def _get(stack, path, host, headers=TOKEN):
    return requests.get(stack.url + path, headers=dict(headers, Host=host))


@pytest.mark.parametrize('host', ['attacker.example', 'attacker.example:%d',
                                  'localhost.attacker.example',
                                  '127.0.0.1.nip.io:%d', '[::2]:%d',
                                  '10.0.0.1', '0.0.0.0:%d', ':%d',
                                  '127.0.0.1:x'])
def test_a_host_header_not_naming_loopback_is_refused(stack, host):
    if '%d' in host:
        host = host % stack.api.port
    for path in ('/v3/%s/os-host-fences' % P, '/v3/%s/volumes' % P,
                 '/dashboard/', '/', '/healthcheck'):
        resp = _get(stack, path, host)
        assert resp.status_code == 400, (path, resp.text)
        fault = resp.json()['badRequest']
        assert fault['code'] == 400
        assert 'Host header' in fault['message']
        assert 'loopback' in fault['message']


@pytest.mark.parametrize('host', ['127.0.0.1:%d', '127.0.0.1', 'LOCALHOST',
                                  'localhost:%d', '127.9.8.7:%d', '[::1]:%d',
                                  '[::1]'])
def test_loopback_host_headers_are_served(stack, host):
    if '%d' in host:
        host = host % stack.api.port
    resp = _get(stack, '/v3/%s/os-host-fences' % P, host)
    assert resp.status_code == 200, resp.text


def test_no_host_header_is_refused(stack):
    # HTTP/1.0 may leave Host out (cheroot refuses that in HTTP/1.1)
    with socket.create_connection(('127.0.0.1', stack.api.port),
                                  timeout=10) as sock:
        sock.sendall(('GET /v3/%s/volumes HTTP/1.0\r\nX-Auth-Token: %s'
                      '\r\n\r\n' % (P, TOKEN['X-Auth-Token'])).encode())
        answer = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b'\r\n\r\n')
    assert head.split()[1] == b'400', answer
    fault = json.loads(body)['badRequest']
    assert 'Host header' in fault['message'] and 'got none' in \
        fault['message']


def test_the_configured_address_and_public_endpoint_are_served(tmp_path):
    s = stack_mod.Stack(tmp_path / 's', extra={
        'public_endpoint': 'http://volumes.example.net:8776'}).start()
    try:
        for host in ('volumes.example.net', 'volumes.example.net:8776',
                     '127.0.0.1:%d' % s.api.port):
            assert _get(s, '/v3/%s/volumes' % P, host).status_code == 200
        assert _get(s, '/v3/%s/volumes' % P,
                    'other.example.net').status_code == 400
    finally:
        s.stop()


def test_keystone_mode_does_not_look_at_the_host():
    conf = _Conf(auth_strategy='keystone', osapi_volume_listen='0.0.0.0')
    auth.check_start(conf)      # no refusal: tokens are checked
    auth.warn_at_start(conf)


def test_every_response_forbids_framing(stack):
    for path, headers in (('/v3/%s/volumes' % P, TOKEN), ('/', {}),
                          ('/v3/%s/volumes/nope' % P, TOKEN),
                          ('/dashboard/', {})):
        resp = requests.get(stack.url + path, headers=headers)
        assert "frame-ancestors 'none'" in resp.headers[
            'Content-Security-Policy'], path
        assert resp.headers['X-Frame-Options'] == 'DENY', path
        assert resp.headers['X-Content-Type-Options'] == 'nosniff', path
    # the dashboard keeps its own policy, with frame-ancestors added
    page = requests.get(stack.url + '/dashboard/')
    assert "script-src 'self'" in page.headers['Content-Security-Policy']


class _Conf:
    def __init__(self, **kw):
        self.auth_strategy = 'noauth'
        self.osapi_volume_listen = '127.0.0.1'
        self.allow_noauth_off_loopback = False
        self.__dict__.update(kw)


@pytest.mark.parametrize('address,loopback', [
    ('127.0.0.1', True), ('127.1.2.3', True), ('::1', True),
    ('[::1]', True), ('localhost', True), ('LocalHost.', True),
    ('::ffff:127.0.0.1', True), ('0.0.0.0', False), ('::', False),
    ('10.1.2.3', False), ('192.0.2.1', False), ('', False),
    ('name.invalid', False)])
def test_what_is_loopback(address, loopback):
    assert auth.is_loopback(address) is loopback


def test_noauth_off_loopback_needs_the_option(caplog):
    with pytest.raises(exception.NoauthOffLoopback) as e:
        auth.check_start(_Conf(osapi_volume_listen='0.0.0.0'))
    assert 'allow_noauth_off_loopback' in str(e.value)
    assert '0.0.0.0' in str(e.value)
    allowed = _Conf(osapi_volume_listen='0.0.0.0',
                    allow_noauth_off_loopback=True)
    auth.check_start(allowed)
    with caplog.at_level(logging.WARNING, logger='cinder_lite.api.auth'):
        auth.warn_at_start(allowed)
    text = caplog.text
    assert 'not loopback' in text and 'trusts X-Auth-Token' in text


@pytest.mark.parametrize('script', ['api', 'all'])
def test_the_server_refuses_to_start_off_loopback(tmp_path, script):
    conf = tmp_path / 'c.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen = '
                    '0.0.0.0\n' % (tmp_path / 'state'))
    proc = subprocess.run(
        [sys.executable, '-m', 'cinder_lite.cmd.%s' % script,
         '--config-file', str(conf)], capture_output=True, text=True,
        timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert 'auth_strategy = noauth' in out and \
        'allow_noauth_off_loopback = true' in out, out
    assert 'Traceback' not in out
    # nothing was made: it refused before anything started
    assert not (tmp_path / 'state').exists()


def test_the_start_warns_what_noauth_trusts(tmp_path):
    proc, port, log = stack_mod.start_all(tmp_path / 'w')
    try:
        assert _get_status(port) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    text = (tmp_path / 'w' / 'all.log').read_text()
    line = next(x for x in text.splitlines()
                if 'trusts X-Auth-Token' in x)
    assert 'WARNING' in line and 'X-Roles' in line and 'bus' in line
    # the state directory is this user's only
    assert os.stat(tmp_path / 'w' / 'state').st_mode & 0o077 == 0


def _get_status(port):
    return requests.get('http://127.0.0.1:%d/v3/%s/volumes' % (port, P),
                        headers=TOKEN).status_code
