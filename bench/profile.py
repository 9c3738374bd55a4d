"""Where a service process's CPU goes, by framework, from py-spy samples.

``Recorder`` runs ``py-spy record`` (the ``bench`` extra installs it) on a
process and its children for as long as a bench cell runs, sampling the
threads that hold the GIL, without stopping the process (``--nonblocking``),
and writes the stacks in py-spy's raw format.  ``classify`` reads such a
file and gives each sample to one part of the stack of frameworks a
request goes through:

- ``http``: cheroot, webob, routes (the WSGI server and the request);
- ``rpc``: oslo.messaging, kombu, py-amqp, vine (calls, casts, replies,
  the listener);
- ``sql``: SQLAlchemy, PyMySQL, psycopg and cinder_lite's own stand-ins
  for PyMySQL's parsing (``cinder_lite/db/mysql_*.py``);
- ``taskflow``: taskflow, automaton, networkx;
- ``logging``: the standard library's logging and oslo.log;
- ``policy``, ``jsonschema``, ``context`` (oslo.context), ``auth``
  (keystonemiddleware), ``config`` (oslo.config);
- ``ours``: cinder_lite's own code;
- ``other``: a stack with none of the above (thread start-up).

A sample goes to the innermost frame that belongs to one of them: the
standard library, oslo.utils, oslo.serialization and futurist are
helpers that every part calls (``json.loads`` under oslo.messaging is the
bus's, under our code ours), so their frames count for whoever called
them.  futurist's thread pool runs both oslo.messaging's dispatch and
taskflow's: with nothing else below it, its frame counts for the
innermost part above.

The bench multiplies each part's share of a process's samples by the
CPU per cycle it measured for that process from /proc in the same cell,
so the parts add up to the measured figure (the CPU spent outside the
interpreter, in system calls and C, is spread over the parts in
proportion to their Python time: py-spy sees the frame that made the
call only while it holds the GIL).
"""
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

PARTS = ('http', 'rpc', 'sql', 'taskflow', 'logging', 'policy',
         'jsonschema', 'context', 'auth', 'config', 'ours', 'other')

# top-level package (or module) of a frame's file -> part
_PACKAGES = {
    'cheroot': 'http', 'webob': 'http', 'routes': 'http',
    'oslo_messaging': 'rpc', 'kombu': 'rpc', 'amqp': 'rpc', 'vine': 'rpc',
    'sqlalchemy': 'sql', 'pymysql': 'sql', 'psycopg': 'sql',
    'psycopg2': 'sql', 'psycopg_c': 'sql', 'psycopg_binary': 'sql',
    'taskflow': 'taskflow', 'automaton': 'taskflow', 'networkx': 'taskflow',
    'logging': 'logging', 'oslo_log': 'logging',
    'oslo_policy': 'policy', 'jsonschema': 'jsonschema',
    'oslo_context': 'context', 'keystonemiddleware': 'auth',
    'oslo_config': 'config',
}
# cinder_lite's files that do a driver's work in its place
_OURS_AS = {'cinder_lite/db/mysql_columns.py': 'sql',
            'cinder_lite/db/mysql_cursor.py': 'sql'}

_FILE = re.compile(r'\(([^()]*?)(?::\d+)?\)$')


def part_of(frame):
    """The part a py-spy frame (``func (path/file.py:line)``) belongs to,
    or None for a helper's frame."""
    m = _FILE.search(frame)
    path = m.group(1) if m else ''
    if path.startswith('cinder_lite/'):
        return _OURS_AS.get(path, 'ours')
    top = path.split('/', 1)[0]
    if top.endswith('.py'):
        top = top[:-3]
    return _PACKAGES.get(top)


def classify_stack(frames):
    """The part of one sample: its innermost frame that is not a
    helper's (``frames`` outermost first)."""
    for frame in reversed(frames):
        part = part_of(frame)
        if part is not None:
            return part
    return 'other'


def caller_of(frames):
    """The innermost frame of cinder_lite's own code in a sample
    (``module.function``, without the line), or None: whose call into a
    framework the sample is part of."""
    for frame in reversed(frames):
        m = _FILE.search(frame)
        path = m.group(1) if m else ''
        if path.startswith('cinder_lite/') and part_of(frame) == 'ours':
            module = path[len('cinder_lite/'):-len('.py')].replace('/', '.')
            return '%s.%s' % (module, frame.split(' (', 1)[0])
    return None


class Samples:
    """The samples of one process: ``parts`` (part -> samples) and
    ``callers`` ((part, caller_of) -> samples)."""

    def __init__(self):
        self.parts = collections.Counter()
        self.callers = collections.Counter()

    def __bool__(self):
        return bool(self.parts)

    def add(self, frames, count):
        part = classify_stack(frames)
        self.parts[part] += count
        self.callers[part, caller_of(frames)] += count


def classify(lines):
    """``Samples`` from py-spy raw lines (``frame;frame;... count``)."""
    out = Samples()
    for line in lines:
        line = line.rstrip('\n')
        if not line.strip():
            continue
        stack, _, count = line.rpartition(' ')
        if not stack or not count.isdigit():
            continue
        out.add(stack.split(';'), int(count))
    return out


def shares(counter):
    total = sum(counter.values())
    return {p: (counter.get(p, 0) / total if total else 0.0) for p in PARTS}


def py_spy():
    """The py-spy executable (next to this Python first), or None."""
    here = os.path.join(os.path.dirname(sys.executable), 'py-spy')
    if os.access(here, os.X_OK):
        return here
    return shutil.which('py-spy')


class Recorder:
    """py-spy on ``pid`` (and its children) until ``stop()``; ``stop()``
    returns its ``Samples``, and leaves what py-spy printed in
    ``output``."""

    def __init__(self, pid, rate=100):
        self.pid = pid
        self.rate = rate
        self.proc = None
        fd, self.path = tempfile.mkstemp(prefix='bench-py-spy-',
                                         suffix='.raw')
        os.close(fd)

    def start(self):
        exe = py_spy()
        if exe is None:
            raise RuntimeError('py-spy is not installed (pip install '
                               '-e .[bench])')
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [exe, 'record', '--nonblocking', '--gil', '--subprocesses',
             '-r', str(self.rate), '-f', 'raw', '-o', self.path,
             '-p', str(self.pid)],
            stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def stop(self):
        try:
            if self.proc.poll() is None:
                # on SIGINT py-spy writes what it sampled and exits
                self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)
            self.log.seek(0)
            self.output = 'pid %d: %s' % (self.pid, self.log.read().decode(
                errors='replace')[-400:].strip())
            with open(self.path) as f:
                # (empty when the process never held the GIL while
                # sampled: the caller decides whether that is an error)
                return classify(f)
        finally:
            self.log.close()
            os.unlink(self.path)
