"""The command line: ``python -m tests.stateful --steps N --threads T
--seed S --db sqlite|mysql|postgresql``.  Exits 1 on any finding; the
last line is ``stateful fuzz: N passed, M failed`` (bursts)."""
import argparse
import sys

import tests.stateful as stateful
from tests.stateful.fuzzer import Fuzzer
from tests.stateful.targets import ClusterTarget
from tests.stateful.targets import EmbeddedTarget


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tests.stateful',
        description=stateful.__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=2000,
                        help='requests to play (default 2000)')
    parser.add_argument('--threads', type=int, default=8)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--burst', type=int, default=25,
                        help='steps per thread per burst (default 25)')
    parser.add_argument('--db', choices=('sqlite', 'mysql', 'postgresql'),
                        default='sqlite')
    parser.add_argument('--target', choices=('embedded', 'cluster'),
                        help='embedded (default for sqlite) or cluster '
                             '(default for mysql and postgresql)')
    parser.add_argument('--api-workers', type=int, default=1,
                        help='API processes of a cluster target')
    args = parser.parse_args(argv)
    kind = args.target or ('embedded' if args.db == 'sqlite' else 'cluster')
    target = (EmbeddedTarget(args.db) if kind == 'embedded'
              else ClusterTarget(args.db, args.api_workers)).start()
    try:
        fz = Fuzzer(target.url, args.seed, args.threads, args.burst)
        fz.run(args.steps)
    finally:
        target.stop()
    print('target: %s on %s' % (kind, args.db))
    print(fz.summary())
    report = fz.report()
    if report:
        print(report)
    print(fz.verdict())
    return 1 if fz.unexpected() else 0


if __name__ == '__main__':
    sys.exit(main())
