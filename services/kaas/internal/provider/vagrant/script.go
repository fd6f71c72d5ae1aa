package vagrant

import (
	"fmt"
	"strings"
)

// bootstrapScript is the program the bootstrap job runs (/bin/sh -c, inside the machine).
// Its files come sealed for the machine's own key (keyScript made it; pki.SealFor): the
// positional arguments are the wrapped keys, the ciphertext (both base64) and the MAC. It
// verifies and unseals them with openssl into $D/pki (0600), the files being lines
// "name=<base64>"; no key is ever a command-line argument. Its settings are the variables at
// the top. It is idempotent: run again (an interrupted job, an upgrade with a new version) it
// keeps a running etcd, restarts the API server and the controller manager on $V, registers
// or updates the Node and restarts kwok. Nothing secret is printed. It fails at once, in one
// last line, when a binary it is about to start is missing (before it starts anything), when
// the files do not verify, and when etcd or the API server exits while it waits for the API
// server, rather than by timing out.
const bootstrapScript = `set -eu
P="$D/pki"
fail() { echo "kaas: $*" >&2; exit 1; }
need() { { [ -f "$1" ] && [ -x "$1" ]; } || fail "$1 is missing or not executable: $2"; }
running() { [ -f "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }
exited() { fail "$1 exited: $(tail -n 1 "$D/$1.log" 2>/dev/null | cut -c 1-300) (log: $D/$1.log)"; }
command -v curl >/dev/null 2>&1 || fail "curl is missing: install Debian's curl (apt-get install curl)"
if [ "$ROLE" = control-plane ]; then
  running etcd || need "$ETCD" "install Debian's etcd-server (apt-get install etcd-server)"
  need "$BIN/kube-apiserver-$V" "run make tools-k8s"
  need "$BIN/kube-controller-manager-$V" "run make tools-k8s"
fi
need "$BIN/kwok" "run make tools-k8s"
umask 077
mkdir -p "$P"
` + unsealScript + `
unseal "$1" "$2" "$3"
while IFS= read -r f; do
  [ -n "$f" ] || continue
  printf %s "${f#*=}" | base64 -d >"$P/${f%%=*}"
done <"$W/files"
rm -rf "$W"
# kaas's own hour-long identity (first control-plane machine) goes when the job ends, however.
trap 'rm -f "$P/kaas.key" "$P/kaas.crt"' EXIT
stop() {
  if running "$1"; then
    p=$(cat "$D/$1.pid"); kill "$p"; i=0
    while kill -0 "$p" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$D/$1.pid"
}
start() { n=$1; shift; setsid "$@" >>"$D/$n.log" 2>&1 </dev/null & echo $! >"$D/$n.pid"; }
api() { curl -sS -o "$D/api.out" -w '%{http_code}' --cacert "$P/ca.crt" --cert "$P/$1.crt" --key "$P/$1.key" -H "Content-Type: $2" -X "$3" --data-binary "@$P/$5" "https://$API$4"; }
if [ "$ROLE" = control-plane ]; then
  if ! running etcd; then
    start etcd "$ETCD" --name "$N" --data-dir "$D/etcd" \
      --listen-client-urls "https://$A:2379,https://127.0.0.1:2379" --advertise-client-urls "https://$A:2379" \
      --listen-peer-urls "https://$A:2380" --initial-advertise-peer-urls "https://$A:2380" \
      --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state "$ETCD_STATE" \
      --cert-file "$P/etcd.crt" --key-file "$P/etcd.key" --client-cert-auth --trusted-ca-file "$P/etcd-ca.crt" \
      --peer-cert-file "$P/etcd.crt" --peer-key-file "$P/etcd.key" --peer-client-cert-auth --peer-trusted-ca-file "$P/etcd-ca.crt" \
      --snapshot-count 5000 --log-level warn
    i=0
    while [ $i -lt 5 ]; do sleep 0.2; running etcd || exited etcd; i=$((i+1)); done
  fi
  stop kube-controller-manager
  stop kube-apiserver
  start kube-apiserver "$BIN/kube-apiserver-$V" --bind-address "$A" --advertise-address "$A" --secure-port 6443 \
    --etcd-servers https://127.0.0.1:2379 --etcd-cafile "$P/etcd-ca.crt" --etcd-certfile "$P/etcd.crt" --etcd-keyfile "$P/etcd.key" \
    --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" --client-ca-file "$P/ca.crt" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
    --service-cluster-ip-range 10.96.0.0/12 --allow-privileged=true
fi
i=0
until curl -sf --cacert "$P/ca.crt" "https://$API/readyz" >/dev/null 2>&1; do
  if [ "$ROLE" = control-plane ]; then
    running etcd || exited etcd
    running kube-apiserver || exited kube-apiserver
  fi
  i=$((i+1))
  if [ $i -gt 900 ]; then
    [ -f "$D/kube-apiserver.log" ] && tail -n 5 "$D/kube-apiserver.log" >&2
    fail "the API server at $API is not ready after 180s"
  fi
  sleep 0.2
done
if [ "$INIT" = 1 ]; then
  for r in clusterroles:rbac-role.json clusterrolebindings:rbac-binding.json; do
    c=$(api kaas application/json POST "/apis/rbac.authorization.k8s.io/v1/${r%%:*}" "${r#*:}")
    case $c in 201|409) ;; *) fail "create RBAC for simulated nodes: HTTP $c";; esac
  done
fi
c=$(api node application/json POST /api/v1/nodes node.json)
case $c in
  201) ;;
  409) c=$(api node application/merge-patch+json PATCH "/api/v1/nodes/$N/status" node-status.json)
       [ "$c" = 200 ] || fail "update node $N: HTTP $c: $(head -c 300 "$D/api.out")";;
  *) fail "register node $N: HTTP $c: $(head -c 300 "$D/api.out")";;
esac
if [ "$ROLE" = control-plane ]; then
  start kube-controller-manager "$BIN/kube-controller-manager-$V" --kubeconfig "$P/kcm.conf" \
    --authentication-kubeconfig "$P/kcm.conf" --authorization-kubeconfig "$P/kcm.conf" \
    --bind-address 127.0.0.1 --secure-port 10257 --cert-dir "$D/kcm-certs" --leader-elect="$LEADER_ELECT" \
    --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" \
    --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" --use-service-account-credentials=true
fi
stop kwok
start kwok "$BIN/kwok" --config "$P/kwok.yaml" --kubeconfig "$P/node.conf" --manage-single-node "$N" \
  --node-ip "$A" --node-lease-duration-seconds 40 --cidr "$POD_CIDR" --server-address 127.0.0.1:10247
echo "kaas: $N ($ROLE) runs Kubernetes $V at $A"
`

