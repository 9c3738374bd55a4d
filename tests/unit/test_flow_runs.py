"""How the volume service runs its taskflow flows (volume/flows):
engines kept per thread, inputs given per run, nothing persisted, and
the reverts still there."""
import threading

import pytest
from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.volume import flows


class _Step(task.Task):
    """Records what it did in ``log``; fails when ``fail`` names it."""

    def __init__(self, name, provides=None):
        super().__init__(name=name, provides=provides)

    def execute(self, log, fail, value):
        log.append(('do', self.name, value))
        if fail == self.name:
            raise RuntimeError('%s failed' % self.name)
        return '%s:%s' % (self.name, value)

    def revert(self, log, value, **kwargs):
        log.append(('undo', self.name, value))


def _build():
    return linear_flow.Flow('steps').add(
        _Step('first', provides='first_result'),
        _Step('second', provides='second_result'))


def _in_thread(fn):
    """Each test on a thread of its own: the engines are kept per
    thread."""
    out = {}

    def run():
        try:
            out['value'] = fn()
        except BaseException as e:
            out['error'] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if 'error' in out:
        raise out['error']
    return out['value']


def test_a_kept_engine_runs_each_time_on_the_inputs_given():
    def runs():
        log = []
        results = []
        engines = []
        for value in ('a', 'b'):
            storage = flows.run('steps', _build, {
                'log': log, 'fail': None, 'value': value})
            results.append(storage.fetch('second_result'))
            engines.append(storage)
        return log, results, engines
    log, results, storages = _in_thread(runs)
    assert results == ['second:a', 'second:b']
    assert log == [('do', 'first', 'a'), ('do', 'second', 'a'),
                   ('do', 'first', 'b'), ('do', 'second', 'b')]
    # one engine (and its storage) for both runs
    assert storages[0] is storages[1]


def test_a_failure_reverts_what_ran_and_the_next_run_starts_clean():
    def runs():
        log = []
        with pytest.raises(RuntimeError, match='second failed'):
            flows.run('steps', _build, {
                'log': log, 'fail': 'second', 'value': 'x'})
        failed = list(log)
        log.clear()
        storage = flows.run('steps', _build, {
            'log': log, 'fail': None, 'value': 'y'})
        return failed, list(log), storage.fetch('first_result')
    failed, after, first = _in_thread(runs)
    assert failed == [('do', 'first', 'x'), ('do', 'second', 'x'),
                      ('undo', 'second', 'x'), ('undo', 'first', 'x')]
    assert after == [('do', 'first', 'y'), ('do', 'second', 'y')]
    assert first == 'first:y'


def test_nothing_is_kept_by_the_persistence_backend():
    conn = flows.UNKEPT.get_connection()
    assert list(conn.get_logbooks()) == []
    detail = object()
    assert conn.update_atom_details(detail) is detail
    assert conn.update_flow_details(detail) is detail
