"""tempest.conf for a running ``NovaStack`` (tests/harness/openstack.py),
and the few things Tempest expects an operator to have made first.

``prepare(stack)`` makes, as the cloud's administrator, what Tempest's
configuration names: two flavors, two small public images in Glance and a
multi-attach volume type; on a stack with an RBD backend also a type that
names it, the type of every volume Tempest makes (the multi-attach type
names it too).  ``sections(stack, made)`` reads the rest from
what is running (cinder_lite's pools and highest microversion, the
Keystone URL) and returns tempest.conf as ``{section: {option: value}}``.

What is switched off, and why, is listed in ``doc/source/tempest.rst``; the
comments below say it for each option.  Like openstack.py this module
imports no pytest.
"""
import collections

from tests.harness import openstack

# the sizes Tempest's own defaults assume (a volume of 1 GiB, servers
# booted from an image need a root disk)
FLAVORS = (('tempest-1', 64, 1), ('tempest-2', 128, 1))
IMAGE_BYTES = 1024 * 1024
MULTIATTACH_TYPE = 'tempest-multiattach'
RBD_TYPE = 'tempest-rbd'
# seconds Tempest waits for a status; Nova's fake driver and cinder_lite
# answer in seconds, so a test that waits this long has failed
BUILD_TIMEOUT = 120


def prepare(stack):
    """Flavors, images and the multi-attach type, made by the admin, and
    with an RBD backend (``stack.cinder.rbd_backend``) the type of
    Tempest's other volumes.  Returns {'flavors': [id, id], 'images': [id,
    id], 'multiattach_type': name, 'volume_type': name or None}."""
    admin = stack.admin()
    flavors = []
    for name, ram, disk in FLAVORS:
        flavors.append(admin.compute('POST', '/flavors', {'flavor': {
            'name': name, 'ram': ram, 'vcpus': 1, 'disk': disk}},
            expect=200).json()['flavor']['id'])
    images = []
    for name in ('tempest-raw', 'tempest-raw-alt'):
        image = admin.image('POST', '/v2/images', {
            'name': name, 'disk_format': 'raw', 'container_format': 'bare',
            'visibility': 'public'}, expect=201).json()
        # a blank raw disk: the fake virt driver never reads it
        admin.image('PUT', '/v2/images/%s/file' % image['id'],
                    data=bytes(IMAGE_BYTES), expect=204)
        images.append(image['id'])
    # Tempest's volumes on the RBD backend when there is one: the file
    # backends keep test_nova.py's and test_images.py's
    rbd = stack.cinder.rbd_backend
    on_rbd = {'volume_backend_name': rbd} if rbd else {}
    admin.volume('POST', '/types', {'volume_type': {
        'name': MULTIATTACH_TYPE,
        'extra_specs': dict(on_rbd, multiattach='<is> True')}}, expect=200)
    if rbd:
        admin.volume('POST', '/types', {'volume_type': {
            'name': RBD_TYPE, 'extra_specs': on_rbd}}, expect=200)
    return {'flavors': flavors, 'images': images,
            'multiattach_type': MULTIATTACH_TYPE,
            'volume_type': RBD_TYPE if rbd else None}


def backends(stack):
    """(backend names, storage_protocol, vendor_name) from get_pools:
    Tempest makes volume types with the protocol and vendor as extra
    specs and expects a backend to take them."""
    pools = stack.admin().volume(
        'GET', '/scheduler-stats/get_pools?detail=true',
        expect=200).json()['pools']
    caps = [p['capabilities'] for p in pools]
    names = sorted({c['volume_backend_name'] for c in caps})
    protocol = collections.Counter(c['storage_protocol'] for c in caps)
    vendor = collections.Counter(c['vendor_name'] for c in caps)
    return names, protocol.most_common(1)[0][0], vendor.most_common(1)[0][0]


def max_volume_version(stack):
    versions = stack.admin().session.get(
        stack.cinder.url + '/', timeout=30).json()['versions']
    return max((v['version'] for v in versions if v.get('version')),
               key=lambda s: tuple(int(x) for x in s.split('.')))


