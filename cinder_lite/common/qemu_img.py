"""``qemu-img``: read what an image file is and convert it (Debian's
qemu-utils).  Used by the volume service for images and by the drivers
to write images into volumes and read volumes into images."""
import json
import subprocess

from cinder_lite.common import exception


def _run(*args, timeout=3600):
    try:
        done = subprocess.run(('qemu-img',) + args, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise exception.ImageServiceError(
            reason='qemu-img is not installed (Debian: qemu-utils)') \
            from None
    except subprocess.TimeoutExpired:
        raise exception.ImageServiceError(
            reason='qemu-img %s did not finish within %d s'
                   % (args[0], timeout)) from None
    if done.returncode != 0:
        raise exception.ImageServiceError(
            reason='qemu-img %s failed: %s' % (
                args[0], (done.stderr or done.stdout).strip()[-500:]))
    return done.stdout


def info(path, fmt=None):
    """qemu-img's view of a file: format, virtual-size, backing file.
    ``fmt``: read it as that format (no probing)."""
    args = ['info', '--output=json']
    if fmt:
        args += ['-f', fmt]
    return json.loads(_run(*args, path, timeout=120))


def convert(source, source_format, dest, dest_format, dest_exists=False):
    """``qemu-img convert``; ``dest_exists``: write into the existing
    ``dest`` (a volume) instead of making a new file."""
    args = ['convert', '-f', source_format, '-O', dest_format]
    if dest_exists:
        args.append('-n')
    _run(*args, source, dest)
