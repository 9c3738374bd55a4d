"""README.rst's test command is what CI runs."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_ci_runs_readme_test_command():
    readme = _read('README.rst')
    section = readme.split('Run the tests')[1]
    command = [line.strip() for line in section.splitlines()
               if 'pytest' in line][0]
    ci = _read('.ci', 'run')
    # verbatim, as a line of its own (its status kept for the end, when
    # the operator install running beside it is checked too)
    assert [line for line in ci.splitlines()
            if line == command or line.startswith(command + ' || ')]
    assert 'export CINDER_LITE_REQUIRE_SERVICES=1' in ci
