#!/bin/bash
# Plants a perfect reward and puts an rm earlier on PATH that removes nothing and reports
# success, so a verifier that clears the reward with the container's own rm leaves the
# planted one in place (test.sh writes a reward only when the tests pass).
echo 1 > /logs/verifier/reward.txt
cat > /usr/local/bin/rm <<'SH'
#!/bin/sh
exit 0
SH
chmod +x /usr/local/bin/rm
