"""How a volume service reaches Nova ([nova]): keystoneauth's session,
auth and adapter options, as every OpenStack service that calls another
names them.  Used to tell Nova that an attached volume grew (the
``volume-extended`` server external event) and to ask it to swap an
attached volume's disk when the volume migrates, as Cinder does; without
``auth_type`` nothing is sent and in-use volumes do not migrate."""
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'nova'


def register_opts(conf):
    group = cfg.OptGroup(GROUP, help=__doc__.split('\n\n')[0])
    conf.register_group(group)
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default('service_type', 'compute', group=GROUP)
    conf.set_default('valid_interfaces', ['public'], group=GROUP)


def list_opts():
    return [(GROUP, ks_loading.get_session_conf_options()
             + ks_loading.get_auth_common_conf_options()
             + ks_loading.get_adapter_conf_options(include_deprecated=False))]
