"""A stand-in for a long-running engine: publishes its tail, then again every hand-off."""

import json
import os
import re
import time

HANDOFF_S = 30
LINE = re.compile(r'level=(\w+) msg="([^"]*)"')


def publish() -> None:
    try:
        with open("/app/filter.txt") as fh:
            wanted = {line.strip() for line in fh if line.strip()}
    except FileNotFoundError:
        wanted = set()
    events = []
    with open("/opt/engine/events.log") as fh:
        for line in fh:
            m = LINE.match(line)
            if m and m[1] in wanted:
                events.append({"level": m[1], "msg": m[2]})
    tmp = "/work/.events.tail.json.tmp"
    with open(tmp, "w") as out:
        json.dump({"published_at": time.time(), "events": events}, out)
    os.replace(tmp, "/work/events.tail.json")


while True:
    publish()
    time.sleep(HANDOFF_S)
