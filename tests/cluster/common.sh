# Helpers shared by the cluster up/down scripts (sourced, not run).
#
# The test machines may have no real init: a stopped daemon can stay behind as a
# zombie, so "is it alive" reads the state letter in /proc/PID/stat instead of kill -0.
# Daemons are started with fd 9 (the script's flock) closed, so they never hold the lock.

log() { printf '[%s] %s\n' "$PROG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$PROG" "$*" >&2; exit 1; }
on_error() { printf '[%s] ERROR: command failed (rc=%s) at line %s: %s\n' "$PROG" "$1" "$2" "$3" >&2; exit "$1"; }

require_root() { [[ $(id -u) -eq 0 ]] || die "must run as root"; }

check_state_dir() {      # DIR -> dies unless an absolute path without spaces, not /
    [[ $1 == /* && $1 != / && $1 != *" "* ]] || die "state dir must be an absolute path without spaces, not / (got '$1')"
}

pid_alive() {            # PID -> true if it exists and is not a zombie
    local pid=${1:-} st
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    st=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]) .*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $st && $st != Z && $st != X ]]
}

daemon_pid() {           # PIDFILE COMM -> prints the pid if that daemon is alive
    local file=$1 comm=$2 pid
    [[ -s $file ]] || return 1
    pid=$(head -n1 "$file" | tr -dc '0-9')
    pid_alive "$pid" || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 1
    echo "$pid"
}

stop_pid() {             # PID NAME [GRACE_S] -> SIGTERM, wait GRACE_S (default 30), SIGKILL
    local pid=$1 name=$2 grace=${3:-30} i
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 5; i++)); do pid_alive "$pid" || return 0; sleep 0.2; done
    log "$name (pid $pid) ignored SIGTERM for ${grace}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do pid_alive "$pid" || return 0; sleep 0.2; done
    die "could not stop $name (pid $pid)"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_until() {           # TIMEOUT_S CMD... -> retry CMD every 0.2 s until it succeeds
    local end=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || return 1
        sleep 0.2
    done
}

show_log() {             # FILE [LINES]
    [[ -f $1 ]] || return 0
    log "last lines of $1:"
    tail -n "${2:-20}" "$1" | sed 's/^/    /' >&2
}

apt_install() {          # LOGFILE PACKAGE... -> installs without starting any service
    local logfile=$1 made_policy=0 rc=0; shift
    command -v apt-get >/dev/null || die "missing packages $* and no apt-get"
    log "installing: $*"
    # Maintainer scripts would try to start the services (munge, mariadb, slurm*, sge*, exim4);
    # a policy-rc.d that answers 101 forbids that on hosts without one.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod 0755 /usr/sbin/policy-rc.d; made_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "$@" >"$logfile" 2>&1 || rc=$?
    if ((rc != 0)); then
        log "apt-get install failed; running apt-get update and retrying"
        apt-get update >>"$logfile" 2>&1 || true
        rc=0
        apt-get install -y --no-install-recommends "$@" >>"$logfile" 2>&1 || rc=$?
    fi
    ((made_policy)) && rm -f /usr/sbin/policy-rc.d
    ((rc == 0)) || { show_log "$logfile"; die "apt-get install $* failed"; }
}

ensure_host_resolves() { # HOST
    getent hosts "$1" >/dev/null && return 0
    log "host name '$1' does not resolve; adding '127.0.0.1 $1' to /etc/hosts"
    echo "127.0.0.1 $1" >>/etc/hosts || die "cannot write /etc/hosts"
}

take_lock() {            # STATE_DIR -> holds STATE_DIR/.lock on fd 9 for the rest of the script
    exec 9>"$1/.lock"
    flock -w 300 9 || die "another up/down script is running on $1"
}
