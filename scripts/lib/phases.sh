# The phases of scripts/test: `phase NAME COMMAND…` runs a command as a named phase and records its
# time; the first phase that fails ends the run with its exit status. At exit, whatever happened,
# the hooks in `on_exit_hooks` run (stopping what the run started in the background), then the
# table of phase times and the test summary are printed, and the run exits with the status it had:
# a hook cannot turn a failed run into a passed one.
phases=()
reports=()
on_exit_hooks=()
phases_started=$(date +%s)

report() {
  local status=$1
  echo
  echo "Phase times:"
  printf '  %s\n' "${phases[@]}"
  printf '  %-44s %5ds\n' "total" $(($(date +%s) - phases_started))
  [ -d .test-results ] && ls .test-results/*.json >/dev/null 2>&1 && node scripts/lib/test-summary.mjs "${reports[@]}"
  exit "$status"
}

on_exit() {
  local status=$1 hook
  for hook in "${on_exit_hooks[@]}"; do "$hook" || true; done
  report "$status"
}
trap 'on_exit $?' EXIT

phase() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "== $name"
  "$@"
  local status=$?
  local secs=$(($(date +%s) - t0))
  phases+=("$(printf '%-44s %5ds  %s' "$name" "$secs" "$([ $status -eq 0 ] && echo ok || echo "FAILED ($status)")")")
  if [ $status -ne 0 ]; then
    echo "phase '$name' failed (exit $status): stopping here" >&2
    exit $status
  fi
}
