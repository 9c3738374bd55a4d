"""The Cinder 29 of ``tools/cinder-reference``, for the benches that put
Cinder beside cinder_lite (bench/versus_cinder.py, bench/storm.py).

``Reference().ensure()`` uses the Cinder that runs (the tool's pid files
and the API answering), else sets it up when it never was and starts it;
``stop()`` stops it again only when ``ensure`` started it.  ``groups()``
gives its service processes for the CPU columns: each service runs in a
session of its own whose id is the recorded pid, so a service's forked
workers are the members of that session.
"""
import json
import os
import subprocess
import sys

from tests.harness import util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, 'tools', 'cinder-reference')
SERVICES = ('cinder-api', 'cinder-scheduler', 'cinder-volume')


def tool(*args, capture=False):
    """Run the tool (a python3 script of the standard library only); its
    output goes to stderr unless captured."""
    argv = [TOOL] + list(args)
    if capture:
        return subprocess.run(argv, check=True, capture_output=True,
                              text=True).stdout
    subprocess.run(argv, check=True, stdout=sys.stderr)
    return None


def session_pids(leader):
    """The live members of the session ``leader`` leads."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            fields = util.stat_fields(int(entry))
            if fields and fields[3] == str(leader) and fields[0] != 'Z':
                found.append(int(entry))
    return found


class Reference:
    def __init__(self):
        env = json.loads(tool('env', capture=True))
        self.url = env['url']
        self.project = env['project']
        self.token = env['token']
        self.conf = env['conf']
        self.pid_files = env['pid_files']
        self.started = False

    def leaders(self):
        out = {}
        for name, path in self.pid_files.items():
            try:
                with open(path) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if session_pids(pid):
                out[name] = pid
        return out

    def ensure(self):
        if len(self.leaders()) == len(SERVICES):
            return self
        if not os.path.exists(self.conf):
            tool('setup')
        tool('start')
        self.started = True
        return self

    def groups(self):
        """{name: pids callable} of Cinder's services."""
        leaders = self.leaders()
        return {name.replace('cinder-', ''):
                (lambda leader=leaders[name]: session_pids(leader))
                for name in SERVICES}

    def stop(self):
        if self.started:
            tool('stop')
            self.started = False
