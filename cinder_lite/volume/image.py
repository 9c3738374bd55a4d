"""Images and volumes: what a Glance image says about the volume made
from it, what a volume gives an image uploaded from it, and whether a
downloaded image file is what Glance says.  Plain functions; the Glance
calls are in ``glance.py``, ``qemu-img`` in ``common/qemu_img.py``.
"""
import glob
import json
import logging
import math
import os
import uuid

from cinder_lite.common import exception
from cinder_lite.common import qemu_img

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3
# what a file of the conversion directory is for: a download into a
# volume, or a volume's copy on its way to Glance
DOWNLOAD, UPLOAD = 'image', 'upload'
# the image property that names (by name or id) the volume type of the
# volumes made from the image without a type of their own (Cinder's)
VOLUME_TYPE_PROPERTY = 'cinder_img_volume_type'

# Glance's own keys of an image (its schema's base properties); every
# other key of an image is a property.
GLANCE_BASE_KEYS = frozenset([
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'container_format', 'disk_format', 'created_at',
    'updated_at', 'tags', 'direct_url', 'locations', 'min_ram', 'min_disk',
    'self', 'file', 'schema', 'stores'])

# What a volume keeps of its image besides the properties, as Cinder.
COPIED_ATTRIBUTES = ('checksum', 'container_format', 'disk_format',
                     'min_disk', 'min_ram', 'size')

# Namespaces Glance keeps for itself or that cannot hold for another
# image: never copied into an image uploaded from a volume (Cinder's
# list; operators add more with reserved_image_namespaces).
RESERVED_NAMESPACES = ('os_glance', 'img_signature', 'signature_verified')

# Glance's disk formats and qemu-img's names for them; the ones
# cinder_lite converts from (an image to a volume) and to (a volume to
# an image).
QEMU_FORMAT = {'raw': 'raw', 'qcow2': 'qcow2', 'vmdk': 'vmdk',
               'vdi': 'vdi', 'vhd': 'vpc', 'vhdx': 'vhdx',
               'ploop': 'parallels', 'iso': 'raw'}
UPLOAD_DISK_FORMATS = ('raw', 'vmdk', 'vdi', 'qcow2', 'vhd', 'vhdx',
                       'ploop')
CONTAINER_FORMATS = ('bare', 'ovf', 'ova', 'aki', 'ari', 'ami',
                     'docker', 'compressed')


def properties_of(image):
    """The properties of a Glance v2 image (every key that is not one of
    Glance's own)."""
    return {k: v for k, v in image.items() if k not in GLANCE_BASE_KEYS}


