package audit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzDecode feeds Decode arbitrary bytes: it must never panic, its errors
// must name the file and a line and wrap ErrMalformed, and whatever it
// accepts Check must judge without breaking the report's invariants.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(realLine + "\n"))
	f.Add([]byte(logOf(evs(lease(0, "a", "create", 201)), renewals("a", 2, 6), evs(pod(1, "a", "create", "p"), lease(7, "b", "update", 200), pod(8, "a", "delete", "p")))))
	f.Add([]byte(realLine[:100]))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"Panic","verb":"x","requestReceivedTimestamp":"2026-01-02T03:04:05Z","objectRef":{"resource":"leases","name":"dsbench-daemonset-controller"},"userAgent":"daemonset-controller/a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := Decode("fuzz.log", strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "fuzz.log:") {
				t.Fatalf("error %q does not name the file and line, or does not wrap ErrMalformed", err)
			}
			return
		}
		rep, err := Check(Config{}, log.Events)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, rep)
		_ = rep.String()
	})
}

// FuzzCheckAgreesWithReference plays random logs of three replicas through
// Check and compares every verdict with the rule stated the simple way: at
// any instant the leader is the writer of the latest successful Lease write
// at or before it, if that write came less than LeaseDuration before.
func FuzzCheckAgreesWithReference(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("a long seed that plays many lease writes and pod writes by three replicas"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const leaseDuration = 15 * time.Second
		if len(data) > 600 {
			data = data[:600] // 200 events; the reference below is quadratic
		}
		// Steps include 0 (equal instants) and exactly the lease duration.
		steps := []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 7 * time.Second, 15 * time.Second, 16 * time.Second}
		ids := []string{"a", "b", "c"}
		now := t0
		var events []Event
		for i := 0; i+2 < len(data); i += 3 {
			b0, b1, b2 := data[i], data[i+1], data[i+2]
			now = now.Add(steps[int(b0)%len(steps)])
			id := ids[int(b1)%len(ids)]
			e := Event{
				APIVersion: "audit.k8s.io/v1", Kind: "Event", Stage: StageResponseComplete,
				RequestReceivedTimestamp: now, StageTimestamp: now.Add(time.Millisecond), Line: len(events) + 1,
				ResponseStatus: &struct {
					Code int `json:"code"`
				}{200},
			}
			switch b2 % 4 {
			case 0: // a successful Lease write
				e.UserAgent, e.Verb = leaseUA(id), []string{"create", "update"}[b2/4%2]
				e.ObjectRef = &ObjectRef{Resource: "leases", Namespace: "default", Name: DefaultLeaseName}
			case 1: // a failed one
				e.UserAgent, e.Verb, e.ResponseStatus.Code = leaseUA(id), "update", 409
				e.ObjectRef = &ObjectRef{Resource: "leases", Namespace: "default", Name: DefaultLeaseName}
			default: // a pod write, sometimes failed
				e.UserAgent, e.Verb = ctrlUA(id), []string{"create", "delete", "patch"}[b2/4%3]
				e.ObjectRef = &ObjectRef{Resource: "pods", Namespace: "default", Name: "p"}
				if b2/16%4 == 0 {
					e.ResponseStatus.Code = 500
				}
			}
			events = append(events, e)
		}
		rep, err := Check(Config{LeaseDuration: leaseDuration}, events)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, rep)

		violations := map[int]string{} // line -> leader
		for _, v := range rep.Violations {
			violations[v.Write.Line] = v.Leader
		}
		for _, e := range events {
			if e.ObjectRef.Resource == "leases" {
				continue
			}
			// Instants decide, not lines: a Lease write at the same
			// instant as a pod write a line later still counts.
			var latest *Event
			for j := range events {
				l := &events[j]
				if l.ObjectRef.Resource == "leases" && l.Code() == 200 && !l.RequestReceivedTimestamp.After(e.RequestReceivedTimestamp) {
					latest = l // events are in time order: the last one found is the latest
				}
			}
			leader := ""
			if latest != nil && e.RequestReceivedTimestamp.Sub(latest.RequestReceivedTimestamp) < leaseDuration {
				leader = strings.Split(strings.TrimPrefix(latest.UserAgent, "daemonset-controller/"), "/")[0]
			}
			writer := strings.TrimPrefix(e.UserAgent, "daemonset-controller/")
			got, violated := violations[e.Line]
			switch {
			case leader == writer && violated:
				t.Errorf("line %d: %s wrote while leading, Check says violation (leader %q)", e.Line, writer, got)
			case leader != writer && !violated:
				t.Errorf("line %d: %s wrote while %q led, Check says fine", e.Line, writer, leader)
			case leader != writer && got != leader:
				t.Errorf("line %d: %s wrote while %q led, Check says %q led", e.Line, writer, leader, got)
			}
		}
	})
}
