"""Handlers for /extensions: Cinder's API extensions that cinder_lite
serves, described as Cinder describes them (name, alias, description,
updated).  An extension is listed only when what it adds is served here.

Success codes: all 200, every microversion.
"""
from cinder_lite.api import wsgi
from cinder_lite.common import exception

# (name, alias, updated, description): Cinder's own words for each; the
# comment says what of it cinder_lite serves.
EXTENSIONS = (
    # os-reset_status, os-force_detach, os-force_delete
    ('AdminActions', 'os-admin-actions', '2012-08-25T00:00:00+00:00',
     'Enable admin actions.'),
    ('AvailabilityZones', 'os-availability-zone',
     '2013-06-27T00:00:00+00:00', 'Describe Availability Zones.'),
    ('Capabilities', 'capabilities', '2015-08-31T00:00:00+00:00',
     'Capabilities support.'),
    # disabled_reason, frozen in os-services; disable-log-reason
    ('ExtendedServices', 'os-extended-services',
     '2014-01-10T00:00:00-00:00', 'Extended services support.'),
    ('Hosts', 'os-hosts', '2011-06-29T00:00:00+00:00',
     'Admin-only host administration.'),
    ('QuotaClasses', 'os-quota-class-sets', '2012-03-12T00:00:00+00:00',
     'Quota classes management support.'),
    ('Quotas', 'os-quota-sets', '2011-08-08T00:00:00+00:00',
     'Quota management support.'),
    ('Scheduler_stats', 'scheduler-stats', '2014-09-07T00:00:00+00:00',
     'Scheduler stats support.'),
    ('Services', 'os-services', '2012-10-28T00:00:00-00:00',
     'Services support.'),
    ('TypesExtraSpecs', 'os-types-extra-specs', '2011-08-24T00:00:00+00:00',
     'Type extra specs support.'),
    ('TypesManage', 'os-types-manage', '2011-08-24T00:00:00+00:00',
     'Types manage support.'),
    # the usage in /limits
    ('UsedLimits', 'os-used-limits', '2013-10-03T00:00:00+00:00',
     'Provide data on limited resources that are being used.'),
    ('VolumeActions', 'os-volume-actions', '2012-05-31T00:00:00+00:00',
     'Enable volume actions.'),
    ('VolumeHostAttribute', 'os-vol-host-attr', '2011-11-03T00:00:00+00:00',
     'Expose host as an attribute of a volume.'),
    ('VolumeMigStatusAttribute', 'os-vol-mig-status-attr',
     '2013-08-08T00:00:00+00:00',
     'Expose migration_status as an attribute of a volume.'),
    ('VolumeTenantAttribute', 'os-vol-tenant-attr',
     '2011-11-03T00:00:00+00:00',
     'Expose the internal project_id as an attribute of a volume.'),
    ('VolumeTypeAccess', 'os-volume-type-access', '2014-06-26T00:00:00Z',
     'Volume type access support.'),
)


def _view(name, alias, updated, description):
    return {'name': name, 'alias': alias, 'description': description,
            'updated': updated, 'links': []}


@wsgi.expected_errors()
def list_extensions(req):
    return wsgi.json_response({'extensions': [_view(*e)
                                              for e in EXTENSIONS]})


@wsgi.expected_errors(404)
def show_extension(req):
    alias = req.urlvars['alias']
    for extension in EXTENSIONS:
        if extension[1] == alias:
            return wsgi.json_response({'extension': _view(*extension)})
    raise exception.ExtensionNotFound(alias=alias)