// unsealScript defines unseal WRAPPED CIPHERTEXT MAC: it opens what pki.SealFor sealed for
// the machine key $D/machine.key into "$W/files" ($W is a 0700 directory it makes, removed
// when the script exits), or fails without writing anything when the MAC does not verify.
const unsealScript = `unseal() {
  K="$D/machine.key"
  [ -s "$K" ] || fail "the machine key $K is missing (was the machine's directory removed?)"
  command -v openssl >/dev/null 2>&1 || fail "openssl is missing: install Debian's openssl (apt-get install openssl)"
  W=$(mktemp -d "$D/unseal.XXXXXX")
  trap 'rm -rf "$W"' EXIT
  printf %s "$1" | base64 -d >"$W/wrapped"
  printf %s "$2" | base64 -d >"$W/sealed"
  openssl pkeyutl -decrypt -inkey "$K" -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 \
    -pkeyopt rsa_mgf1_md:sha256 -in "$W/wrapped" -out "$W/keys" 2>/dev/null ||
    fail "the bootstrap files were not sealed for this machine's key"
  head -c 64 "$W/keys" >"$W/pass"
  tail -c +65 "$W/keys" | head -c 64 >"$W/ipad"
  tail -c +129 "$W/keys" >"$W/opad"
  mac=$(cat "$W/ipad" "$W/sealed" | openssl dgst -sha256 -binary | cat "$W/opad" - | openssl dgst -sha256 -r | cut -d ' ' -f 1)
  [ "$mac" = "$3" ] || fail "the sealed bootstrap files do not verify: they were altered on the way"
  openssl enc -d -aes-256-ctr -pbkdf2 -iter 1 -md sha256 -pass "file:$W/pass" -in "$W/sealed" -out "$W/files" ||
    fail "the bootstrap files do not decrypt"
}`

// keyScript makes the machine's own RSA key once, in $D (0600: it never leaves the machine),
// and prints its public half, to which kaas seals the bootstrap files.
const keyScript = `set -eu
fail() { echo "kaas: $*" >&2; exit 1; }
command -v openssl >/dev/null 2>&1 || fail "openssl is missing: install Debian's openssl (apt-get install openssl)"
umask 077
mkdir -p "$D"
if [ ! -s "$D/machine.key" ]; then
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$D/machine.key.new" 2>/dev/null || fail "openssl genpkey failed"
  mv "$D/machine.key.new" "$D/machine.key"
fi
openssl pkey -in "$D/machine.key" -pubout
`

// cleanupScript stops what the bootstrap started and removes the machine's directory, before
// the machine is destroyed.
const cleanupScript = `set -u
for n in kwok kube-controller-manager kube-apiserver etcd; do
  if [ -f "$D/$n.pid" ]; then kill "$(cat "$D/$n.pid")" 2>/dev/null || true; fi
done
sleep 1
for n in kwok kube-controller-manager kube-apiserver etcd; do
  if [ -f "$D/$n.pid" ]; then kill -9 "$(cat "$D/$n.pid")" 2>/dev/null || true; fi
done
rm -rf "$D"
echo "kaas: stopped Kubernetes and removed $D"
`

// withVars prefixes script with shell variable assignments (values single-quoted).
func withVars(script string, vars [][2]string) string {
	var b strings.Builder
	for _, kv := range vars {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	b.WriteString(script)
	return b.String()
}

// shellQuote quotes s for sh: single quotes, with embedded ones closed, escaped and reopened.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
