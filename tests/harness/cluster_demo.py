"""``tools/cluster-demo``: the active/passive cluster of the multi-attach
blueprint, for a person to watch.  An embedded cinder_lite with a file
backend exporting over NBD or iSCSI, two guest kernels (QEMU TCG,
tests/harness/guests.py) on one volume: A writes, B watches, A hangs,
B's host takes over, B writes, A wakes and is refused.  Prints the
timeline and what the volume holds, and draws it as an SVG.

``--via takeover`` (the default): a single-writer volume, B's host takes
over with os-takeover.  ``--via fence``: as Pacemaker does it, a
multi-writer volume, B's cluster manager runs ``fence_cinder_lite``
(action off) against A's host, then B's kernel makes its disk writable.

    tools/cluster-demo [--protocol nbd|iscsi] [--via takeover|fence]
                       [--svg PATH] [--keep]
"""
import argparse
import os
import shutil
import sys
import tempfile

from tests.harness import dataplane as dp
from tests.harness import guests as guests_mod


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--protocol', choices=('nbd', 'iscsi'), default='nbd')
    p.add_argument('--via', choices=('takeover', 'fence'),
                   default='takeover',
                   help='how B takes over: os-takeover of a single-writer '
                   'volume, or fence_cinder_lite off against A\'s host '
                   '(a multi-writer volume, as Pacemaker runs it)')
    p.add_argument('--svg', help='where to draw the timeline (default: '
                   'cinder-lite-VIA-PROTOCOL.svg in the temporary '
                   'directory)')
    p.add_argument('--keep', action='store_true',
                   help='keep the work directory (logs, consoles)')
    args = p.parse_args(argv)
    why = guests_mod.available()
    if why:
        print('cluster-demo: %s' % why, file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix='cinder-lite-cluster-demo-')
    backend = (dp.nbd_backend() if args.protocol == 'nbd'
               else dp.iscsi_backend())
    started = []

    def start(name, role, disks, **kw):
        g = guests_mod.Guest(name, work, role, disks, **kw)
        started.append(g)
        print('starting guest %s (QEMU TCG, Debian kernel)' % name,
              flush=True)
        return g.start()
    from tests.harness import stack as stack_mod
    s = stack_mod.Stack(os.path.join(work, 'st'),
                        backends={'file': backend}).start()
    if args.protocol == 'iscsi':
        s.tgt_control = backend['target_control_port']
    try:
        run = guests_mod.active_passive(s, start, via=args.via)
    finally:
        for g in started:
            g.stop()
        s.stop()
    t0 = min(t for t, _ in run.a_acks)
    events = [(t, 'A', 'write %d acknowledged' % n) for t, n in run.a_acks]
    events += [(t, 'A', 'write %d refused: %s' % (n, why))
               for t, n, why in run.a_refused]
    events += [(t, 'B', 'write %d acknowledged' % n) for t, n in run.b_acks]
    names = {'paused': 'A hangs (its QEMU is stopped)',
             'asked': "B's host: no record of A for %.1f s, takes over"
                      % run.detection,
             'answered': 'takeover answered: B is the writer',
             'plugged': "B's read-write disk plugged in",
             'took': "B's kernel has the disk",
             'resumed': 'A wakes'}
    if args.via == 'fence':
        names.update({
            'asked': "B's cluster manager: no record of A for %.1f s, "
                     "runs fence_cinder_lite off against host-a"
                     % run.detection,
            'answered': 'fence_cinder_lite off: exit 0 (Success: Powered '
                        'OFF)',
            'plugged': 'B told to take over',
            'took': "B's kernel has made its disk writable"})
    events += [(run.times[k], '-', v) for k, v in names.items()]
    for t, who, what in sorted(events):
        print('%8.3f s  %s  %s' % (t - t0, who, what))
    print()
    print(run.summary())
    if run.fence_status is not None:
        code, out, _err = run.fence_status
        print('fence_cinder_lite status for host-a afterwards: exit %d, %s'
              % (code, out.strip()))
    # (not in the work directory: it is removed unless --keep)
    svg = args.svg or os.path.join(
        tempfile.gettempdir(),
        'cinder-lite-%s-%s.svg' % (args.via, args.protocol))
    guests_mod.timeline_svg(run, svg)
    print('timeline: %s' % svg)
    if args.keep:
        print('work directory: %s' % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    ok = not run.lost() and not run.a_after()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
