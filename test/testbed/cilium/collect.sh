#!/usr/bin/env bash
# collect.sh SERVICE [SECTION,...]: run svctrace's collector binary inside the
# Cilium node for default/SERVICE, as the e2e does on the IPVS node: the
# CollectRequest is built from the API objects (kubectl), written to the node
# directory (shared over hostfs) and the binary is run through `node.sh exec`.
# Prints the Observation JSON. The collector is built from this checkout.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
svc=${1:?usage: collect.sh SERVICE [SECTION,...]}
sections=${2:-}
dir=$STATE/node
mkdir -p "$dir/bin"
(cd "$REPO_ROOT" && CGO_ENABLED=0 nice go build -trimpath -o "$dir/bin/svctrace-collector" ./cmd/svctrace-collector)
req=$dir/request-$svc.json
"$CILIUM_DIR/node.sh" kubectl get service "$svc" -n default -o json >"$dir/svc.json"
"$CILIUM_DIR/node.sh" kubectl get endpointslices -n default -l "kubernetes.io/service-name=$svc" -o json >"$dir/slices.json"
python3 - "$dir/svc.json" "$dir/slices.json" "$NODE_NAME" "$NODE_IP" "$sections" >"$req" <<'PY'
import json, sys
svc = json.load(open(sys.argv[1])); slices = json.load(open(sys.argv[2]))
node, node_ip, sections = sys.argv[3], sys.argv[4], sys.argv[5]
s = svc["spec"]
ports = [{k: v for k, v in {"name": p.get("name", ""), "protocol": p["protocol"], "port": p["port"],
          "nodePort": p.get("nodePort", 0), "targetPort": str(p.get("targetPort", ""))}.items() if v} for p in s["ports"]]
eps = []
for sl in slices["items"]:
    pmap = {p.get("name", ""): p["port"] for p in sl.get("ports") or []}
    for e in sl.get("endpoints") or []:
        c = e.get("conditions", {})
        for a in e["addresses"]:
            eps.append({"ip": a, "ports": pmap, "ready": bool(c.get("ready")), "serving": bool(c.get("serving")),
                        "terminating": bool(c.get("terminating")), "nodeName": e.get("nodeName", "")})
req = {"apiVersion": "svctrace.dev/v1alpha1", "kind": "CollectRequest", "nodeName": node,
       "service": {"namespace": svc["metadata"]["namespace"], "name": svc["metadata"]["name"], "type": s["type"],
                   "clusterIPs": s.get("clusterIPs", []), "ports": ports,
                   "sessionAffinity": s.get("sessionAffinity", "None"),
                   "externalTrafficPolicy": s.get("externalTrafficPolicy", ""),
                   "internalTrafficPolicy": s.get("internalTrafficPolicy", "")},
       "endpoints": eps, "podIPs": sorted({e["ip"] for e in eps}),
       "nodeAddresses": [{"node": node, "ip": node_ip}]}
aff = (s.get("sessionAffinityConfig") or {}).get("clientIP", {}).get("timeoutSeconds")
if aff: req["service"]["affinityTimeoutSeconds"] = aff
if sections: req["sections"] = sections.split(",")
print(json.dumps(req))
PY
"$CILIUM_DIR/node.sh" exec "$dir/bin/svctrace-collector" --request-file "$req" --pretty
