"""The service layer behind ``/os-quota-sets``, ``/os-quota-class-sets``
and ``/limits``, and the usage audit of ``cinder-lite-manage quota``."""
import logging

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import volume_types as db_types

LOG = logging.getLogger(__name__)

# keys a client may send with the limits and that are not limits
# (cinderclient's quota-update sends tenant_id)
NOT_LIMITS = ('tenant_id', 'id')
# /limits: absolute key -> (resource, limit or used)
ABSOLUTE = (('maxTotalVolumes', 'volumes', 'limit'),
            ('maxTotalSnapshots', 'snapshots', 'limit'),
            ('maxTotalVolumeGigabytes', 'gigabytes', 'limit'),
            ('maxTotalBackups', 'backups', 'limit'),
            ('maxTotalBackupGigabytes', 'backup_gigabytes', 'limit'),
            ('totalVolumesUsed', 'volumes', 'in_use'),
            ('totalGigabytesUsed', 'gigabytes', 'in_use'),
            ('totalSnapshotsUsed', 'snapshots', 'in_use'),
            ('totalBackupsUsed', 'backups', 'in_use'),
            ('totalBackupGigabytesUsed', 'backup_gigabytes', 'in_use'))


def check_project_id(project_id):
    if not quota.PROJECT_ID.fullmatch(project_id or ''):
        raise exception.InvalidInput(
            reason='Invalid project id %r: 1 to 64 letters, digits, '
                   "'_', '-' or '.'." % (project_id or '')[:80])


def parse_limits(catalogue, given, what='quota set'):
    """Client names -> internal keys with checked integer limits."""
    bad = sorted(k for k in given
                 if k not in catalogue.by_name and k not in NOT_LIMITS)
    if bad:
        raise exception.InvalidInput(
            reason='Bad key(s) in %s: %s' % (what, ', '.join(bad)))
    limits = {}
    for name, value in given.items():
        if name in NOT_LIMITS:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise exception.InvalidInput(
                reason='%s must be an integer' % name)
        try:
            limit = int(str(value).strip())
        except ValueError:
            raise exception.InvalidInput(
                reason='%s must be an integer' % name) from None
        if limit < -1:
            raise exception.InvalidInput(reason='%s must be >= -1' % name)
        if limit > quota.LIMIT_MAX:
            raise exception.InvalidInput(
                reason='%s must be <= %d' % (name, quota.LIMIT_MAX))
        limits[catalogue.by_name[name]] = limit
    if not limits:
        raise exception.InvalidInput(
            reason='The %s names no limit.' % what)
    return limits


def _log_set(what, catalogue, limits):
    LOG.info('%s set: %s', what, ', '.join(
        '%s=%d' % (catalogue.api_name(k), v)
        for k, v in sorted(limits.items())))


def _counted_keys(keys):
    return [k for k in keys
            if db_quotas.split_key(k)[0] in db_quotas.COUNTED]


