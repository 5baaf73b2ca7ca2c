package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Event is the part of an audit.k8s.io/v1 Event that the check reads. The
// types are our own so that this package does not pull in k8s.io/apiserver;
// the JSON names are the API's.
type Event struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent      string     `json:"userAgent"`
	ObjectRef      *ObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
	// RequestObject is the request's body, logged at Request level and
	// above; kwok.AuditPolicy logs it for Lease writes only.
	// It is decoded only for Lease writes (Event.leaseRecord), so that an
	// odd body of some other request cannot make the log unreadable.
	RequestObject json.RawMessage `json:"requestObject,omitempty"`

	// Line is the event's line in its log (1-based), for a reader to find it.
	Line int `json:"-"`
}

// ObjectRef names the object of a request.
type ObjectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Subresource string `json:"subresource"`
}

// The stages of a request. ResponseComplete and Panic are final: a request
// has exactly one of them, so they are what the check counts.
const (
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// LeaseRecord is what client-go's elector wrote to the Lease: the record
// that standbys compare and judge expiry by.
type LeaseRecord struct {
	Holder string
	// DurationSeconds is spec.leaseDurationSeconds; 0 if absent.
	DurationSeconds int
	// RenewTime is spec.renewTime on the writer's clock; zero if absent.
	RenewTime time.Time
}

// leaseRecord decodes the Lease in the request body; ok is false when the
// event has no body (a Metadata-level log) or the body is not a Lease.
func (e Event) leaseRecord() (rec LeaseRecord, ok bool) {
	if len(e.RequestObject) == 0 {
		return rec, false
	}
	var obj struct {
		Kind string `json:"kind"`
		Spec struct {
			HolderIdentity       string    `json:"holderIdentity"`
			LeaseDurationSeconds int       `json:"leaseDurationSeconds"`
			RenewTime            time.Time `json:"renewTime"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(e.RequestObject, &obj); err != nil || obj.Kind != "Lease" {
		return rec, false
	}
	return LeaseRecord{Holder: obj.Spec.HolderIdentity, DurationSeconds: obj.Spec.LeaseDurationSeconds, RenewTime: obj.Spec.RenewTime}, true
}

// Code is the response's HTTP status code, 0 if the event has none.
func (e Event) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e Event) final() bool { return e.Stage == StageResponseComplete || e.Stage == StagePanic }

// Log is a decoded audit log.
type Log struct {
	// Name is the file's name, as given to Decode.
	Name   string
	Events []Event
	// PartialLastLine says that the last line had no newline and did not
	// parse, and was left out: kube-apiserver was still writing it when
	// the file was read.
	PartialLastLine bool
}

// ErrMalformed is wrapped by every error about a line of the log.
var ErrMalformed = errors.New("malformed audit log")

// maxLine bounds one line. A Metadata-level event is about a kilobyte; a
// line a thousand times that long is not an audit event.
const maxLine = 1 << 20

// ReadFile decodes the audit log at path.
func ReadFile(path string) (Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return Log{Name: path}, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	return Decode(path, f)
}

// Decode reads JSON lines of audit.k8s.io/v1 Event, the format of
// kube-apiserver's --audit-log-path with the default --audit-log-format=json.
// name is used in errors only.
//
// The rule for lines: blank lines are skipped, and unknown fields are
// ignored; every other line must be one JSON object with apiVersion
// audit.k8s.io/v1, kind Event, a known stage, a verb and a
// requestReceivedTimestamp. Anything else is an error naming the file and
// line (wrapping ErrMalformed) rather than a line skipped, so that the wrong
// file or the "legacy" text format can never pass as a clean log. The one
// exception is a last line without a newline that does not parse: it is
// being written, and is left out (Log.PartialLastLine).
func Decode(name string, r io.Reader) (Log, error) {
	log := Log{Name: name}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return log, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if len(bytes.TrimSpace(line)) > 0 {
			ev, perr := parseLine(line)
			switch {
			case perr == nil:
				ev.Line = n
				log.Events = append(log.Events, ev)
			case !complete && errors.Is(err, io.EOF):
				log.PartialLastLine = true
			default:
				return log, fmt.Errorf("%s:%d: %w: %w", name, n, ErrMalformed, perr)
			}
		}
		if errors.Is(err, io.EOF) {
			return log, nil
		}
	}
}

// readLine returns the next line with its newline, or what is left before
// EOF. A line longer than maxLine is an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, maxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func parseLine(line []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return ev, err
	}
	switch {
	case ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event":
		return ev, fmt.Errorf("not an audit.k8s.io/v1 Event (apiVersion %q, kind %q)", ev.APIVersion, ev.Kind)
	case ev.Verb == "":
		return ev, fmt.Errorf("event %q has no verb", ev.AuditID)
	case ev.RequestReceivedTimestamp.IsZero():
		return ev, fmt.Errorf("event %q has no requestReceivedTimestamp", ev.AuditID)
	}
	switch ev.Stage {
	case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
	default:
		return ev, fmt.Errorf("event %q has unknown stage %q", ev.AuditID, ev.Stage)
	}
	return ev, nil
}
