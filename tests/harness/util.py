"""Small things every kind of test needs: waiting for a condition, free
ports, required programs and services, processes by name."""
import hashlib
import os
import shutil
import socket
import time

REQUIRE_ENV = 'CINDER_LITE_REQUIRE_SERVICES'


def services_required():
    """CINDER_LITE_REQUIRE_SERVICES=1 (CI): what a test needs must be there;
    a missing service or program fails the test instead of skipping it."""
    return os.environ.get(REQUIRE_ENV, '').strip().lower() in (
        '1', 'true', 'yes', 'on')


def skip_or_fail(reason):
    """Skip the calling test for ``reason``, or fail it when the services
    are required."""
    import pytest
    if services_required():
        pytest.fail('%s, and %s=1 makes it mandatory' % (reason, REQUIRE_ENV),
                    pytrace=False)
    pytest.skip(reason)


def need(*programs):
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        skip_or_fail('%s not installed' % missing)


def wait_for(predicate, timeout=20.0, interval=0.05, what='condition'):
    """Poll ``predicate`` until it returns something truthy and return
    that; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('timed out after %.1f s waiting for %s'
                                 % (timeout, what))
        time.sleep(interval)


def free_port(host='127.0.0.1'):
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_range(count, host='127.0.0.1'):
    """``count`` consecutive ports starting at a free one (best effort),
    as ``target_port_range`` takes them."""
    start = min(free_port(host), 65535 - count)
    return '%d-%d' % (start, start + count - 1)


def processes(name, needle):
    """Pids of processes called ``name`` whose argv holds ``needle``."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == name.encode() and \
                any(needle.encode() in a for a in argv):
            found.append(int(pid))
    return found


def stat_fields(pid):
    """The fields of /proc/<pid>/stat from the third (state) on, as
    strings, or None when there is no such process.  (comm, field 2, may
    hold spaces and parentheses: the split is after the last ')'.)"""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            data = f.read().decode('ascii', 'replace')
    except OSError:
        return None
    return data[data.rindex(')') + 2:].split()


def pattern(size, seed):
    """``size`` bytes nobody would mistake for others (``seed``: bytes)."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha512(b'%s-%d' % (seed, block)).digest()
        block += 1
    return bytes(out[:size])
