package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A DeleteCollection that times out part-way is sent again; one that never
// succeeds fails after deletePodsAttempts with the last error.
func TestDeletePodsRetriesTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		wantErr  bool
	}{
		{name: "first try", failures: 0},
		{name: "two timeouts", failures: 2},
		{name: "always", failures: deletePodsAttempts, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			calls := 0
			client.PrependReactor("delete-collection", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failures {
					return true, nil, apierrors.NewTimeoutError("deleting", 1)
				}
				return true, nil, nil
			})
			zero := int64(0)
			err := deletePods(context.Background(), client, "bench", &zero)
			if (err != nil) != tc.wantErr {
				t.Fatalf("deletePods = %v, want error %v", err, tc.wantErr)
			}
			if want := min(tc.failures+1, deletePodsAttempts); calls != want {
				t.Errorf("DeleteCollection calls = %d, want %d", calls, want)
			}
			if tc.wantErr && (!apierrors.IsTimeout(errors.Unwrap(err)) || !strings.Contains(err.Error(), "6 attempts")) {
				t.Errorf("error %v does not carry the attempts and the last error", err)
			}
		})
	}
}
