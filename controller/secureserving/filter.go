package secureserving

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// How long the API server's answers are remembered: kube-controller-manager's
// defaults for its delegating authenticator (--authentication-token-webhook-cache-ttl)
// and authorizer (--authorization-webhook-cache-authorized-ttl and
// --authorization-webhook-cache-unauthorized-ttl). A revoked token or
// binding stops working within this long.
const (
	AuthenticatedTTL   = 10 * time.Second
	UnauthenticatedTTL = 10 * time.Second
	AllowedTTL         = 10 * time.Second
	DeniedTTL          = 10 * time.Second
)

// cacheSize bounds each cache. A few scrapers need a few entries; the bound
// only matters under a flood of distinct tokens.
const cacheSize = 1024

// FilterConfig configures a Filter.
type FilterConfig struct {
	// Client asks the API server. It needs create on tokenreviews
	// (authentication.k8s.io) and subjectaccessreviews
	// (authorization.k8s.io).
	Client kubernetes.Interface
	// AlwaysAllowPaths are served without a token, as with
	// kube-controller-manager's --authorization-always-allow-paths: each is
	// a path or a prefix ending in "*"; the leading "/" is optional.
	AlwaysAllowPaths []string
	// Logger: the zero value means klog.Background().
	Logger klog.Logger
	// Clock times the caches; nil means the real clock.
	Clock clock.PassiveClock
}

// Filter lets a request through only if its bearer token authenticates
// (TokenReview) and its user may use the request's method on its path
// (SubjectAccessReview of a non-resource request, as "get" on "/metrics" in
// a ClusterRole's nonResourceURLs). Paths it always allows skip both.
type Filter struct {
	client      kubernetes.Interface
	alwaysAllow pathSet
	logger      klog.Logger
	clock       clock.PassiveClock
	// tokenKey is a random per-process HMAC key: the cache of users is
	// keyed by the token's HMAC, never by the token.
	tokenKey  []byte
	users     *ttlCache[authentication]
	decisions *ttlCache[decision]
}

// authentication is a TokenReview's answer.
type authentication struct {
	user          authenticationv1.UserInfo
	authenticated bool
}

// decision is a SubjectAccessReview's answer.
type decision struct {
	allowed bool
	reason  string
}

// NewFilter returns a Filter; it fails on a bad always-allowed path.
func NewFilter(conf FilterConfig) (*Filter, error) {
	if conf.Client == nil {
		return nil, errors.New("creating the authentication filter: no API client")
	}
	allow, err := parsePaths(conf.AlwaysAllowPaths)
	if err != nil {
		return nil, fmt.Errorf("creating the authentication filter: %w", err)
	}
	if conf.Logger.GetSink() == nil {
		conf.Logger = klog.Background()
	}
	if conf.Clock == nil {
		conf.Clock = clock.RealClock{}
	}
	key := make([]byte, sha256.Size)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("creating the authentication filter: %w", err)
	}
	return &Filter{
		client:      conf.Client,
		alwaysAllow: allow,
		logger:      conf.Logger.WithName("secure-serving"),
		clock:       conf.Clock,
		tokenKey:    key,
		users:       newTTLCache[authentication](cacheSize),
		decisions:   newTTLCache[decision](cacheSize),
	}, nil
}

