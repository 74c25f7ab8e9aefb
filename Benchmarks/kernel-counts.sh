# Sourced by the benchmark scripts: the kernel's counts of a process's work (perf stat on
# tracepoints: syscalls, WAL syncs, context switches), which do not move with the machine's
# speed or load. herald-bench's --counts asks perf for the same three.
KERNEL_EVENTS="raw_syscalls:sys_enter,syscalls:sys_enter_fdatasync,context-switches"

# True when perf can count them on this machine.
kernel_counts_available() { perf stat -e "$KERNEL_EVENTS" -- true >/dev/null 2>&1; }

# kernel_counts FILE: the totals in FILE (`perf stat -x, -o FILE -e "$KERNEL_EVENTS"`) as a JSON
# object by event name (sys_enter, sys_enter_fdatasync, context-switches); {} without FILE.
kernel_counts() {
  [ -f "$1" ] || { echo '{}'; return; }
  awk -F, '$1 ~ /^[0-9]/ {k = split($3, name, ":"); printf "%s\"%s\": %s", sep, name[k], $1; sep = ", "} BEGIN {printf "{"} END {print "}"}' "$1"
}
