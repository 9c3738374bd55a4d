"""The checked-in config and policy samples match what the code
generates; regenerate them with the commands in README.rst when this
fails."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ETC = os.path.join(ROOT, 'etc', 'cinder-lite')


def _generate(code, args, tmp_path):
    out = tmp_path / 'sample'
    subprocess.run([sys.executable, '-c', code] + args +
                   ['--output-file', str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    return out.read_text()


def test_config_sample_is_current(tmp_path):
    generated = _generate(
        'import sys; from oslo_config import generator; '
        'generator.main(sys.argv[1:])',
        ['--config-file', os.path.join(ETC,
                                       'cinder-lite-config-generator.conf')],
        tmp_path)
    with open(os.path.join(ETC, 'cinder-lite.conf.sample')) as f:
        assert f.read() == generated, (
            'etc/cinder-lite/cinder-lite.conf.sample is stale: run '
            'oslo-config-generator --config-file '
            'etc/cinder-lite/cinder-lite-config-generator.conf')


def test_policy_sample_is_current(tmp_path):
    generated = _generate(
        'import sys; from oslo_policy import generator; '
        'generator.generate_sample(sys.argv[1:])',
        ['--config-file', os.path.join(ETC,
                                       'cinder-lite-policy-generator.conf')],
        tmp_path)
    with open(os.path.join(ETC, 'policy.yaml.sample')) as f:
        assert f.read() == generated, (
            'etc/cinder-lite/policy.yaml.sample is stale: run '
            'oslopolicy-sample-generator --config-file '
            'etc/cinder-lite/cinder-lite-policy-generator.conf')
