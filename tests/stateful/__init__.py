"""A model-based, concurrent, stateful fuzzer of the whole REST API.

Where ``tests/functional/test_fuzz.py`` throws single requests at every
route, this one plays *sequences*: it keeps a model of the volume types,
volumes and attachments it made, and from several threads at once drives
meaningful scenarios against the real app over HTTP -- types (plain,
multiattach, single writer, pinned to a backend), volumes of them, the
attachments API (with and without connector, rw/ro at the top level and in
the connector, the same instance twice, os-complete, delete), every legacy
volume action in odd orders, retype and extend while attached, deleting a
volume and then its type, snapshots taken at the moment their volume is
detached, deleted, extended or retyped (then deleted, or the volume
deleted with cascade), an os-force_delete at the moment an attachment
of the volume is completed, an os-begin_detaching at the moment one of
two attachments is deleted, work the API accepts and a service does
afterwards (a backup, a clone, a revert to the latest snapshot, a
migration) at the moment its volume is deleted, extended, attached,
snapshotted or given other such work, the same request twice at the same
moment,
malformed variants, and callers that are admin, member, reader, another
project and a compute service.

The run is a series of *bursts*.  In a burst every thread plays its own
plan; then the fuzzer waits until nothing is in transition (a quiet period)
and checks the server's state, not a prediction of every answer: when two
requests race, any legal outcome is accepted.  What is never accepted:

* a 5xx answer;
* a success that is impossible whatever the timing (a reader or another
  project changing something, a member using an admin action, a malformed
  body taken, an attach mode other than the one asked for), or two at
  the same moment whose successes exclude each other (an os-complete and
  the os-force_delete of its volume: ``Fuzzer.judge_pair``);
* after the quiet period: a plain volume with live attachments of two
  instances; a volume status other than the one its attachments imply
  (``states.derive_volume_status``); the attachments API and the volume
  views disagreeing; ``connection_info.access_mode`` other than the
  attachment's mode; anything left in transition; an attachment of a volume
  that is gone; a volume on a backend its type excludes; a snapshot of a
  volume that is gone, or in an error status; a backup in an error
  status; a migration left under way; quota usage other than the
  volumes, snapshots and backups say;
* in the audit trail (``GET /os-attachment-events``): an attachment change
  without an event (each event must start where the previous one ended and
  the last must be the attachment's status now, or ``detached``), and,
  replaying the trail, a moment where a plain volume had two instances or
  two connections from one host, or a single-writer volume two writers.

Determinism: the plans are drawn from ``random.Random`` seeded with (seed,
burst, thread) and refer to objects symbolically (volume slot 3, "the
attachment this scenario made"), resolved when the step runs.  The same seed
therefore plays the same requests in the same order per thread; how the
threads interleave (and so which of two racing requests wins, and the ids
the server hands out) may differ from run to run.

On a finding the report names the seed and the burst, and lists the
requests of that burst that touched the objects involved, in the order the
server answered them, with their answers: the shortest failing sequence we
can give without a replay.

Every finding fails the run: ``fuzz(...).unexpected()`` lists them all
(there is no list of tolerated ones) and the command line exits 1.

Run it: ``python -m tests.stateful --steps 20000 --threads 8 --seed 1
--db sqlite`` (``mysql`` / ``postgresql``: a fresh database on the local
server, dropped afterwards; by default as a distributed cluster over
RabbitMQ, see tests/harness/cluster.py).  Its last line is
``stateful fuzz: N passed, M failed`` -- N bursts without a finding, M
with (the bootstrap counts as a failed burst when it has one).

The package, one concern a module, in the order a run uses them:

* ``world``    -- projects, callers, type kinds, slots, status strings;
* ``plans``    -- Step and the Planner: each thread's scenarios;
* ``model``    -- what the fuzzer knows of the server's objects;
* ``calls``    -- Call and the Resolver: a step made a concrete request;
* ``worker``   -- one thread: send, have the answer judged, observe;
* ``checker``  -- quiet period, state and audit-trail invariants;
* ``findings`` -- Finding and how findings are told apart;
* ``fuzzer``   -- the run (bootstrap, bursts, checks) and its results;
* ``targets``  -- where the app runs: embedded or a cluster;
* ``__main__`` -- the command line.
"""

from tests.stateful.fuzzer import Fuzzer
from tests.stateful.targets import ClusterTarget
from tests.stateful.targets import EmbeddedTarget
from tests.stateful.world import PROJECT

__all__ = ('ClusterTarget', 'EmbeddedTarget', 'Fuzzer', 'PROJECT', 'fuzz')


def fuzz(url, steps, threads=4, seed=0, steps_per_thread=25):
    """Run against an app at ``url`` (project PROJECT, noauth, backends
    ma and noma); returns the Fuzzer with its findings."""
    return Fuzzer(url, seed, threads, steps_per_thread).run(steps)