def as_text(value):
    """A property value as volume image metadata keeps it: text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def volume_image_metadata(image):
    """What a volume made from ``image`` (a Glance v2 image) records of
    it: the properties, then the image's id and name and the attributes
    Cinder copies (these win over properties of the same name)."""
    found = {k: as_text(v) for k, v in properties_of(image).items()
             if v is not None}
    found['image_id'] = image['id']
    if image.get('name'):
        found['image_name'] = image['name']
    for key in COPIED_ATTRIBUTES:
        if image.get(key) is not None:
            found[key] = as_text(image[key])
    return found


def is_reserved(key, extra_namespaces=()):
    """A key in a namespace never copied into an uploaded image."""
    # (a plain prefix, as Cinder matches them)
    return any(key.startswith(namespace) for namespace in
               tuple(RESERVED_NAMESPACES) + tuple(extra_namespaces))


def upload_properties(volume_image_metadata, core_properties,
                      extra_namespaces=(), given=()):
    """The properties an image uploaded from a volume takes from the
    volume's image metadata: all but the core ones (the image has its
    own id, name, formats, sizes and checksum), the reserved namespaces
    and the keys the request sets itself (``given``)."""
    # (nor Glance's own keys, which it would refuse as properties)
    skip = set(core_properties) | set(given) | GLANCE_BASE_KEYS
    return {k: v for k, v in (volume_image_metadata or {}).items()
            if k not in skip and not is_reserved(k, extra_namespaces)}


def gib_needed(size_bytes):
    """Whole GiB that hold ``size_bytes``."""
    return int(math.ceil(float(size_bytes) / GiB))


def check_fits(image, volume_size):
    """Refuse (ImageUnacceptable / InvalidInput, as Cinder words it) an
    image that is not active or does not fit a volume of
    ``volume_size`` GiB: its file, its min_disk, its virtual size."""
    if image.get('status') != 'active':
        raise exception.InvalidInput(
            reason='Image %s is not active.' % image['id'])
    size = image.get('size')
    if size is not None and gib_needed(size) > volume_size:
        raise exception.InvalidInput(
            reason='Size of specified image %sGB is larger than volume '
                   'size %sGB.' % (gib_needed(size), volume_size))
    min_disk = image.get('min_disk') or 0
    if volume_size < min_disk:
        raise exception.InvalidInput(
            reason='Volume size %sGB cannot be smaller than the image '
                   'minDisk size %sGB.' % (volume_size, min_disk))
    virtual_size = image.get('virtual_size')
    if virtual_size:
        check_virtual_size(virtual_size, volume_size, image['id'])


def check_virtual_size(virtual_size, volume_size, image_id):
    if gib_needed(virtual_size) > volume_size:
        raise exception.ImageUnacceptable(
            image_id=image_id,
            reason="Image virtual size is %dGB and doesn't fit in a "
                   "volume of size %dGB." % (gib_needed(virtual_size),
                                             volume_size))


def minimum_volume_size(image):
    """The smallest volume (GiB) ``image`` fits in."""
    return max(1, gib_needed(image.get('virtual_size') or
                             image.get('size') or 0),
               image.get('min_disk') or 0)


def qemu_format(image):
    """qemu-img's name for the disk format of ``image``; refused
    (ImageUnacceptable) when cinder_lite does not convert from it."""
    disk_format = image.get('disk_format')
    if disk_format not in QEMU_FORMAT:
        raise exception.ImageUnacceptable(
            image_id=image['id'],
            reason='disk format %s is not supported' % disk_format)
    return QEMU_FORMAT[disk_format]


def check_image_file(path, image, volume_size):
    """Check the downloaded file of ``image`` before it is written to a
    volume: it is what Glance says (disk_format), has no backing file
    (which could read any file of this host) and its virtual size fits.
    Returns the qemu-img format to read it with."""
    fmt = qemu_format(image)
    disk_format = image['disk_format']
    found = qemu_img.info(path)
    if found.get('format') != fmt and not (
            fmt == 'raw' and found.get('format') in ('raw', None)):
        raise exception.ImageUnacceptable(
            image_id=image['id'],
            reason='the image file is %s, not %s as its disk_format says'
                   % (found.get('format'), disk_format))
    if found.get('backing-filename') or found.get('full-backing-filename'):
        raise exception.ImageUnacceptable(
            image_id=image['id'], reason='the image has a backing file')
    check_virtual_size(found.get('virtual-size') or 0, volume_size,
                       image['id'])
    return fmt


def conversion_path(conversion_dir, purpose, volume_id):
    """A new file name in ``conversion_dir`` for ``purpose`` (DOWNLOAD or
    UPLOAD) of ``volume_id``: the volume's id is in it, so that what an
    interrupted flow left is found again (``remove_conversion_files``)."""
    return os.path.join(conversion_dir, '%s-%s-%s' % (
        purpose, volume_id, uuid.uuid4().hex[:8]))


def remove_conversion_files(conversion_dir, purpose, volume_id):
    """Remove the files of ``purpose`` of ``volume_id`` in
    ``conversion_dir`` (left by a flow a crash interrupted: its own are
    removed by the flow); returns their paths."""
    removed = []
    for path in glob.glob(os.path.join(
            glob.escape(conversion_dir), '%s-%s-*' % (purpose, volume_id))):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    if removed:
        LOG.info('volume %s: removed %s left in %s', volume_id,
                 ', '.join(os.path.basename(p) for p in removed),
                 conversion_dir)
    return removed
