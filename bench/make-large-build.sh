#!/usr/bin/env bash
# Generates the "large build" for bench/latency.sh's memory figure: the clean D10 run of
# fixtures/timelines/clean.toml stopped just before the weaver (so a referee watching it keeps
# watching), plus 30,000 extra screenshots and the nine auditor reports padded to ~2 MB each.
# The padding is plain perceptual prose (no pipeline vocabulary) inserted before each report's
# `## Completion Manifest`, and every file keeps its recorded mtime, so the run stays clean.
#
#   bench/make-large-build.sh DIR [REFEREE]      # REFEREE defaults to target/release/referee
#
# Needs: python3 (Debian: python3). Writes only into DIR, which must not exist or be empty.
set -euo pipefail

dir=${1:?usage: make-large-build.sh DIR [REFEREE]}
here=$(cd "$(dirname "$0")" && pwd)
referee=${2:-$here/../target/release/referee}
screenshots=${SCREENSHOTS:-30000}
report_bytes=${REPORT_BYTES:-2000000}

if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "make-large-build: \`$dir\` is not empty" >&2
    exit 2
fi
"$referee" replay clean "$dir" --speed 0 --until 1h20m --quiet

python3 - "$dir" "$screenshots" "$report_bytes" <<'EOF'
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
png = bytes.fromhex("89504e470d0a1a0a")
# Spread the extra screenshots over the three viewports, with the recorded mtime of the last one.
ref = os.stat(os.path.join(d, "screenshots/768/scroll-8.png"))
for i in range(n):
    vp = ("1440", "1024", "768")[i % 3]
    p = os.path.join(d, "screenshots", vp, f"scroll-{9 + i // 3}.png")
    with open(p, "wb") as f:
        f.write(png)
    os.utime(p, ns=(ref.st_atime_ns, ref.st_mtime_ns))
para = ("At this width the eye settles on the drawing first and the headline second; the spacing "
        "between the paragraphs is even and the grey of the captions reads, only just.\n")
for letter in "ABCDEFGHI":
    p = os.path.join(d, f"p3b-pa-auditor-{letter}.md")
    st = os.stat(p)
    text = open(p, encoding="utf-8").read()
    head, sep, tail = text.rpartition("## Completion Manifest")
    pad = "## Long notes\n\n" + para * max(0, (size - len(text)) // len(para)) + "\n"
    with open(p, "w", encoding="utf-8") as f:
        f.write(head + pad + sep + tail)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
EOF
echo "large build in $dir: $(find "$dir" -type f | wc -l) files, $(du -sh "$dir" | cut -f1)"
