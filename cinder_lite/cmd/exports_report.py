"""What ``cinder-lite-manage volume show-exports`` reports: the exports the
targets of this node's backends hold, next to what the database says of
their attachments.

The NBD and iSCSI targets keep one JSON record per attachment under
``<state_path>/targets/<backend section>/<protocol>/``; this module reads
those files and /proc only.  It starts no target daemon and asks none
(the volume service owns them), so it works while the service is down.

Problems flagged:

* an export whose attachment the database does not know (or no longer
  holds live);
* an export the database does not expect on this backend (its attachment
  is not connected here), or whose volume or mode differ from the
  database's;
* an export whose process (nbdkit, or the backend's tgtd) is not running;
* an export left in the directory of a protocol the backend no longer
  uses;
* a connected attachment of the backend whose export is missing.
"""
import json
import os

from cinder_lite.common import exception
from cinder_lite.conf import volume as volume_conf
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.volume import rules

# Targets that keep per-attachment records, and the process serving them.
PROTOCOLS = {'nbd': 'nbdkit', 'iscsi': 'tgtd'}
# The iSCSI target's record of its daemon, next to the export records.
TGTD_RECORD = 'tgtd.json'
# Mode of an attachment that has not been given one yet.
DEFAULT_MODE = rules.DEFAULT_MODE

HEADERS = ['Backend', 'Attachment ID', 'Volume ID', 'Protocol', 'Mode',
           'Export', 'Initiator', 'DB Status', 'Problem']


class Backend:
    """One volume service of this node: ``node@section``."""

    def __init__(self, conf, node, section):
        self.section = section
        self.host = '%s@%s' % (node, section)
        self.protocol = volume_conf.BackendConf(conf, section).target_protocol
        self.directory = os.path.join(conf.state_path, 'targets', section)


class Row:
    """An export, or a connected attachment without one."""

    def __init__(self, backend, attachment_id, volume_id, protocol, mode,
                 export=None, initiator=None, db_status=None):
        self.backend = backend
        self.attachment_id = attachment_id
        self.volume_id = volume_id
        self.protocol = protocol
        self.mode = mode
        self.export = export
        self.initiator = initiator
        self.db_status = db_status
        self.problems = []
        # a connected attachment whose export is not there
        self.missing = False

    def cells(self):
        return (self.backend, self.attachment_id, self.volume_id,
                self.protocol, self.mode, self.export, self.initiator,
                self.db_status, '; '.join(self.problems) or None)


def backends(conf, host=None):
    """The backends to report on: those of ``enabled_backends`` on
    ``[DEFAULT] host``; ``host`` is another node name, or one volume
    service ``node@section``."""
    if host and '@' in host:
        node, _, section = host.partition('@')
        if not node or not section or '#' in section:
            raise exception.InvalidInput(
                reason='--host %r is neither a node nor node@backend'
                       % host)
        return [Backend(conf, node, section)]
    node = host or conf.host
    return [Backend(conf, node, section) for section in
            conf.enabled_backends]


def read_records(directory):
    """attachment id -> export record of the JSON files in ``directory``
    (an unreadable one maps to None)."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return {}
    found = {}
    for name in names:
        if not name.endswith('.json') or name == TGTD_RECORD:
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                record = json.load(f)
        except (OSError, ValueError):
            record = None
        found[name[:-len('.json')]] = record if isinstance(record, dict) \
            else None
    return found


def _process_name(pid):
    try:
        with open('/proc/%d/comm' % int(pid)) as f:
            return f.read().strip()
    except (OSError, TypeError, ValueError):
        return None


def _tgtd_running(directory):
    try:
        with open(os.path.join(directory, TGTD_RECORD)) as f:
            pid = json.load(f).get('pid')
    except (OSError, ValueError, AttributeError):
        return False
    return _process_name(pid) == 'tgtd'


def _export_row(backend, protocol, directory, attachment_id, record):
    if record is None:
        row = Row(backend.host, attachment_id, None, protocol, None)
        row.problems.append('export record unreadable')
        return row
    if protocol == 'nbd':
        where = '%s:%s' % (record.get('host'), record.get('port'))
        row = Row(backend.host, attachment_id, record.get('volume_id'),
                  protocol, record.get('mode'), export=where)
        if _process_name(record.get('pid')) != PROTOCOLS[protocol]:
            row.problems.append('nbdkit (pid %s) not running'
                                % record.get('pid'))
    else:
        row = Row(backend.host, attachment_id, record.get('volume_id'),
                  protocol, record.get('mode'), export=record.get('iqn'),
                  initiator=record.get('initiator'))
        if not _tgtd_running(directory):
            row.problems.append('tgtd not running')
    if protocol != backend.protocol:
        row.problems.append('left over: the backend uses target_protocol '
                            '%s' % backend.protocol)
    return row


def _judge(row, attachment, connected_here):
    """Compare an export with its attachment in the database."""
    if attachment is None:
        row.problems.insert(0, 'unknown to the database')
        return
    row.db_status = attachment.attach_status
    if not connected_here:
        row.problems.insert(0, 'the database does not expect it here '
                               '(attachment %s)' % attachment.attach_status)
    if row.volume_id and row.volume_id != attachment.volume_id:
        row.problems.append('database says volume %s' % attachment.volume_id)
    mode = attachment.attach_mode or DEFAULT_MODE
    if row.mode and row.mode != mode:
        row.problems.append('database says mode %s' % mode)


def _live_attachment(session, attachment_id):
    try:
        return db_attachments.get(session, attachment_id)
    except exception.AttachmentNotFound:
        return None


def compare(conf, backends):
    """Rows for every export of ``backends`` and every connected
    attachment missing its export; the database must be configured."""
    rows = []
    for backend in backends:
        exports = {protocol: read_records(os.path.join(backend.directory,
                                                       protocol))
                   for protocol in PROTOCOLS}
        with db_api.reader() as session:
            connected = {a.id: a for a, _v in
                         db_attachments.connected_on_host(session,
                                                          backend.host)}
            found = []
            for protocol, records in exports.items():
                directory = os.path.join(backend.directory, protocol)
                for attachment_id, record in records.items():
                    row = _export_row(backend, protocol, directory,
                                      attachment_id, record)
                    attachment = connected.get(attachment_id) or \
                        _live_attachment(session, attachment_id)
                    _judge(row, attachment, attachment_id in connected)
                    found.append(row)
        if backend.protocol in PROTOCOLS:
            held = exports[backend.protocol]
            for attachment in connected.values():
                if attachment.id in held:
                    continue
                row = Row(backend.host, attachment.id, attachment.volume_id,
                          backend.protocol,
                          attachment.attach_mode or DEFAULT_MODE,
                          db_status=attachment.attach_status)
                row.missing = True
                row.problems.append('export missing')
                found.append(row)
        found.sort(key=lambda r: (r.volume_id or '', r.attachment_id))
        rows.extend(found)
    return rows


def local_connections(backends):
    """[(backend host, connected attachments)] of the backends whose
    target is not one with exports (``local``: the compute side opens
    the file itself); the database must be configured."""
    found = []
    for backend in backends:
        if backend.protocol in PROTOCOLS:
            continue
        with db_api.reader() as session:
            count = len(db_attachments.connected_on_host(session,
                                                         backend.host))
        if count:
            found.append((backend.host, count))
    return found
