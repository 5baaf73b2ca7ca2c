package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// File names inside an output directory.
const (
	ReportFile   = "report.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	BenchFile    = "bench.txt"
)

// OutDir is the directory for one invocation's outputs under base
// (the runner uses reports/out): base/<UTC timestamp>, e.g. 20260102T030405Z.
func OutDir(base string, now time.Time) string {
	return filepath.Join(base, now.UTC().Format("20060102T150405Z"))
}

// Write validates r and writes it to dir/report.json atomically (a temporary
// file in dir, then rename), creating dir if needed. An empty SchemaVersion is
// written as the current one.
func Write(dir string, r *Report) error {
	if r == nil {
		return fmt.Errorf("writing report to %s: nil report", dir)
	}
	out := *r
	if out.SchemaVersion == "" {
		out.SchemaVersion = SchemaVersion
	}
	if err := Validate(&out); err != nil {
		return fmt.Errorf("writing report to %s: %w", dir, err)
	}
	data, err := marshalJSON(&out)
	if err != nil {
		return fmt.Errorf("writing report to %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, ReportFile), data)
}

// Read reads and validates a report.json written by Write.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading report %s: decoding JSON: %w", path, err)
	}
	if err := Validate(&r); err != nil {
		return nil, fmt.Errorf("reading report %s: %w", path, err)
	}
	return &r, nil
}

func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// writeFileAtomic writes data next to path and renames it into place, so a
// reader never sees a half-written file and a crash leaves the old one intact.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: syncing: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
