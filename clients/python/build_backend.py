"""A PEP 517 build backend for cordon-client, standard library only.

The package is pure Python with no dependencies, so a wheel is a zip of
cordon_client/ and a dist-info directory; this builds it without
setuptools or wheel, so that `pip install ./clients/python` works on a
machine with no network. The name and version come from pyproject.toml.
"""

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "cordon_client"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _dist(p):
    return f"{p['name'].replace('-', '_')}-{p['version']}"


def _metadata(p):
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n"
            f"Summary: {p['description']}\nRequires-Python: {p['requires-python']}\n"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _files():
    for root, _, names in os.walk(os.path.join(HERE, PACKAGE)):
        for n in sorted(names):
            if n.endswith(".py"):
                full = os.path.join(root, n)
                yield full, os.path.relpath(full, HERE)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(data)}"


def _dist_info(p):
    info = f"{_dist(p)}.dist-info"
    return info, {
        f"{info}/METADATA": _metadata(p).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cordon build_backend\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info, files = _dist_info(_project())
    for name, data in files.items():
        path = os.path.join(metadata_directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    info, files = _dist_info(p)
    name = f"{_dist(p)}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, rel in _files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(rel, data)
            records.append(_record_line(rel, data))
        for rel, data in files.items():
            z.writestr(rel, data)
            records.append(_record_line(rel, data))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = _dist(p)
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "build_backend.py"):
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        for full, rel in _files():
            t.add(full, arcname=f"{base}/{rel}")
        pkg = _metadata(p).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        t.addfile(ti, io.BytesIO(pkg))
    return name
