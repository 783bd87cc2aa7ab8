import subprocess
import sys


def test_import_does_not_load_optional_packages_or_run_processes():
    code = (
        "import subprocess, sys\n"
        "calls = []\n"
        "orig = subprocess.Popen.__init__\n"
        "def spy(self, *a, **k):\n"
        "    calls.append(a)\n"
        "    return orig(self, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "import capviz\n"
        "print(sorted(m for m in ('cupy', 'ipywidgets', 'IPython') if m in sys.modules), calls)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []"


def test_public_api_has_docstrings():
    import capviz as cv

    missing = [name for name in cv.__all__
               if not (getattr(cv, name).__doc__ or "").strip()]
    assert missing == []
