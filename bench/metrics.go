package bench

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// APIRequestsByMethod sums a controller's API requests by HTTP method from
// its Prometheus text. Ours counts `dsbench_controller_api_requests_total`
// by verb; kube-controller-manager counts client-go's
// `rest_client_requests_total` by method. Both are mapped to methods so that
// they compare directly.
func APIRequestsByMethod(text string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	out := map[string]float64{}
	if f, ok := families["dsbench_controller_api_requests_total"]; ok {
		for _, m := range f.GetMetric() {
			out[verbMethod(label(m, "verb"))] += m.GetCounter().GetValue()
		}
		return out, nil
	}
	if f, ok := families["rest_client_requests_total"]; ok {
		for _, m := range f.GetMetric() {
			out[strings.ToUpper(label(m, "method"))] += m.GetCounter().GetValue()
		}
		return out, nil
	}
	return nil, fmt.Errorf("no API request counter in the controller's metrics")
}

func verbMethod(verb string) string {
	switch strings.ToLower(verb) {
	case "get", "list", "watch":
		return "GET"
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	}
	return strings.ToUpper(verb)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// SubtractCounts returns after-before per key, so that a run counts only its
// own requests.
func SubtractCounts(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
