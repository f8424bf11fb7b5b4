"""Merge sluicegate's driver JVM flags with a user's own ``spark.driver.extraJavaOptions``.

Spark takes one string of driver JVM options. sluicegate puts its log4j2 file (errors on
one line, no Java stack frames), its collector and JIT flags, the young generation's cap
and the class archive there; a contract that set its own string used to replace all of
them, so one ``-Dfoo=bar`` brought the stack traces back and lost the cap. Now the user's
options are appended after sluicegate's and any flag of ours the user also sets is
dropped, so theirs is the one the JVM sees (and the JVM never sees two collectors, which
it refuses to start with).
"""

from __future__ import annotations

import re
import shlex

_COLLECTOR = re.compile(r"-XX:[+-]Use\w*GC")
_XX = re.compile(r"-XX:[+-]?(\w+)")
_SIZED = re.compile(r"-X(mx|ms|mn|ss)")
_PROPERTY = re.compile(r"-D([^=]+)")


def flag_key(flag: str) -> str:
    """What a JVM flag sets, so two values of one setting compare equal.

    >>> flag_key("-XX:MaxNewSize=1g"), flag_key("-XX:-UseParallelGC"), flag_key("-Dx.y=1")
    ('-XX:MaxNewSize', 'collector', '-Dx.y')
    >>> flag_key("-Xmx2g"), flag_key("--add-opens=java.base/java.nio=ALL-UNNAMED")
    ('-Xmx', '--add-opens=java.base/java.nio=ALL-UNNAMED')
    """
    if _COLLECTOR.match(flag):
        return "collector"
    for pattern, prefix in ((_XX, "-XX:"), (_SIZED, "-X"), (_PROPERTY, "-D")):
        m = pattern.match(flag)
        if m:
            return prefix + m.group(1)
    return flag


def merge_java_options(ours: str, theirs: str) -> str:
    """``ours`` without the flags ``theirs`` also sets, then ``theirs`` as given.

    >>> merge_java_options("-XX:+UseParallelGC -XX:MaxNewSize=512m -Da=1", "-XX:+UseG1GC -Db=2")
    '-XX:MaxNewSize=512m -Da=1 -XX:+UseG1GC -Db=2'
    >>> merge_java_options("-Da=1", "")
    '-Da=1'
    """
    theirs = theirs.strip()
    if not theirs:
        return ours
    try:
        given = {flag_key(f) for f in shlex.split(theirs)}
    except ValueError:  # an unbalanced quote: Spark will say so; keep theirs whole
        given = set()
    kept = [f for f in ours.split() if flag_key(f) not in given]
    return " ".join([*kept, theirs])
