package secureserving_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/secureserving"
)

// Tokens of the fake API. Each is distinctive, so that a test can look for
// it in the log.
const (
	readerToken = "reader-token-7f3a9c"
	otherToken  = "other-token-2b81de"
	badToken    = "bad-token-c0ffee42"
)

var (
	reader = authenticationv1.UserInfo{
		Username: "system:serviceaccount:monitoring:prometheus",
		UID:      "uid-prometheus",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"},
		Extra:    map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}
	other = authenticationv1.UserInfo{
		Username: "system:serviceaccount:default:nobody",
		Groups:   []string{"system:serviceaccounts", "system:authenticated"},
	}
)

// fakeAPI answers TokenReviews from tokens and SubjectAccessReviews from
// grants ("user verb path"), through a fake clientset that records calls.
type fakeAPI struct {
	client *fake.Clientset
	mu     sync.Mutex
	tokens map[string]authenticationv1.UserInfo
	grants map[string]bool
	// failReviews and failAccessReviews make the calls fail.
	failReviews, failAccessReviews bool
	lastAccessReview               authorizationv1.SubjectAccessReviewSpec
}

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{
		client: fake.NewClientset(),
		tokens: map[string]authenticationv1.UserInfo{readerToken: reader, otherToken: other},
		grants: map[string]bool{reader.Username + " get /metrics": true},
	}
	a.client.PrependReactor("create", "tokenreviews", func(action core.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.failReviews {
			return true, nil, errors.New("the API server is down")
		}
		review := action.(core.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if user, ok := a.tokens[review.Spec.Token]; ok {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: user}
		} else {
			// Quoting the token, so that the test sees the filter keep it out of the log.
			review.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token " + review.Spec.Token}
		}
		return true, review, nil
	})
	a.client.PrependReactor("create", "subjectaccessreviews", func(action core.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.failAccessReviews {
			return true, nil, errors.New("the API server is down")
		}
		review := action.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		a.lastAccessReview = review.Spec
		nr := review.Spec.NonResourceAttributes
		if nr != nil && a.grants[review.Spec.User+" "+nr.Verb+" "+nr.Path] {
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "granted"}
		} else {
			review.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}
		}
		return true, review, nil
	})
	return a
}

// calls counts the creates of resource.
func (a *fakeAPI) calls(resource string) int {
	n := 0
	for _, act := range a.client.Actions() {
		if act.GetVerb() == "create" && act.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// backend stands for the endpoints behind the filter.
var backend = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		w.Write([]byte("dsbench_controller_up 1\n"))
		return
	}
	w.Write([]byte("ok\n"))
})