// Wrap puts f in front of next. Answers: 401 without a valid bearer token,
// 403 when the user may not, 500 when the API server could not say.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if f.alwaysAllow.matches(path) {
			next.ServeHTTP(w, r)
			return
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			f.logger.V(4).Info("Unauthorized: no bearer token", "path", path, "remote", r.RemoteAddr)
			unauthorized(w)
			return
		}
		user, ok, err := f.authenticate(r.Context(), token)
		if err != nil {
			f.logger.Error(err, "Could not authenticate a request", "path", path, "remote", r.RemoteAddr)
		}
		if !ok {
			unauthorized(w)
			return
		}
		// The token goes no further than this filter, as in the API server.
		r.Header.Del("Authorization")

		verb := strings.ToLower(r.Method)
		d, err := f.authorize(r.Context(), user, verb, path)
		if err != nil {
			f.logger.Error(err, "Could not authorize a request", "user", user.Username, "verb", verb, "path", path)
			http.Error(w, "Internal Server Error: could not authorize the request", http.StatusInternalServerError)
			return
		}
		if !d.allowed {
			f.logger.V(2).Info("Forbidden", "user", user.Username, "verb", verb, "path", path, "reason", d.reason)
			http.Error(w, forbiddenMessage(user.Username, verb, path, d.reason), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate asks the API server who token belongs to, or remembers.
// A failed call is not remembered: the next request asks again.
func (f *Filter) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	key := f.hashToken(token)
	if a, ok := f.users.get(key, f.clock.Now()); ok {
		return a.user, a.authenticated, nil
	}
	review, err := f.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	st := review.Status
	ttl := AuthenticatedTTL
	if !st.Authenticated {
		ttl = UnauthenticatedTTL
		// An authenticator may quote what it was given; the log never shows it.
		f.logger.V(4).Info("Unauthorized: the token did not authenticate", "error", strings.ReplaceAll(st.Error, token, "[token]"))
	}
	f.users.add(key, authentication{user: st.User, authenticated: st.Authenticated}, ttl, f.clock.Now())
	return st.User, st.Authenticated, nil
}

// authorize asks the API server whether user may use verb on path, or
// remembers. A failed call is not remembered.
func (f *Filter) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (decision, error) {
	spec := accessReviewSpec(user, verb, path)
	// Maps encode with sorted keys, so equal specs make equal keys.
	k, err := json.Marshal(spec)
	if err != nil {
		return decision{}, fmt.Errorf("encoding a SubjectAccessReview: %w", err)
	}
	key := string(k)
	if d, ok := f.decisions.get(key, f.clock.Now()); ok {
		return d, nil
	}
	review, err := f.client.AuthorizationV1().SubjectAccessReviews().Create(ctx,
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	st := review.Status
	d := decision{allowed: st.Allowed && !st.Denied, reason: st.Reason}
	ttl := AllowedTTL
	if !d.allowed {
		ttl = DeniedTTL
	}
	f.decisions.add(key, d, ttl, f.clock.Now())
	return d, nil
}

func (f *Filter) hashToken(token string) string {
	h := hmac.New(sha256.New, f.tokenKey)
	h.Write([]byte(token))
	return hex.EncodeToString(h.Sum(nil))
}

// accessReviewSpec asks whether user may use verb on the non-resource path.
func accessReviewSpec(user authenticationv1.UserInfo, verb, path string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		User:                  user.Username,
		Groups:                user.Groups,
		UID:                   user.UID,
		Extra:                 extra,
	}
}

// bearerToken reads "Bearer <token>": the scheme in any case, then one
// token and nothing more (the API server ignores what follows a token;
// this refuses it).
func bearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "Unauthorized", http.StatusUnauthorized)
}

// forbiddenMessage words a 403 as the API server does.
func forbiddenMessage(user, verb, path, reason string) string {
	msg := fmt.Sprintf("Forbidden: User %q cannot %s path %q", user, verb, path)
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}

// pathSet matches always-allowed paths as the API server's
// --authorization-always-allow-paths does.
type pathSet struct {
	exact    map[string]bool
	prefixes []string
}

// parsePaths reads paths, each a path or a prefix ending in "*"; the
// leading "/" is optional.
func parsePaths(paths []string) (pathSet, error) {
	s := pathSet{exact: map[string]bool{}}
	for _, p := range paths {
		trimmed := strings.TrimPrefix(p, "/")
		if before, ok := strings.CutSuffix(trimmed, "*"); ok {
			if strings.Contains(before, "*") {
				return pathSet{}, fmt.Errorf("always-allowed path %q: only a trailing * is allowed", p)
			}
			s.prefixes = append(s.prefixes, before)
			continue
		}
		if strings.Contains(trimmed, "*") {
			return pathSet{}, fmt.Errorf("always-allowed path %q: only a trailing * is allowed", p)
		}
		s.exact[trimmed] = true
	}
	return s, nil
}

// ValidateAlwaysAllowPaths reports the first path that FilterConfig's
// AlwaysAllowPaths would refuse.
func ValidateAlwaysAllowPaths(paths []string) error {
	_, err := parsePaths(paths)
	return err
}

func (s pathSet) matches(path string) bool {
	p := strings.TrimPrefix(path, "/")
	if s.exact[p] {
		return true
	}
	for _, prefix := range s.prefixes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
