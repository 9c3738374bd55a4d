"""The floors of cinder_lite and a check that its imports only look down.

``python -m tests.layers`` reads every module under ``cinder_lite/`` with
``ast`` (nothing is imported), resolves each import to one of our modules
-- imports inside functions count: they are how a circle hides -- and
prints

- every arrow from a floor to a higher one,
- every arrow between two rooms of a floor of peers other than to the
  other room's ``rpcapi`` module,
- every import a compute-side module makes of the house behind the
  doorway (anything but the ground floor and ``rpcapi`` modules),
- every import an ``rpcapi`` module makes above the ground floor,
- every circle of modules, and every module on no floor;

then exits 1 if it printed anything.  ``tests/unit/test_layers.py`` runs
it, so a new back-arrow fails the suite.  doc/source/layout.rst explains the
floors to a newcomer.
"""
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'cinder_lite'

# Lowest first: (floor, rooms, kind).  A module belongs to the room of its
# longest matching prefix.  It may import any module of its own room and
# of a lower floor, and across the rooms of its own floor as the kind
# says: 'shared' (freely), 'peers' (only the other room's rpcapi) or
# 'client' (a floor that, besides its own room, may use only the ground
# floor and rpcapi modules).
FLOORS = [
    # ground: what everything may use; imports nothing above itself
    ('ground', ['cinder_lite.version',    # the installed version
                'cinder_lite.common',     # context, errors, states, bus,
                                          # policy, capability matching
                'cinder_lite.conf',       # option modules, no parsing
                'cinder_lite.iscsi',      # iSCSI on the wire: PDUs, SCSI
                                          # commands, reservations
                'cinder_lite.nbd',        # NBD over TLS: libnbd's client
                # a connection_info made a device, and a host's
                # connector: what a host and a backup service open
                # exports with
                'cinder_lite.connector.devices',
                'cinder_lite.connector.host'],
     'shared'),
    # the database: models, migrations, one query module per entity
    ('db', ['cinder_lite.db'], 'shared'),
    # what a volume service drives and the runner of every RPC service
    ('runtime', ['cinder_lite.volume.drivers',  # storage drivers
                 'cinder_lite.volume.targets',  # export targets
                 'cinder_lite.backup.drivers',  # backup stores
                 'cinder_lite.backup.chunked',  # their objects and blocks
                 'cinder_lite.service'],        # RPC servers, heartbeats
     'shared'),
    # the services; peers that talk only through each other's rpcapi
    ('services', ['cinder_lite.scheduler',  # placement of new volumes
                  'cinder_lite.volume',     # service layer, manager, flows
                  'cinder_lite.backup'],    # backups: service layer,
                                            # manager
     'peers'),
    # the REST API and what the API process serves besides
    ('api', ['cinder_lite.api',           # WSGI app, handlers, views
             'cinder_lite.dashboard'],    # static pages at /dashboard/
     'shared'),
    # the compute side: runs where the database is not; a client of the
    # services' doorways (rpcapi modules) and of REST only
    ('compute', ['cinder_lite.connector'], 'client'),
    # entry points: the only code that parses the configuration
    ('top', ['cinder_lite.cmd',           # console scripts
             'cinder_lite.wsgi',          # WSGI application scripts
             PACKAGE],                    # the package's __init__ only
     'shared'),
]

# The one allowed exception, and why: a ``rpcapi`` module is a service's
# public doorway, a client class that casts and calls over the bus and
# imports nothing but the ground floor (checked too).  So the scheduler
# and the volume service, peers, may each import the other's rpcapi (the
# scheduler casts creates to volume services, a volume service reports
# its capabilities to the schedulers), and the compute side the API's
# (attach over the bus): such an arrow cannot reach the house behind the
# doorway.  No arrow runs up a floor, to a doorway or not.
DOORWAY = 'rpcapi'


def _module_name(path, root):
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, '.')
    return rel[:-len('.__init__')] if rel.endswith('.__init__') else rel


def modules(root=ROOT):
    """{module name: path} of every module of the package under
    ``root``."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(root,
                                                             PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
        for name in sorted(filenames):
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                found[_module_name(path, root)] = path
    return found


def _resolve(name, known):
    """The longest prefix of ``name`` that is one of our modules."""
    while name and name not in known:
        name = name.rpartition('.')[0]
    return name or None


def imports(name, path, known):
    """[(line, imported module)] of our modules ``name`` imports."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith('__init__.py')
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = name.split('.')
                if not is_package:
                    parts = parts[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = '.'.join(parts + ([base] if base else []))
            # ``from pkg import mod`` imports pkg.mod when it is a module
            targets = ['%s.%s' % (base, a.name) for a in node.names]
        else:
            continue
        for target in targets:
            if target.split('.')[0] != PACKAGE:
                continue
            resolved = _resolve(target, known)
            if resolved and resolved != name:
                found.append((node.lineno, resolved))
    return found


def room_of(name):
    """(floor index, floor name, room prefix, kind) of module ``name``,
    or None."""
    best = None
    for index, (floor, rooms, kind) in enumerate(FLOORS):
        for room in rooms:
            # (the package itself is a room of one module: a new
            # package must be given a floor)
            if name == room or (room != PACKAGE and
                                name.startswith(room + '.')):
                if best is None or len(room) > len(best[2]):
                    best = (index, floor, room, kind)
    return best


def _is_doorway(name):
    return name.rpartition('.')[2] == DOORWAY


def problem(source, target):
    """Why ``source`` must not import ``target``, or None."""
    src, dst = room_of(source), room_of(target)
    if src is None or dst is None:
        return None     # reported as a module on no floor
    if _is_doorway(source) and dst[0] > 0:
        return 'a doorway (rpcapi) imports only the ground floor'
    if src[2] == dst[2]:
        return None
    if src[3] == 'client':
        if dst[0] == 0 or _is_doorway(target):
            return None
        return ('the compute side uses the ground floor and rpcapi '
                'modules only')
    if dst[0] > src[0]:
        return 'a back-arrow: %s is above %s' % (dst[1], src[1])
    if dst[0] == src[0] and src[3] == 'peers' and not _is_doorway(target):
        return 'peers talk only through rpcapi (%s -> %s)' % (src[2],
                                                               dst[2])
    return None


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        # iterative, so a deep graph cannot overflow the stack
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child,
                                                              ())))))
                    break
                if child in on_stack:
                    low[current] = min(low[current], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def check(root=ROOT):
    """Lines describing every problem of the package under ``root``;
    empty when the house is sound."""
    known = modules(root)
    lines = []
    graph = {}
    for name, path in sorted(known.items()):
        rel = os.path.relpath(path, root)
        if room_of(name) is None:
            lines.append('%s: module %s is on no floor (add it to FLOORS '
                         'in tests/layers.py)' % (rel, name))
        for lineno, target in imports(name, path, known):
            graph.setdefault(name, set()).add(target)
            why = problem(name, target)
            if why:
                lines.append('%s:%d: %s -> %s: %s' % (rel, lineno, name,
                                                      target, why))
    for component in circles(graph):
        lines.append('circle: %s' % ' <-> '.join(component))
    return lines


def main():
    lines = check()
    for line in lines:
        print(line)
    if lines:
        print('%d problem(s) in the import graph; see doc/source/layout.rst'
              % len(lines))
        return 1
    print('import graph: %d modules, every arrow looks down' %
          len(modules()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
