"""Glance's image API v2, as cinder_lite uses it: find an image, read
and write its file, make and remove an image.

Every call carries the caller's token (in keystone mode it is the
caller's Keystone token, so Glance decides what the caller may see).
Where Glance is: ``glance_api_servers``, else the caller's service
catalog (``glance_catalog_info``), which the API puts in the request
context.
"""
import hashlib
import logging

import requests

from cinder_lite.common import exception
from cinder_lite.common import sparse

LOG = logging.getLogger(__name__)
CHUNK = 1024 * 1024


def endpoints(conf, context):
    """Glance URLs to try, in order; ImageServiceError when there are
    none."""
    if conf.glance_api_servers:
        return [u if '://' in u else 'http://' + u
                for u in conf.glance_api_servers]
    service_type, _, rest = conf.glance_catalog_info.partition(':')
    service_name, _, interface = rest.partition(':')
    interface = interface or 'publicURL'
    found = []
    for entry in getattr(context, 'service_catalog', None) or []:
        if entry.get('type') != service_type or (
                service_name and entry.get('name') not in ('', None,
                                                           service_name)):
            continue
        for endpoint in entry.get('endpoints') or []:
            # keystonemiddleware hands the catalog in v2 form
            # (publicURL, ...); a v3 one lists interface and url
            url = endpoint.get(interface) or (
                endpoint.get('url') if endpoint.get('interface')
                == interface.replace('URL', '') else None)
            if url:
                found.append(url)
    if not found:
        raise exception.ImageServiceError(
            reason='no Glance endpoint: set glance_api_servers, or call '
                   'with a token whose catalog has an image service')
    return found


class Hashing:
    """The hash of an image's data as it is downloaded, the one Glance
    recorded: ``os_hash_algo``, else the MD5 ``checksum``.  (Hashing in a
    thread of its own, beside the download, was measured and bought
    nothing on two busy cores: bench/images.py, doc/source/images.rst.)"""

    def __init__(self, image):
        self.hash = self.expected = self.what = None
        algo = image.get('os_hash_algo')
        if algo and image.get('os_hash_value'):
            try:
                self.hash = hashlib.new(algo)
            except ValueError:
                pass
            else:
                self.expected = image['os_hash_value']
                self.what = 'its %s hash does not match' % algo
        if self.hash is None and image.get('checksum'):
            self.hash = hashlib.md5(usedforsecurity=False)
            self.expected = image['checksum']
            self.what = 'its checksum does not match'

    def update(self, chunk):
        if self.hash is not None:
            self.hash.update(chunk)

    @property
    def mismatch(self):
        """The reason to refuse the data hashed, or None."""
        if self.hash is not None and \
                self.hash.hexdigest() != self.expected:
            return self.what
        return None


class GlanceClient:

    def __init__(self, conf, context):
        self.urls = [u.rstrip('/') for u in endpoints(conf, context)]
        self.token = getattr(context, 'auth_token', None)
        self.timeout = conf.glance_request_timeout
        self.session = requests.Session()

    def _request(self, method, path, expect, image_id=None, **kwargs):
        headers = dict(kwargs.pop('headers', {}))
        if self.token:
            headers['X-Auth-Token'] = self.token
        last = None
        for base in self.urls:
            url = base + (path if base.endswith('/v2') else '/v2' + path)
            try:
                resp = self.session.request(method, url, headers=headers,
                                            timeout=self.timeout, **kwargs)
            except requests.RequestException as e:
                LOG.warning('Glance at %s: %s', base, e)
                last = e
                continue
            if resp.status_code in expect:
                return resp
            if resp.status_code == 404 and image_id:
                raise exception.ImageNotFound(image_id=image_id)
            if resp.status_code in (401, 403):
                raise exception.NotAuthorized(
                    'Glance refused %s %s: %s' % (method, path,
                                                  resp.text[:300]))
            raise exception.ImageServiceError(
                reason='Glance answered %s %s with %d: %s' % (
                    method, path, resp.status_code, resp.text[:300]))
        raise exception.ImageServiceError(
            reason='Glance could not be reached: %s' % last)

    def show(self, image_id):
        return self._request('GET', '/images/%s' % image_id, (200,),
                             image_id=image_id).json()

    def find_by_name(self, name):
        return self._request('GET', '/images', (200,),
                             params={'name': name}).json()['images']

    def download(self, image, path, existing=False, limit=None):
        """Write the file of ``image`` (a dict from ``show``) to
        ``path``, checking its size and its hash as Glance recorded
        them; returns its length.  Written sparse: its blocks of zeros
        are holes (which qemu-img skips instead of reading), so the file
        at ``path`` must read as zeros: a new file, made here, or with
        ``existing``, a file (a volume's) that does and is written in
        place, never shortened.  ``limit``: bytes beyond which the image
        is refused as it comes.

        Not fsync'd: a new file's only reader is qemu-img on this host,
        through the page cache, and it is removed once read; a volume
        is no more synced than qemu-img convert leaves it."""
        resp = self._request('GET', '/images/%s/file' % image['id'],
                             (200, 204), image_id=image['id'], stream=True)
        if resp.status_code == 204:
            raise exception.ImageUnacceptable(
                image_id=image['id'], reason='the image has no data')
        hashing = Hashing(image)
        with open(path, 'r+b' if existing else 'wb') as f:
            writer = sparse.SparseWriter(f.fileno())
            try:
                for chunk in resp.iter_content(CHUNK):
                    if limit is not None and \
                            writer.written + len(chunk) > limit:
                        raise exception.ImageUnacceptable(
                            image_id=image['id'],
                            reason='it has more than the %d bytes of the '
                                   'volume' % limit)
                    writer.write(chunk)
                    hashing.update(chunk)
            except requests.RequestException as e:
                raise exception.ImageServiceError(
                    reason='the download of image %s broke off after %d '
                           'bytes: %s' % (image['id'], writer.written, e)) \
                    from None
            finally:
                resp.close()
            writer.finish()
        written = writer.written
        LOG.debug('image %s: %d bytes downloaded, %d of them left as holes',
                  image['id'], written, writer.skipped)
        if image.get('size') is not None and written != image['size']:
            raise exception.ImageUnacceptable(
                image_id=image['id'],
                reason='%d bytes downloaded, Glance records %d'
                       % (written, image['size']))
        mismatch = hashing.mismatch
        if mismatch:
            raise exception.ImageUnacceptable(image_id=image['id'],
                                              reason=mismatch)
        return written

    def create(self, meta):
        """Make an image record (``queued``); returns it."""
        return self._request('POST', '/images', (201,), json=meta).json()

    def upload(self, image_id, path):
        """Send the file at ``path`` as the data of image ``image_id``."""
        with open(path, 'rb') as f:
            self._request('PUT', '/images/%s/file' % image_id, (204,),
                          image_id=image_id,
                          data=iter(lambda: f.read(CHUNK), b''),
                          headers={'Content-Type':
                                   'application/octet-stream'})

    def delete(self, image_id):
        try:
            self._request('DELETE', '/images/%s' % image_id, (204,),
                          image_id=image_id)
        except exception.ImageNotFound:
            pass
