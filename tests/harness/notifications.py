"""What an embedded stack notifies: ``listening(path, topic)`` starts a
stack that sends its notifications to ``topic`` and listens there."""
import contextlib
import threading

from oslo_config import cfg
import oslo_messaging as messaging

from tests.harness import stack as stack_mod


class Collector:
    """The (event_type, payload) of every notification received."""

    def __init__(self):
        self.events = []
        self.changed = threading.Condition()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.changed:
            self.events.append((event_type, payload))
            self.changed.notify_all()

    def wait_for(self, *wanted):
        def seen():
            got = [e for e, _ in self.events]
            return all(w in got for w in wanted)
        with self.changed:
            self.changed.wait_for(seen, 20)
        assert seen(), [e for e, _ in self.events]

    def payloads(self, prefix):
        """{event type: payload} of the events starting with ``prefix``
        (the last of each type)."""
        return {e: p for e, p in self.events if e.startswith(prefix)}


@contextlib.contextmanager
def listening(state_path, topic):
    """(a started stack notifying on ``topic``, its Collector)."""
    s = stack_mod.Stack(state_path, sections={
        'oslo_messaging_notifications': {'driver': 'messagingv2',
                                         'topics': topic}}).start()
    transport = messaging.get_notification_transport(cfg.CONF)
    found = Collector()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=topic,
                                     exchange=cfg.CONF.control_exchange)],
        [found], executor='threading')
    listener.start()
    try:
        yield s, found
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
        s.stop()
