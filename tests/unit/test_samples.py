"""The checked-in config and policy samples match what the code
generates; regenerate them with the commands in README.rst when this
fails."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ETC = os.path.join(ROOT, 'etc', 'cinder-lite')


def _generate(code, args, tmp_path):
    out = tmp_path / 'sample'
    subprocess.run([sys.executable, '-c', code] + args +
                   ['--output-file', str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    return out.read_text()


SAMPLES = [
    ('from oslo_config import generator; generator.main(sys.argv[1:])',
     'cinder-lite-config-generator.conf', 'cinder-lite.conf.sample',
     'oslo-config-generator'),
    ('from oslo_policy import generator; '
     'generator.generate_sample(sys.argv[1:])',
     'cinder-lite-policy-generator.conf', 'policy.yaml.sample',
     'oslopolicy-sample-generator'),
]


@pytest.mark.parametrize('code,generator_conf,sample,command', SAMPLES)
def test_sample_is_current(tmp_path, code, generator_conf, sample,
                           command):
    generated = _generate('import sys; ' + code,
                          ['--config-file', os.path.join(ETC,
                                                         generator_conf)],
                          tmp_path)
    with open(os.path.join(ETC, sample)) as f:
        assert f.read() == generated, (
            'etc/cinder-lite/%s is stale: run %s --config-file '
            'etc/cinder-lite/%s' % (sample, command, generator_conf))
