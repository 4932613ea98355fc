"""edit_bytes.py IN OUT OLD NEW: copies IN to OUT with the one occurrence of
OLD replaced by NEW (of the same length), as a hand edit of a binary would."""
import sys

src, dst, old, new = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
data = open(src, "rb").read()
if len(old) != len(new) or data.count(old) != 1:
    sys.exit(f"{src}: expected exactly one {old!r} to replace by {new!r} of the same length")
open(dst, "wb").write(data.replace(old, new))
