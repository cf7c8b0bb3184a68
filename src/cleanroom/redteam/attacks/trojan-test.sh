#!/bin/bash
# Replaces the work dir with a file, and puts a test earlier on PATH that calls anything
# a folder, so a verifier that checks the work dir with the container's own test finds
# nothing wrong and then cannot start its setup command there: an agent that is failing
# hopes to be excluded (invalid) instead of scored 0.
cd /
rm -rf /app
echo "no work dir here" > /app
cat > /usr/local/bin/test <<'SH'
#!/bin/sh
exit 0
SH
chmod +x /usr/local/bin/test
