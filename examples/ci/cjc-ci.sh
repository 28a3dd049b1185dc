#!/bin/sh
# cjc-ci.sh - the compile cache's part of a CI job (examples/ci/README.md).
#
#     cjc-ci.sh begin    after the store is restored, before the build
#     cjc-ci.sh end      after the build (also when it failed), before the store is saved
#
# begin zeroes the counters, so that the job's summary counts this job (the
# journal keeps the compiles of earlier jobs: the report's hit rate over
# time). end trims the store to what the saved cache may hold, then writes
# the job summary (Markdown, appended to $GITHUB_STEP_SUMMARY when GitHub
# sets it, else $CJC_CI_OUT/cjc-summary.md), the report page
# ($CJC_CI_OUT/cjc-report.html) and the counters in OpenMetrics text
# ($CJC_CI_OUT/cjc-metrics.txt, which GitLab shows as a metrics report).
#
# CJC: the cjc to run (default: cjc on PATH). CJC_CI_MAX_SIZE: the size the
# store is trimmed to (default 2G). CJC_CI_OUT: where the files go (default .).
# CJC_DIR, CJC_BASE_DIR and the other settings are cjc's own.
set -eu
CJC=${CJC:-cjc}
out=${CJC_CI_OUT:-.}
case ${1:-} in
begin)
	"$CJC" --version
	"$CJC" stats --zero
	;;
end)
	"$CJC" gc --max-size "${CJC_CI_MAX_SIZE:-2G}"
	mkdir -p "$out"
	"$CJC" report --markdown >>"${GITHUB_STEP_SUMMARY:-$out/cjc-summary.md}"
	"$CJC" report >"$out/cjc-report.html"
	"$CJC" stats --format=openmetrics >"$out/cjc-metrics.txt"
	"$CJC" stats
	;;
*)
	echo "usage: cjc-ci.sh begin|end" >&2
	exit 2
	;;
esac
