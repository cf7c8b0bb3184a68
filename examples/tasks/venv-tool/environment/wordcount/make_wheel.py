"""Build wordcount-1.0-py3-none-any.whl from wordcount.py with the standard library only."""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

source, out = Path(sys.argv[1]), Path(sys.argv[2])
info = "wordcount-1.0.dist-info"
files = {
    "wordcount.py": (source / "wordcount.py").read_bytes(),
    f"{info}/METADATA": b"Metadata-Version: 2.1\nName: wordcount\nVersion: 1.0\n",
    f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: make_wheel\nRoot-Is-Purelib: true\n"
    b"Tag: py3-none-any\n",
    f"{info}/entry_points.txt": b"[console_scripts]\nwordcount = wordcount:main\n",
}
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(data)}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
with zipfile.ZipFile(out / "wordcount-1.0-py3-none-any.whl", "w") as whl:
    for name, data in files.items():
        whl.writestr(name, data)
