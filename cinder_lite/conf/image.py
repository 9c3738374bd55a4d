"""Options of the image service: where Glance is and how images become
volumes and volumes images ([DEFAULT], Cinder's names)."""
from oslo_config import cfg

image_opts = [
    cfg.ListOpt('glance_api_servers', default=[],
                help='Glance endpoints (URLs such as '
                     'http://glance.example.com:9292), tried in order. '
                     'Empty: Glance is looked up in the service catalog '
                     'of the caller\'s token (keystone auth), as '
                     'glance_catalog_info says.'),
    cfg.StrOpt('glance_catalog_info', default='image:glance:publicURL',
               help='Which catalog entry is Glance when '
                    'glance_api_servers is empty: '
                    '<service_type>:<service_name>:<endpoint_type>; an '
                    'empty name matches any.'),
    cfg.IntOpt('glance_request_timeout', default=60, min=1,
               help='Seconds to wait for an answer from Glance (for a '
                    'download or an upload: between two chunks).'),
    cfg.StrOpt('image_conversion_dir', default='$state_path/conversion',
               help='Where images are kept while they are downloaded, '
                    'converted or uploaded.'),
    cfg.BoolOpt('enable_force_upload', default=False,
                help='Allow os-volume_upload_image of an in-use volume '
                     'with force=true (the copy is then only crash '
                     'consistent).'),
    cfg.ListOpt('glance_core_properties',
                default=['checksum', 'container_format', 'disk_format',
                         'image_name', 'image_id', 'min_disk', 'min_ram',
                         'name', 'size'],
                help='Keys of a volume\'s image metadata that are not '
                     'copied as properties into an image uploaded from '
                     'it.'),
    cfg.ListOpt('reserved_image_namespaces', default=[],
                help='Namespaces of image properties never copied into an '
                     'image uploaded from a volume, besides os_glance, '
                     'img_signature and signature_verified, which never '
                     'are.'),
]


def register_opts(conf):
    conf.register_opts(image_opts)


def list_opts():
    return [('DEFAULT', image_opts)]
