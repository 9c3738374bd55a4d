"""cinder-lite-all as a real process: it serves, reloads on SIGHUP and
stops cleanly on SIGTERM, however the signals arrive."""
import os
import signal
import socket
import subprocess
import sys
import time

import requests


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_signals_reload_and_stop(tmp_path):
    port = _free_port()
    conf = tmp_path / 'cinder-lite.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen_port'
                    ' = %d\n' % (tmp_path / 'state', port))
    log = open(tmp_path / 'all.log', 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'cinder_lite.cmd.all',
                             '--config-file', str(conf)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get('http://127.0.0.1:%d/' % port,
                                timeout=1).status_code == 300:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None, (tmp_path / 'all.log').read_text()
            assert time.monotonic() < deadline, 'no API after 30 s'
            time.sleep(0.1)
        # a burst of signals, reloads and stops mixed
        for _ in range(10):
            os.kill(proc.pid, signal.SIGHUP)
            os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    text = (tmp_path / 'all.log').read_text()
    assert 'SIGHUP: reloading' in text
    assert 'stopping' in text
