"""NovaStack.errors (tests/harness/openstack.py): what a failed test's
report says about the OpenStack deployment, read from the services' logs."""
import types

from tests.harness import openstack

REMOTE = (
    "2026-12-01 02:13:07.120 4711 ERROR nova.compute.manager [instance: "
    "41021444] Setting instance vm_state to ERROR: "
    "oslo_messaging.rpc.client.RemoteError: Remote error: DBDeadlock\n"
    "2026-12-01 02:13:07.120 4711 ERROR nova.compute.manager "
    "Traceback (most recent call last):\n")


def _stack(tmp_path, logs):
    stack = openstack.NovaStack(workdir=str(tmp_path))
    for name, text in logs.items():
        path = tmp_path / ('%s.log' % name)
        path.write_text(text)
        stack.processes[name] = types.SimpleNamespace(log_path=str(path))
    return stack


def test_error_lines_of_each_log_with_the_log_named(tmp_path):
    stack = _stack(tmp_path, {
        'compute-1': '2026-12-01 02:13:06.001 4711 INFO nova.compute.manager '
                     'Terminating instance\n' + REMOTE,
        'nova-conductor': '2026-12-01 02:13:06.001 4712 WARNING x y\n'})
    text = stack.errors()
    assert 'compute-1' in text and '(2 ERROR lines)' in text
    assert 'RemoteError: Remote error: DBDeadlock' in text
    assert 'Terminating instance' not in text
    assert 'nova-conductor' not in text


def test_only_the_last_lines_and_a_note_when_there_are_none(tmp_path):
    stack = _stack(tmp_path, {'compute-2': REMOTE * 50})
    assert stack.errors(lines=3).count('\n') == 3
    assert _stack(tmp_path, {'nova-api': 'quiet\n'}).errors() == \
        '(no ERROR lines in %s)' % tmp_path
