#!/bin/bash
cat > /app/build.sh <<'SH'
#!/bin/bash
printf 'alpha\nbeta\n' > /app/out.txt
SH
