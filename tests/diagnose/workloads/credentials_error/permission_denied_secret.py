"""Runs as an unprivileged user and cannot read the mounted secret."""

import os
import tempfile

path = os.path.join(tempfile.mkdtemp(), "api_token")
with open(path, "w") as f:
    f.write("not-a-real-token")
os.chmod(path, 0o600)
if os.getuid() == 0:  # the job's image drops to 'nobody'
    os.setgid(65534)
    os.setuid(65534)
print("reading credentials from", path)
with open(path) as f:
    token = f.read()
