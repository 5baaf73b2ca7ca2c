package reports

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// wantFigures is the number of plots for testdata/report.json: rolling-update
// has a box plot, two CDFs and two timelines (one per controller); node-churn
// has a box plot and the node-join CDF.
const wantFigures = 7

var imgTag = regexp.MustCompile(`<img\b[^>]*>`)
var imgSrc = regexp.MustCompile(`\bsrc="data:image/png;base64,([A-Za-z0-9+/=]+)"`)

func renderTestdataHTML(t *testing.T) (dir string, page []byte) {
	t.Helper()
	r, b := readTestdata(t)
	dir = t.TempDir()
	if err := Render(dir, r, b); err != nil {
		t.Fatalf("Render: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatalf("reading report.html: %v", err)
	}
	return dir, page
}

func TestHTMLSelfContained(t *testing.T) {
	_, page := renderTestdataHTML(t)
	s := string(page)
	for _, bad := range []string{"http://", "https://", "//cdn", "<link", "<script", "@import", "url(", "<iframe", "<object", "<embed"} {
		if strings.Contains(s, bad) {
			t.Errorf("report.html contains %q: it must not reference anything outside the file", bad)
		}
	}
	tags := imgTag.FindAllString(s, -1)
	if len(tags) != wantFigures {
		t.Fatalf("report.html has %d <img> tags, want %d", len(tags), wantFigures)
	}
	for i, tag := range tags {
		m := imgSrc.FindStringSubmatch(tag)
		if m == nil {
			t.Errorf("img %d is not an embedded PNG: %.100s", i, tag)
			continue
		}
		data, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Errorf("img %d: decoding base64: %v", i, err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Errorf("img %d: decoding PNG: %v", i, err)
			continue
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 || distinctColors(img, 3) < 3 {
			t.Errorf("img %d: %v with %d colors does not look like a plot", i, b, distinctColors(img, 3))
		}
	}
}

// TestHTMLInBrowser opens report.html in headless Chromium: a script appended
// to a copy of the page sets the title to the number of images that decoded
// (naturalWidth > 0), read back with --dump-dom; then a screenshot must show
// more than a blank page. Without Chromium the test skips, unless
// DSBENCH_REQUIRE_BROWSER=1.
func TestHTMLInBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		if os.Getenv("DSBENCH_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium not found and DSBENCH_REQUIRE_BROWSER=1")
		}
		t.Skip("chromium not found (install it, or set DSBENCH_REQUIRE_BROWSER=1 to make this a failure)")
	}
	dir, page := renderTestdataHTML(t)
	const probe = `<script>window.addEventListener("load", function () {
  var ok = 0, imgs = document.images;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.title = "decoded " + ok + " of " + imgs.length;
});</script>
</body>`
	probed := strings.Replace(string(page), "</body>", probe, 1)
	probePath := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probePath, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := runChromium(t, browser, "--dump-dom", "file://"+probePath)
	want := "<title>decoded 7 of 7</title>"
	if !strings.Contains(dom, want) {
		m := regexp.MustCompile(`<title>[^<]*</title>`).FindString(dom)
		t.Fatalf("chromium --dump-dom: got %q, want %q", m, want)
	}

	shot := filepath.Join(dir, "screenshot.png")
	runChromium(t, browser, "--screenshot="+shot, "file://"+filepath.Join(dir, HTMLFile))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2000 {
		t.Errorf("screenshot is %v, want 1200x2000", b)
	}
	if n := distinctColors(img, 4); n < 20 {
		t.Errorf("screenshot has %d distinct colors: the page did not render", n)
	}
}

func findChromium() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

func runChromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,2000",
	}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running chromium %v: %v\n%s", args, err, lastLines(stderr.String(), 20))
	}
	return stdout.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// distinctColors counts colors in img, sampling every step-th pixel.
func distinctColors(img image.Image, step int) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += step {
		for x := b.Min.X; x < b.Max.X; x += step {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
		}
	}
	return len(seen)
}