def sections(stack, made, workspace):
    names, protocol, vendor = backends(stack)
    keystone = stack.keystone_url
    return {
        'DEFAULT': {'log_dir': workspace, 'log_file': 'tempest.log',
                    'debug': 'true'},
        'oslo_concurrency': {'lock_path': workspace + '/locks'},
        'auth': {
            'admin_username': 'admin',
            'admin_password': openstack.ADMIN_PASSWORD,
            'admin_project_name': 'admin',
            'admin_domain_name': openstack.DOMAIN,
            'use_dynamic_credentials': 'true',
            'tempest_roles': 'member',
            # no Neutron: no network, subnet or router per test project
            'create_isolated_networks': 'false',
        },
        'identity': {
            'uri_v3': keystone, 'auth_version': 'v3',
            'region': openstack.REGION, 'v3_endpoint_type': 'public',
        },
        'identity-feature-enabled': {'api_v2': 'false'},
        # cinder_lite, Nova 34 and Glance 33 enforce the reader/member
        # roles: Tempest then reads with a project reader's token
        'enforce_scope': {'cinder': 'true', 'nova': 'true',
                          'glance': 'true'},
        # the catalog's network service is the no-network stand-in
        # (no_network.py): Tempest's compute classes skip themselves
        # without one, and with create_isolated_networks = false and no
        # fixed network Tempest only reads from it (empty lists)
        'service_available': {
            'cinder': 'true', 'nova': 'true', 'glance': 'true',
            'neutron': 'true', 'swift': 'false', 'horizon': 'false',
        },
        'volume': {
            'catalog_type': 'block-storage', 'endpoint_type': 'publicURL',
            'region': openstack.REGION,
            'backend_names': ','.join(names),
            'storage_protocol': protocol, 'vendor_name': vendor,
            'volume_type_multiattach': made['multiattach_type'],
            # the type of the volumes Tempest makes without one of its
            # own (volume and compute tests, boot from volume); empty:
            # cinder_lite's default type
            'volume_type': made.get('volume_type') or '',
            'min_microversion': '3.0',
            'max_microversion': max_volume_version(stack),
            'build_timeout': BUILD_TIMEOUT,
            # the deployment's backup service keeps its backups in a
            # POSIX directory (openstack.CinderLite); Tempest asks for a
            # container only of the swift driver
            'backup_driver': 'posix',
            # how the file and RBD drivers name what they hold (an
            # unmanaged volume or snapshot keeps its name)
            'manage_volume_ref': 'source-name,volume-%s',
            'manage_snapshot_ref': 'source-name,snapshot-%s',
        },
        'volume-feature-enabled': {
            'multi_backend': 'true' if len(names) > 1 else 'false',
            'api_extensions': 'all',
            # claimed: snapshots and clones (doc/source/snapshots.rst), also of
            # a volume that is extended afterwards
            'snapshot': 'true', 'clone': 'true',
            'extend_volume_with_snapshot': 'true',
            # claimed: backups (issue 46), made, restored,
            # exported and imported by the deployment's backup service
            'backup': 'true',
            # claimed: manage and unmanage of volumes and snapshots
            # (issue 47)
            'manage_volume': 'true', 'manage_snapshot': 'true',
            # not offered (doc/source/tempest.rst): replication, encryption
            'replication': 'false',
            'extend_attached_encrypted_volume': 'false',
            # image <-> volume <-> instance snapshot dependencies: the
            # file driver copies, so nothing depends on a deleted parent
            'enable_volume_image_dep_tests': 'true',
            # claimed: cinder_lite extends attached volumes
            'extend_attached_volume': 'true',
        },
        'compute': {
            'image_ref': made['images'][0],
            'image_ref_alt': made['images'][1],
            'flavor_ref': made['flavors'][0],
            'flavor_ref_alt': made['flavors'][1],
            'region': openstack.REGION,
            # the resize test moves servers between the two fake hosts
            'min_compute_nodes': len(openstack.COMPUTES),
            'fixed_network_name': '',
            'min_microversion': '2.1', 'max_microversion': 'latest',
            'build_timeout': BUILD_TIMEOUT,
        },
        'compute-feature-enabled': {
            'volume_multiattach': 'true',
            'resize': 'true', 'cold_migration': 'true',
            # live migration of the fake driver is not what is tested here
            'live_migration': 'false', 'block_migration_for_live_migration':
            'false', 'volume_backed_live_migration': 'false',
            # shelving an image-backed server snapshots it into Glance
            # (the fake driver uploads nothing); an attached volume goes
            # through the attachment API with and without a host
            'shelve': 'true',
            # a snapshot of a volume-backed server is a snapshot of its
            # volumes (Nova asks cinder_lite with force)
            'snapshot': 'true',
            # swap volume is Cinder's volume migration
            'swap_volume': 'false',
            'attach_encrypted_volume': 'false',
            # what the fake driver or a cloud without networks lacks
            'console_output': 'false', 'vnc_console': 'false',
            'spice_console': 'false', 'serial_console': 'false',
            'rescue': 'false', 'stable_rescue': 'false',
            'change_password': 'false', 'interface_attach': 'false',
            'metadata_service': 'false', 'config_drive': 'false',
            'personality': 'false',
        },
        # the fake driver boots nothing: no guest to ping or SSH into
        'validation': {'run_validation': 'false'},
        'image-feature-enabled': {'api_v2': 'true', 'import_image': 'false'},
    }
