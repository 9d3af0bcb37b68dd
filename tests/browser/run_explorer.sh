#!/bin/sh
# CTest's browser.explorer: the explorer page of `attend serve` in a real,
# headless Chromium driven by Selenium (tests/browser/explorer_test.py).
# Exit 77 (the test's SKIP_RETURN_CODE), saying why, where Debian's python3,
# python3-selenium, chromium or chromium-driver is missing.
#   run_explorer.sh ATTEND WORK_DIR SCREENSHOT
set -eu
python=${ATTEND_BROWSER_PYTHON:-/usr/bin/python3}  # Debian's python3-selenium lives there
if [ ! -x "$python" ]; then
  echo "SKIPPED: no $python (apt-get install python3 python3-selenium chromium chromium-driver)"
  exit 77
fi
exec "$python" "$(dirname "$0")/explorer_test.py" "$@"
