// Package secureserving serves the controller's endpoints over TLS behind
// delegated authentication and authorization, as kube-controller-manager's
// secure port does: a bearer token is checked with a TokenReview and the
// request with a SubjectAccessReview, both asked of the API server.
package secureserving
