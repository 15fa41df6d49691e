#!/usr/bin/env bash
# A wrapper that is not Python. spearmint-nn runs: bash branin.sh <params.json>
# The params file holds every variable as a JSON list, e.g. {"x": [1.5], "y": [2.0]}.
# The result is the last line printed on stdout (a JSON number); a program may instead write
# it to the file named by $SPEARMINT_RESULT_FILE. A non-zero exit status marks the job failed.
set -euo pipefail

params=$(tr -d ' \n\t' < "$1")
value_of() { sed -E "s/.*\"$1\":\[([^],]*)\].*/\1/" <<< "$params"; }
x=$(value_of x)
y=$(value_of y)

echo "job ${SPEARMINT_JOB_ID}: x=$x y=$y"
awk -v x="$x" -v y="$y" 'BEGIN {
    pi = atan2(0, -1)
    b = 5.1 / (4 * pi * pi); c = 5 / pi; t = 1 / (8 * pi)
    printf "%.10g\n", (y - b * x * x + c * x - 6) ^ 2 + 10 * (1 - t) * cos(x) + 10
}'
