"""The volume driver of the Cinder 29 reference that tools/cinder-reference
runs: Cinder's own fake driver (``cinder.tests.fake_driver.
FakeLoggingVolumeDriver``, shipped in the cinder wheel and used by
Cinder's functional tests) with two things it lacks for the comparison.

* Its pool is named ``fake`` whatever the backend; here the pool takes the
  backend's ``volume_backend_name``, so the two backends' pools read
  ``reference@ma#ma`` and ``reference@noma#noma``.
* It reports no ``multiattach`` capability, and Cinder's scheduler takes a
  missing key as False, so a type with ``multiattach='<is> True'`` would
  find no backend.  ``reference_multiattach`` (a per-backend option of this
  module) says what the pool reports.

Everything else (no disks, no target commands: the ``fake`` target
helper, connection info of type ``iscsi`` without a portal) is Cinder's,
so what is measured is Cinder's control plane: its API, scheduler and
volume manager, their database and RPC traffic.

This file is imported by cinder-volume from the Cinder venv (the tool puts
this directory on its PYTHONPATH); nothing in cinder_lite imports it.
"""
from oslo_config import cfg

from cinder.tests import fake_driver

reference_opts = [
    cfg.BoolOpt('reference_multiattach', default=False,
                help='Whether this backend\'s pool reports the multiattach '
                     'capability.'),
]


class ReferenceFakeDriver(fake_driver.FakeLoggingVolumeDriver):
    """Cinder's logging fake, its pool named after the backend and with
    the multiattach capability its section sets."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        multiattach = False
        name = None
        if self.configuration is not None:
            self.configuration.append_config_values(reference_opts)
            multiattach = self.configuration.reference_multiattach
            name = self.configuration.safe_get('volume_backend_name')
        self.multiattach = bool(multiattach)
        self.backend_name = name or 'fake'

    def _update_volume_stats(self):
        super()._update_volume_stats()
        self._stats['multiattach'] = self.multiattach
        for pool in self._stats['pools']:
            pool['multiattach'] = self.multiattach
            # the fake reserves 100 % of an infinite pool; nothing reserved
            # reads as what it is (the capacity filter passes either way)
            pool['reserved_percentage'] = 0