class QuotaService:

    def __init__(self, conf):
        self.conf = conf

    # -- quota sets ---------------------------------------------------------
    def _set(self, session, catalogue, limits, usage=None):
        shown = {}
        for key in catalogue.keys():
            name = catalogue.api_name(key)
            if usage is None:
                shown[name] = limits[key]
            else:
                in_use, reserved = usage.get(key, (0, 0))
                shown[name] = {'limit': limits[key], 'in_use': in_use,
                               'reserved': reserved}
        return shown

    def show(self, context, project_id, usage=False):
        policy.authorize(context, policy.QUOTA_SHOW,
                         {'project_id': project_id})
        check_project_id(project_id)
        with db_api.reader() as session:
            catalogue = quota.Catalogue(session)
            limits = quota.project_limits(self.conf, session, project_id)
            recorded = db_quotas.usage(session, project_id) if usage \
                else None
            return self._set(session, catalogue, limits, recorded)

    def defaults(self, context, project_id):
        policy.authorize(context, policy.QUOTA_SHOW,
                         {'project_id': project_id})
        check_project_id(project_id)
        with db_api.reader() as session:
            return self._set(session, quota.Catalogue(session),
                             quota.class_limits(self.conf, session))

    def update(self, context, project_id, given):
        """Set limits of a project; a limit below what it uses now is
        refused, decided with its usage rows locked (a create waits, or
        is seen)."""
        policy.authorize(context, policy.QUOTA_UPDATE,
                         {'project_id': project_id})
        check_project_id(project_id)
        with db_api.reader() as session:
            counted = _counted_keys(parse_limits(quota.Catalogue(session),
                                                 given))
        # rows to lock even where nothing was used yet
        quota.make_usage_rows(project_id, counted)

        # (run again from its start on a deadlock, as another update of
        # the project's limits through another Galera node makes it)
        def _update(session):
            # the types named stay until this commits (a type delete
            # waits, then drops what this wrote)
            for type_id in sorted({db_quotas.split_key(k)[1]
                                   for k in counted} - {None}):
                try:
                    db_types.lock_live(session, type_id)
                except exception.VolumeTypeNotFound:
                    pass  # parse_limits below names it a bad key
            catalogue = quota.Catalogue(session)
            limits = parse_limits(catalogue, given)
            used = db_quotas.read(session, project_id,
                                  _counted_keys(limits), lock=True)
            for key, limit in sorted(limits.items()):
                in_use, reserved = used.get(key, (0, 0))
                if 0 <= limit < in_use + reserved:
                    raise exception.InvalidInput(
                        reason='Quota %s limit must be equal or greater '
                               'than existing resources. Current usage is '
                               '%d and the requested limit is %d.' % (
                                   catalogue.api_name(key),
                                   in_use + reserved, limit))
            db_quotas.set_project_limits(session, project_id, limits)
            return catalogue, limits, self._set(
                session, catalogue,
                quota.project_limits(self.conf, session, project_id))
        catalogue, limits, shown = db_api.run_writer(_update)
        _log_set('quotas of project %s' % project_id, catalogue, limits)
        return shown

    def revert(self, context, project_id):
        """Back to the defaults (the project's own limits are dropped;
        its usage stays)."""
        policy.authorize(context, policy.QUOTA_DELETE,
                         {'project_id': project_id})
        check_project_id(project_id)
        db_api.run_writer(db_quotas.delete_project_limits, project_id)
        LOG.info('quotas of project %s reverted to the defaults',
                 project_id)

    # -- quota classes ------------------------------------------------------
    def show_class(self, context, class_name):
        policy.authorize(context, policy.QUOTA_CLASS_GET)
        check_project_id(class_name)
        with db_api.reader() as session:
            return self._set(session, quota.Catalogue(session),
                             quota.class_limits(self.conf, session,
                                                class_name))

    def update_class(self, context, class_name, given):
        policy.authorize(context, policy.QUOTA_CLASS_UPDATE)
        check_project_id(class_name)

        def _update(session):
            catalogue = quota.Catalogue(session)
            limits = parse_limits(catalogue, given, 'quota class set')
            db_quotas.set_class_limits(session, class_name, limits)
            return catalogue, limits, self._set(
                session, catalogue,
                quota.class_limits(self.conf, session, class_name))
        catalogue, limits, shown = db_api.run_writer(_update)
        _log_set('quota class %s' % class_name, catalogue, limits)
        return shown

    # -- limits -------------------------------------------------------------
    def absolute_limits(self, context, project_id):
        policy.authorize(context, policy.LIMITS,
                         {'project_id': project_id})
        check_project_id(project_id)
        with db_api.reader() as session:
            limits = quota.project_limits(self.conf, session, project_id)
            used = db_quotas.usage(session, project_id)
        values = {'limit': lambda r: limits[r],
                  'in_use': lambda r: used.get(r, (0, 0))[0]}
        return {key: values[what](resource)
                for key, resource, what in ABSOLUTE}


# -- the audit of cinder-lite-manage quota -----------------------------------
def _compare(recorded, real):
    """[(resource key, recorded, counted)] where they differ; both are
    (in use, reserved)."""
    return [(key, recorded.get(key, (0, 0)), real.get(key, (0, 0)))
            for key in sorted(set(real) | set(_counted_keys(recorded)))
            if recorded.get(key, (0, 0)) != real.get(key, (0, 0))]


def audit(project_id=None, repair=False):
    """[(project, resource key, recorded, counted)] where the recorded
    usage is not what the volumes say.  A project found so in one pass
    over the tables is looked at again with its usage rows locked (a
    change under way has then committed both the volume and its usage),
    and with ``repair`` its usage is set to what the volumes say."""
    with db_api.reader() as session:
        recorded = db_quotas.recorded_projects(session, project_id)
        counted = db_quotas.counted(session, project_id)
    suspects = sorted(p for p in set(recorded) | set(counted)
                      if _compare(recorded.get(p, {}), counted.get(p, {})))

    def _look_again(session, project):
        differ = _compare(db_quotas.usage(session, project, for_update=True),
                          db_quotas.counted(session, project).get(project,
                                                                  {}))
        if repair:
            for key, _before, after in differ:
                db_quotas.set_usage(session, project, key, *after)
        return differ

    found = []
    for project in suspects:
        # (run again from its start on a deadlock: what it found is
        # logged once it committed)
        for key, before, after in db_api.run_writer(_look_again, project):
            found.append((project, key, before, after))
            if repair:
                LOG.warning('quota usage of project %s, %s: recorded %s, '
                            'the volumes say %s; repaired',
                            project, key, before, after)
    return found