// logBuffer collects everything the filter logs, at every verbosity.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newFilter(t *testing.T, api *fakeAPI, logs *logBuffer, clock *clocktesting.FakeClock) *secureserving.Filter {
	t.Helper()
	if logs == nil {
		logs = &logBuffer{} // kept out of the test's output
	}
	conf := secureserving.FilterConfig{
		Client:           api.client,
		AlwaysAllowPaths: []string{"/healthz", "readyz", "/public/*"},
		Logger:           logs.logger(),
	}
	if clock != nil {
		conf.Clock = clock
	}
	f, err := secureserving.NewFilter(conf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func serve(h http.Handler, method, path, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name          string
		method, path  string
		authorization string
		wantCode      int
		wantBody      string // substring
	}{
		{name: "no token", path: "/metrics", wantCode: 401, wantBody: "Unauthorized"},
		{name: "basic auth", path: "/metrics", authorization: "Basic dXNlcjpwYXNz", wantCode: 401},
		{name: "empty bearer", path: "/metrics", authorization: "Bearer ", wantCode: 401},
		{name: "space before the token", path: "/metrics", authorization: "Bearer  " + readerToken, wantCode: 401},
		{name: "bad token", path: "/metrics", authorization: "Bearer " + badToken, wantCode: 401},
		{name: "good token, denied", path: "/metrics", authorization: "Bearer " + otherToken, wantCode: 403,
			wantBody: `User "system:serviceaccount:default:nobody" cannot get path "/metrics": no RBAC policy matched`},
		{name: "allowed", path: "/metrics", authorization: "Bearer " + readerToken, wantCode: 200, wantBody: "dsbench_controller_up 1"},
		{name: "scheme in lower case", path: "/metrics", authorization: "bearer " + readerToken, wantCode: 200},
		{name: "the verb is the method", method: "POST", path: "/metrics", authorization: "Bearer " + readerToken, wantCode: 403,
			wantBody: `cannot post path "/metrics"`},
		{name: "a path not granted", path: "/debug/pprof/", authorization: "Bearer " + readerToken, wantCode: 403},
		{name: "always-allowed path without a token", path: "/healthz", wantCode: 200, wantBody: "ok"},
		{name: "always-allowed path without its leading slash", path: "/readyz", wantCode: 200},
		{name: "always-allowed path with a bad token", path: "/readyz", authorization: "Bearer " + badToken, wantCode: 200},
		{name: "always-allowed prefix", path: "/public/anything", wantCode: 200},
		{name: "a prefix is a path prefix", path: "/publicity", wantCode: 401},
		{name: "not a prefix of an exact path", path: "/healthz/x", wantCode: 401},
	}
	logs := &logBuffer{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFilter(t, newFakeAPI(), logs, nil).Wrap(backend)
			method := tt.method
			if method == "" {
				method = "GET"
			}
			rec := serve(h, method, tt.path, tt.authorization)
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s %s: %d %q, want %d and a body with %q", method, tt.path, rec.Code, rec.Body, tt.wantCode, tt.wantBody)
			}
			if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("401 without WWW-Authenticate: Bearer")
			}
		})
	}
	for _, token := range []string{readerToken, otherToken, badToken} {
		if strings.Contains(logs.String(), token) {
			t.Errorf("the log shows the token %s:\n%s", token, logs)
		}
	}
	if !strings.Contains(logs.String(), "[token]") {
		t.Errorf("the log does not show the bad token's review error, redacted:\n%s", logs)
	}
}

// TestFilterCaches steps a fake clock through the TTLs: within them a
// token or a decision is not asked about again, after them it is.
func TestFilterCaches(t *testing.T) {
	api := newFakeAPI()
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFilter(t, api, nil, clock).Wrap(backend)
	steps := []struct {
		name         string
		advance      time.Duration
		token        string
		wantCode     int
		wantReviews  int // TokenReviews so far
		wantAccesses int // SubjectAccessReviews so far
	}{
		{"allowed: both asked", 0, readerToken, 200, 1, 1},
		{"allowed again within the TTLs", secureserving.AuthenticatedTTL - time.Second, readerToken, 200, 1, 1},
		{"allowed after the TTLs: both asked again", time.Second, readerToken, 200, 2, 2},
		{"bad token: asked", 0, badToken, 401, 3, 2},
		{"bad token again within its TTL", secureserving.UnauthenticatedTTL / 2, badToken, 401, 3, 2},
		{"denied: both asked", 0, otherToken, 403, 4, 3},
		{"denied again within the TTLs", 0, otherToken, 403, 4, 3},
		{"bad token after its TTL: asked again", secureserving.UnauthenticatedTTL / 2, badToken, 401, 5, 3},
		{"denied after the TTLs: both asked again", secureserving.DeniedTTL, otherToken, 403, 6, 4},
	}
	for _, s := range steps {
		clock.Step(s.advance)
		rec := serve(h, "GET", "/metrics", "Bearer "+s.token)
		reviews, accesses := api.calls("tokenreviews"), api.calls("subjectaccessreviews")
		if rec.Code != s.wantCode || reviews != s.wantReviews || accesses != s.wantAccesses {
			t.Errorf("%s: %d after %d TokenReviews and %d SubjectAccessReviews; want %d after %d and %d",
				s.name, rec.Code, reviews, accesses, s.wantCode, s.wantReviews, s.wantAccesses)
		}
	}
}

