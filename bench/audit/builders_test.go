package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// t0 is the start of every synthetic log; events are placed by seconds
// after it.
var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// ev is one synthetic event; line renders it the way kube-apiserver's json
// log backend does, extra fields included.
type ev struct {
	sec                 float64
	ua, verb            string
	resource, sub       string
	ns, name            string
	code                int
	stage               string // default ResponseComplete
	user                string // default kubernetes-admin
	apiGroup, version   string
	took                float64 // seconds to stageTimestamp
	noStatus, noObjRef  bool
	overrideAPIVersion  string
	overrideRequestTime string
	body                map[string]any // the requestObject, if any
}

func (e ev) line() string {
	stage := e.stage
	if stage == "" {
		stage = StageResponseComplete
	}
	user := e.user
	if user == "" {
		user = "kubernetes-admin"
	}
	m := map[string]any{
		"kind":                     "Event",
		"apiVersion":               "audit.k8s.io/v1",
		"level":                    "Metadata",
		"auditID":                  fmt.Sprintf("id-%v-%s-%s", e.sec, e.verb, e.name),
		"stage":                    stage,
		"requestURI":               "/api/v1/namespaces/" + e.ns + "/" + e.resource + "/" + e.name,
		"verb":                     e.verb,
		"user":                     map[string]any{"username": user, "groups": []string{"system:masters", "system:authenticated"}},
		"sourceIPs":                []string{"127.0.0.1"},
		"userAgent":                e.ua,
		"requestReceivedTimestamp": at(e.sec).Format("2006-01-02T15:04:05.000000Z07:00"),
		"stageTimestamp":           at(e.sec + e.took + 0.002).Format("2006-01-02T15:04:05.000000Z07:00"),
		"annotations":              map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""},
	}
	if !e.noObjRef {
		ref := map[string]any{"resource": e.resource, "namespace": e.ns, "name": e.name, "apiVersion": "v1"}
		if e.sub != "" {
			ref["subresource"] = e.sub
		}
		if e.apiGroup != "" {
			ref["apiGroup"] = e.apiGroup
		}
		m["objectRef"] = ref
	}
	if !e.noStatus {
		m["responseStatus"] = map[string]any{"metadata": map[string]any{}, "code": e.code}
	}
	if e.body != nil {
		m["requestObject"] = e.body
		m["level"] = "Request"
	}
	if e.overrideAPIVersion != "" {
		m["apiVersion"] = e.overrideAPIVersion
	}
	if e.overrideRequestTime != "" {
		m["requestReceivedTimestamp"] = e.overrideRequestTime
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func ctrlUA(id string) string  { return "daemonset-controller/" + id }
func leaseUA(id string) string { return "daemonset-controller/" + id + "/leader-election" }

// lease is a Lease write by replica id's elector.
func lease(sec float64, id, verb string, code int) ev {
	return ev{sec: sec, ua: leaseUA(id), verb: verb, resource: "leases", ns: "default", name: DefaultLeaseName, code: code, apiGroup: "coordination.k8s.io"}
}

// leaseWithRecord is a successful Lease write whose body (a Request-level
// log) says holder renewed at renewSec on its clock, for durationSec.
func leaseWithRecord(sec float64, id, verb, holder string, renewSec float64, durationSec int) ev {
	code := 200
	if verb == "create" {
		code = 201
	}
	e := lease(sec, id, verb, code)
	e.body = map[string]any{
		"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
		"metadata": map[string]any{"name": DefaultLeaseName, "namespace": "default"},
		"spec": map[string]any{
			"holderIdentity": holder, "leaseDurationSeconds": durationSec,
			"renewTime": at(renewSec).Format("2006-01-02T15:04:05.000000Z07:00"),
		},
	}
	return e
}

// renewals are successful Lease updates by id every 2 s in [from, to].
func renewals(id string, from, to float64) []ev {
	var out []ev
	for s := from; s <= to; s += 2 {
		out = append(out, lease(s, id, "update", 200))
	}
	return out
}

// pod is a pod write by replica id's controller client.
func pod(sec float64, id, verb, name string) ev {
	code := map[string]int{"create": 201, "delete": 200}[verb]
	return ev{sec: sec, ua: ctrlUA(id), verb: verb, resource: "pods", ns: "default", name: name, code: code}
}

// logOf renders events as a log, one per line.
func logOf(groups ...[]ev) string {
	var b strings.Builder
	for _, g := range groups {
		for _, e := range g {
			b.WriteString(e.line())
			b.WriteString("\n")
		}
	}
	return b.String()
}

func evs(e ...ev) []ev { return e }
