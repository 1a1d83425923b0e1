#!/usr/bin/env bash
# Writes redlock(1) from the built tool's own help, so that the page lists
# exactly the subcommands and flags this build has. help2man formats
# `redlock --help` (NAME, SYNOPSIS, DESCRIPTION, OPTIONS); help2roff.pl adds a
# SUBCOMMANDS section from each `redlock SUB --help`; the include file adds
# what --help does not say (EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, ...).
#
# Usage: generate.sh REDLOCK HELP2MAN VERSION INCLUDE SOURCE_DIR OUTPUT
# The page's date is $SOURCE_DATE_EPOCH, else the source tree's last commit,
# else the mtime of its CMakeLists.txt: the same sources give the same page.
set -euo pipefail
redlock=$1 help2man=$2 version=$3 include=$4 source_dir=$5 output=$6
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C  # help2man's month name, and CLI11 prints the same text anyway

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$source_dir" log -1 --format=%ct 2>/dev/null) ||
    SOURCE_DATE_EPOCH=$(stat -c %Y "$source_dir/CMakeLists.txt")
fi
export SOURCE_DATE_EPOCH

# The subcommands are the "Subcommands:" block of the top-level help.
mapfile -t subcommands < <("$redlock" --help |
  sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
if [[ ${#subcommands[@]} -eq 0 ]]; then
  echo "generate.sh: no subcommands found in '$redlock --help'" >&2
  exit 1
fi

subcommands_h2m=$output.subcommands.h2m
{
  echo '[SUBCOMMANDS]'
  echo 'Each subcommand takes the global options above as well as its own.'
  for sub in "${subcommands[@]}"; do
    "$redlock" "$sub" --help | perl "$here/help2roff.pl" "$sub"
  done
} >"$subcommands_h2m"

# The SUBCOMMANDS include comes first: help2man orders non-standard sections
# as it meets them, and EXIT STATUS (in $include) belongs after it.
"$help2man" --no-info --no-discard-stderr \
  --name 'a flock(1) for a fleet: locks on a majority of Redis masters, Clusters or Sentinel groups' \
  --version-string "redlock $version" \
  --include "$subcommands_h2m" --include "$include" \
  --output "$output.tmp" "$redlock"
mv "$output.tmp" "$output"
