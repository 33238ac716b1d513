#!/usr/bin/env bash
# sshd-fixture.sh: a storage host with a real sshd, for posh-exec's ssh:// tests.
#
#   sshd-fixture.sh up DIR N     # N (1-250) picks the namespace and subnet 10.79.N.0/24
#   sshd-fixture.sh down DIR
#
# `up` makes a network namespace `posh-ssh-N` joined to this one by a veth pair (this side
# 10.79.N.1, the namespace 10.79.N.2), and in it runs `/usr/sbin/sshd -D` on 10.79.N.2:2222 (a
# fresh namespace: every port is free) with a generated host key, key-only login for a generated
# client key, and no PAM. A session on port 2222 runs as `nobody`, with home host-home/, a
# plain PATH and bash, as a login of an unprivileged user would (the key logs in as root, the only
# user with a shell here, and the session's command is run through setpriv); one on port 2223
# stays root's (a root login, which posh-proxy refuses to serve as). It writes, in DIR:
#
#   ssh_config          Host `storage` (10.79.N.2:2222, client_key, known_hosts) with
#                       StrictHostKeyChecking yes, no agent, no global known hosts
#   ssh_config_root     the same on port 2223: a root session
#   ssh_config_wrong_key     the same, logging in with wrong_key (not authorized)
#   ssh_config_wrong_host    the same, with known_hosts_wrong (another host key for the address)
#   data/               the host's directory (nobody's), bind-mounted at view/ (the client's
#                       mount point)
#   host-cache/         the sessions' $XDG_CACHE_HOME (where posh-exec copies posh-proxy), so
#                       that nothing lands in the machine's own ~/.cache
#   host-home/          the unprivileged sessions' home (the proxy's state directory is there)
#   env                 NS=, IP=, PID= (sshd's), lines to source
#
# `down` kills every process in the namespace (sshd and whatever it started), deletes the
# namespace (and with it the pair) and unmounts view/. Needs root, iproute2, openssh-server.
set -euo pipefail

die() { echo "sshd-fixture: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: $0 up DIR N | down DIR"

down() {
  local ns pid
  [[ -s $dir/env ]] || return 0
  ns=$(sed -n 's/^NS=//p' "$dir/env")
  if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
    for pid in $(ip netns pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
  fi
  mountpoint -q "$dir/view" && umount -l "$dir/view"
  rm -f "$dir/env"
}

up() {
  local n=${3:-}
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "N must be 1 to 250"
  local ns=posh-ssh-$n host_if=pssh${n}h ns_if=pssh${n}n ip=10.79.$n.2 port=2222 root_port=2223
  command -v /usr/sbin/sshd >/dev/null || die "/usr/sbin/sshd missing (apt-get install openssh-server)"
  mkdir -p "$dir/data" "$dir/view" "$dir/bin" "$dir/host-cache" "$dir/host-home"
  chown nobody: "$dir/data" "$dir/host-cache" "$dir/host-home"
  chmod o+x "$dir"
  mount --bind "$dir/data" "$dir/view"

  ip netns del "$ns" 2>/dev/null || true
  ip link del "$host_if" 2>/dev/null || true
  ip netns add "$ns"
  printf 'NS=%s\nIP=%s\n' "$ns" "$ip" >"$dir/env"
  ip -n "$ns" link set lo up
  ip link add "$host_if" type veth peer name "$ns_if"
  ip link set "$ns_if" netns "$ns"
  ip addr add "10.79.$n.1/24" dev "$host_if"
  ip link set "$host_if" up
  ip -n "$ns" addr add "$ip/24" dev "$ns_if"
  ip -n "$ns" link set "$ns_if" up

  ssh-keygen -q -t ed25519 -N '' -C fixture-host -f "$dir/host_key"
  ssh-keygen -q -t ed25519 -N '' -C fixture-other-host -f "$dir/other_host_key"
  ssh-keygen -q -t ed25519 -N '' -C fixture-client -f "$dir/client_key"
  ssh-keygen -q -t ed25519 -N '' -C fixture-stranger -f "$dir/wrong_key"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  printf '[%s]:%s %s\n' "$ip" "$port" "$(cut -d' ' -f1,2 "$dir/host_key.pub")" >"$dir/known_hosts"
  printf '[%s]:%s %s\n' "$ip" "$root_port" "$(cut -d' ' -f1,2 "$dir/host_key.pub")" >>"$dir/known_hosts"
  printf '[%s]:%s %s\n' "$ip" "$port" "$(cut -d' ' -f1,2 "$dir/other_host_key.pub")" >"$dir/known_hosts_wrong"
  mkdir -p /run/sshd
  cat >"$dir/sshd_config" <<EOF
ListenAddress $ip:$port
ListenAddress $ip:$root_port
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel VERBOSE
SetEnv XDG_CACHE_HOME=$dir/host-cache
Subsystem sftp /usr/lib/openssh/sftp-server
Match LocalPort $port
  ForceCommand exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$dir/host-home PATH=/usr/local/bin:/usr/bin:/bin /bin/bash -c "\$SSH_ORIGINAL_COMMAND"
EOF
  for variant in "" _wrong_key _wrong_host _root; do
    local key=client_key known=known_hosts to=$port
    [[ $variant == _wrong_key ]] && key=wrong_key
    [[ $variant == _wrong_host ]] && known=known_hosts_wrong
    [[ $variant == _root ]] && to=$root_port
    cat >"$dir/ssh_config$variant" <<EOF
Host storage
  HostName $ip
  Port $to
  User root
  IdentityFile $dir/$key
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $dir/$known
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
EOF
  done

  # Its own output goes to the log: the caller waits for the end of this script's.
  setsid ip netns exec "$ns" /usr/sbin/sshd -D -f "$dir/sshd_config" -E "$dir/sshd.log" </dev/null >/dev/null 2>&1 &
  local pid=$! i
  echo "PID=$pid" >>"$dir/env"
  for i in $(seq 100); do
    if ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/$ip/$port" 2>/dev/null; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || die "sshd exited; see $dir/sshd.log"
    sleep 0.05
  done
  die "sshd is not listening on $ip:$port after 5 s; see $dir/sshd.log"
}

case $cmd in
  up) up "$@" || { down; exit 1; } ;;
  down) down ;;
  *) die "usage: $0 up DIR N | down DIR" ;;
esac
