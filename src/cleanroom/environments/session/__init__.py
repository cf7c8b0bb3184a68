"""What one environment runs in: its Unix account, login session, sandbox (with the one
host port forwarded into it), home template and programs, the processes they start, and
reading the documents they save."""
