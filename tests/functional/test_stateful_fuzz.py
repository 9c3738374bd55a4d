"""The model-based, concurrent fuzzer (tests/stateful/) against the
embedded stack on SQLite: a few thousand requests from several threads,
fixed seeds.  A finding prints the seed, the burst and the requests that
led to it; the same seed plays the same requests per thread (how the
threads interleave may differ)."""
import pytest

from tests import stateful

# (seed, threads, requests): about 15 s each on a 2-core machine
RUNS = ((1, 6, 1500), (7, 4, 1000))


@pytest.fixture
def target(tmp_path):
    # one stack per run: a run's model knows only what it did itself (an
    # earlier run's os-reset_status would look like a broken invariant)
    t = stateful.EmbeddedTarget(workdir=str(tmp_path)).start()
    yield t
    t.stop()


@pytest.mark.parametrize('seed,threads,steps', RUNS)
def test_stateful_fuzz(target, seed, threads, steps):
    fz = stateful.fuzz(target.url, steps, threads=threads, seed=seed)
    print(fz.summary())
    print(fz.verdict())
    assert not fz.unexpected(), '%s\n%s\n%s' % (
        fz.summary(), fz.report(), fz.verdict())
