"""A PEP 517 build backend in the standard library alone, so that
``pip install ./clients/python`` works with no package index at all (the
package has no dependencies, and now neither has its build). It builds a
pure-Python wheel of ``nodeid_client`` and a source archive, from the name,
version, summary and Python requirement in pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "nodeid_client"


def _project():
    """The [project] fields this backend writes into the metadata."""
    with open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"\s*$', table, re.M))
    for key in ("name", "version", "description", "requires-python"):
        if key not in fields:
            raise ValueError(f"pyproject.toml: [project] has no {key}")
    return fields


def _metadata(p):
    with open(os.path.join(_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {p['name']}\n"
        f"Version: {p['version']}\n"
        f"Summary: {p['description']}\n"
        f"Requires-Python: {p['requires-python']}\n"
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )


def _package_files():
    """The package's files (its sources and py.typed, the PEP 561 marker that
    its annotations are its types), as (path on disk, path in the archive)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(_ROOT, _PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(dirpath, name)
                out.append((path, os.path.relpath(path, _ROOT).replace(os.sep, "/")))
    return out


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}\n"


def get_requires_for_build_wheel(config_settings=None):
    """Nothing: the backend needs only the standard library."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """Nothing: the backend needs only the standard library."""
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the pure-Python wheel into wheel_directory; returns its name."""
    p = _project()
    dist = p["name"].replace("-", "_")
    info = f"{dist}-{p['version']}.dist-info"
    name = f"{dist}-{p['version']}-py3-none-any.whl"
    files = [(arc, open(path, "rb").read()) for path, arc in _package_files()]
    files.append((f"{info}/METADATA", _metadata(p).encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: nodeid-client _build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(_record_line(arc, data) for arc, data in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for arc, data in files:
            whl.writestr(zipfile.ZipInfo(arc, date_time=(2025, 1, 1, 0, 0, 0)), data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """Builds the source archive into sdist_directory; returns its name."""
    p = _project()
    base = f"{p['name'].replace('-', '_')}-{p['version']}"
    paths = [("pyproject.toml", "pyproject.toml"), ("README.md", "README.md"), ("_build/backend.py", "_build/backend.py")]
    paths += [(arc, arc) for _, arc in _package_files()]
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for src, arc in paths:
            tar.add(os.path.join(_ROOT, src), arcname=f"{base}/{arc}")
        pkg = _metadata(p).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        tar.addfile(ti, io.BytesIO(pkg))
    return name