// TestFilterAPIErrors: a failed call answers 401 (authentication) or 500
// (authorization), as the API server's filters do, and is not remembered.
func TestFilterAPIErrors(t *testing.T) {
	api := newFakeAPI()
	h := newFilter(t, api, nil, nil).Wrap(backend)

	api.failReviews = true
	for range 2 {
		if rec := serve(h, "GET", "/metrics", "Bearer "+readerToken); rec.Code != 401 {
			t.Errorf("TokenReview failing: %d, want 401", rec.Code)
		}
	}
	if n := api.calls("tokenreviews"); n != 2 {
		t.Errorf("%d TokenReviews for two requests while failing, want 2 (failures are not remembered)", n)
	}

	api.failReviews, api.failAccessReviews = false, true
	for range 2 {
		if rec := serve(h, "GET", "/metrics", "Bearer "+readerToken); rec.Code != 500 {
			t.Errorf("SubjectAccessReview failing: %d, want 500", rec.Code)
		}
	}
	if n := api.calls("subjectaccessreviews"); n != 2 {
		t.Errorf("%d SubjectAccessReviews for two requests while failing, want 2", n)
	}

	api.failAccessReviews = false
	if rec := serve(h, "GET", "/metrics", "Bearer "+readerToken); rec.Code != 200 {
		t.Errorf("after the API recovered: %d, want 200", rec.Code)
	}
}

// TestAccessReviewAsksAboutTheRequest checks what the SubjectAccessReview
// says: the user as the TokenReview named it, a non-resource request with
// the method as verb.
func TestAccessReviewAsksAboutTheRequest(t *testing.T) {
	api := newFakeAPI()
	h := newFilter(t, api, nil, nil).Wrap(backend)
	serve(h, "GET", "/metrics?name[]=go_goroutines", "Bearer "+readerToken)
	want := authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		User:                  reader.Username,
		UID:                   reader.UID,
		Groups:                reader.Groups,
		Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}
	if diff := cmp.Diff(want, api.lastAccessReview); diff != "" {
		t.Errorf("SubjectAccessReview spec (-want +got):\n%s", diff)
	}
}

func TestTheTokenStopsAtTheFilter(t *testing.T) {
	var seen string
	h := newFilter(t, newFakeAPI(), nil, nil).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization")
	}))
	if rec := serve(h, "GET", "/metrics", "Bearer "+readerToken); rec.Code != 200 {
		t.Fatalf("%d, want 200", rec.Code)
	}
	if seen != "" {
		t.Errorf("the handler behind the filter saw Authorization %q, want none", seen)
	}
}

// TestFilterCallsArePermitted keeps controller.DelegatedAuthPermissions,
// which deploy/clusterrole.yaml must grant, in step with the calls.
func TestFilterCallsArePermitted(t *testing.T) {
	api := newFakeAPI()
	serve(newFilter(t, api, nil, nil).Wrap(backend), "GET", "/metrics", "Bearer "+readerToken)
	groups := map[string]string{"tokenreviews": "authentication.k8s.io", "subjectaccessreviews": "authorization.k8s.io"}
	for _, act := range api.client.Actions() {
		res := act.GetResource()
		if res.Group != groups[res.Resource] {
			t.Errorf("call %s %s in group %q", act.GetVerb(), res.Resource, res.Group)
		}
		if !permits(controller.DelegatedAuthPermissions, res.Group, res.Resource, act.GetVerb()) {
			t.Errorf("%s on %s/%s is not in controller.DelegatedAuthPermissions", act.GetVerb(), res.Group, res.Resource)
		}
	}
	if len(api.client.Actions()) != 2 {
		t.Errorf("calls = %v, want a TokenReview and a SubjectAccessReview", api.client.Actions())
	}
}

func permits(perms []controller.Permission, group, resource, verb string) bool {
	for _, p := range perms {
		if p.Group == group && p.Resource == resource {
			for _, v := range p.Verbs {
				if v == verb {
					return true
				}
			}
		}
	}
	return false
}

func TestNewFilterRefusesBadPaths(t *testing.T) {
	tests := []struct {
		paths   []string
		wantErr string
	}{
		{paths: nil},
		{paths: []string{"/healthz", "readyz", "/debug/*", "*"}},
		{paths: []string{"/de*bug"}, wantErr: `"/de*bug"`},
		{paths: []string{"/*/x*"}, wantErr: `"/*/x*"`},
	}
	for _, tt := range tests {
		err := secureserving.ValidateAlwaysAllowPaths(tt.paths)
		_, nerr := secureserving.NewFilter(secureserving.FilterConfig{Client: fake.NewClientset(), AlwaysAllowPaths: tt.paths})
		for _, e := range []error{err, nerr} {
			if (tt.wantErr == "") != (e == nil) || (e != nil && !strings.Contains(e.Error(), tt.wantErr)) {
				t.Errorf("paths %q: error %v, want one naming %s", tt.paths, e, tt.wantErr)
			}
		}
	}
}
