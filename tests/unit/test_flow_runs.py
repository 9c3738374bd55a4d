"""How the volume service runs its taskflow flows (volume/flows):
engines kept per thread, inputs given per run, nothing persisted, and
the reverts still there."""
import inspect
import threading

import pytest
from taskflow.patterns import linear_flow
from taskflow.persistence import models as tf_models
from taskflow import storage as tf_storage
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


def test_a_kept_engine_validates_once_for_the_names_of_its_inputs(
        monkeypatch):
    validated = []
    taskflows = flows.tf_engine.SerialActionEngine.validate

    def counted(engine):
        validated.append(engine.inputs)
        return taskflows(engine)
    monkeypatch.setattr(flows.tf_engine.SerialActionEngine, 'validate',
                        counted)

    def runs():
        log = []
        for value in ('a', 'b', 'c'):
            flows.run('steps', _build, {
                'log': log, 'fail': None, 'value': value})
        # other names: validated again
        flows.run('steps', _build, {'log': log, 'fail': None,
                                    'value': 'd', 'more': 1})
        return log
    log = _in_thread(runs)
    assert validated == [frozenset({'log', 'fail', 'value'}),
                         frozenset({'log', 'fail', 'value', 'more'})]
    assert log == [(do, step, value) for value in 'abcd'
                   for do, step in (('do', 'first'), ('do', 'second'))]


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


def test_a_run_keeps_one_copy_of_its_details():
    def runs():
        storage = flows.run('steps', _build, {
            'log': [], 'fail': None, 'value': 'z'})
        detail = storage._flowdetail
        first = detail.find(storage.get_atom_uuid('first'))
        return storage, detail, first
    storage, detail, first = _in_thread(runs)
    # the results are where the engine wrote them, not in a copy merged
    # back (nor in a backend: the storage has none to ask)
    assert first.results == 'first:z'
    assert storage.fetch('second_result') == 'second:z'
    assert storage.get_flow_state() == 'SUCCESS'


def test_what_the_storage_overrides_is_still_taskflows():
    # _Storage replaces methods taskflow's Storage keeps private; an
    # upgrade that renames or reshapes them would leave the overrides
    # unused (the copies, retries and locks back) or break the runs
    base = inspect.getmembers(tf_storage.Storage)
    names = dict(base)
    for name, signature in (
            ('_with_connection', ['self', 'functor']),
            ('_fetch_flowdetail', ['self', 'clone']),
            ('_atomdetail_by_name',
             ['self', 'atom_name', 'expected_type', 'clone']),
            ('_save_flow_detail',
             ['self', 'conn', 'original_flow_detail', 'flow_detail']),
            ('_save_atom_detail',
             ['self', 'conn', 'original_atom_detail', 'atom_detail'])):
        assert name in names, name
        params = list(inspect.signature(names[name]).parameters)
        assert params[:len(signature)] == signature, (name, params)
    storage = tf_storage.Storage(tf_models.FlowDetail('f', 'u'))
    assert hasattr(storage._lock, 'read_lock')
    assert hasattr(storage._lock, 'write_lock')


def test_the_storage_calls_taskflows_methods_without_their_locks():
    locked = {name for name, member in vars(tf_storage.Storage).items()
              if getattr(member, '__code__', None) in (
                  tf_storage.Storage.fetch.__code__,
                  tf_storage.Storage.save.__code__)}
    # taskflow still guards its storage with the two decorators, on
    # the methods a run calls most
    assert {'fetch', 'save', 'get_atom_state', 'set_atom_state',
            'fetch_mapped_args', 'fetch_unsatisfied_args'} <= locked
    for name in locked:
        ours = getattr(flows._Storage, name)
        assert ours is getattr(tf_storage.Storage, name).__wrapped__, name
