package reports

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// burstSteps are the names of crowdedReport's burst, as long as the
// library's (taint-churn's, label-churn-ssd's).
var burstSteps = []string{
	"dedicate some workers (NoSchedule keeps running pods)",
	"change the taint's value",
	"evict with NoExecute (fluentd and node-exporter pods must go)",
	"custom NoExecute taint on masters",
	"label two nodes ssd",
	"remove the taints again",
}

// crowdedReport returns a copy of r whose rolling-update runs (the only ones
// with timelines) have, every 0.15 s after their last step, a burst of six
// more steps within one second: their markers lie closer together than
// their labels are wide.
func crowdedReport(t *testing.T, r *Report) *Report {
	t.Helper()
	data, err := marshalJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	var cp Report
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	for i := range cp.Runs {
		run := &cp.Runs[i]
		if run.Scenario != "rolling-update" || len(run.Steps) == 0 {
			continue
		}
		last := run.Steps[len(run.Steps)-1]
		for k, name := range burstSteps {
			run.Steps = append(run.Steps, Step{
				Name:      name,
				Kind:      "taint",
				Start:     last.Start.Add(time.Duration(k+1) * 150 * time.Millisecond),
				Converged: true,
				Seconds:   0.5 + 0.1*float64(k+run.Repetition%3),
			})
		}
	}
	return &cp
}

// TestHTMLInBrowser opens report.html in headless Chromium and looks at it.
// The page is that of crowdedReport, whose timelines have steps closer
// together than their labels. A script appended to a copy of the page puts
// into the title, read back with --dump-dom, how many images decoded
// (naturalWidth > 0), the page's height and where each image lies; then a
// screenshot of the whole page is taken and each timeline cut out of it:
//
//   - its step chips (the only pixels of colorStepChip) must be as many as
//     twice its steps (above the plot and in the key), of one height, with
//     bounding boxes that do not intersect: no two step labels overlap;
//   - the current count's colour must show right beside the updated count's
//     in many pixel columns: where the two coincide, both stay visible.
//
// With DSBENCH_SCREENSHOT_DIR set, the screenshot and the cut-outs are
// written there to be looked at. Without Chromium the test skips, unless
// DSBENCH_REQUIRE_BROWSER=1.
func TestHTMLInBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		if os.Getenv("DSBENCH_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium not found and DSBENCH_REQUIRE_BROWSER=1")
		}
		t.Skip("chromium not found (install it, or set DSBENCH_REQUIRE_BROWSER=1 to make this a failure)")
	}
	r, b := readTestdata(t)
	r = crowdedReport(t, r)
	dir := t.TempDir()
	if err := Render(dir, r, b); err != nil {
		t.Fatalf("Render: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	const probe = `<script>window.addEventListener("load", function () {
  var ok = 0, imgs = document.images, rects = [];
  for (var i = 0; i < imgs.length; i++) {
    var im = imgs[i], b = im.getBoundingClientRect();
    if (im.complete && im.naturalWidth > 0) ok++;
    // The image's own pixels: inside its border.
    rects.push([im.className, Math.round(b.left + window.scrollX + im.clientLeft),
      Math.round(b.top + window.scrollY + im.clientTop), im.clientWidth, im.clientHeight,
      im.naturalWidth, im.naturalHeight].join(" "));
  }
  document.title = "decoded " + ok + " of " + imgs.length + "; height " +
    document.documentElement.scrollHeight + "; " + rects.join("; ");
});</script>
</body>`
	probed := strings.Replace(string(page), "</body>", probe, 1)
	probePath := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probePath, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}

	const width = 1200
	dom := runChromium(t, browser, width, 2000, "--dump-dom", "file://"+probePath)
	title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(dom)
	if title == nil {
		t.Fatalf("chromium --dump-dom: no title in %.300s", dom)
	}
	fields := strings.Split(title[1], "; ")
	if want := fmt.Sprintf("decoded %d of %d", wantFigures, wantFigures); fields[0] != want {
		t.Fatalf("chromium --dump-dom: got %q, want %q", fields[0], want)
	}
	height, err := strconv.Atoi(strings.TrimPrefix(fields[1], "height "))
	if err != nil {
		t.Fatalf("page height in %q: %v", fields[1], err)
	}
	type placed struct {
		class string
		rect  image.Rectangle
	}
	var imgs []placed
	for _, f := range fields[2:] {
		var p placed
		var x, y, w, h, nw, nh int
		if _, err := fmt.Sscanf(f, "%s %d %d %d %d %d %d", &p.class, &x, &y, &w, &h, &nw, &nh); err != nil {
			t.Fatalf("image rectangle %q: %v", f, err)
		}
		if w != nw || h != nh {
			t.Errorf("%s image drawn %dx%d, not at its natural %dx%d: pixels would be resampled", p.class, w, h, nw, nh)
		}
		p.rect = image.Rect(x, y, x+w, y+h)
		imgs = append(imgs, p)
	}

	// Chromium's window is the whole page, so the screenshot holds every figure.
	shot := filepath.Join(dir, "screenshot.png")
	runChromium(t, browser, width, height, "--screenshot="+shot, "file://"+filepath.Join(dir, HTMLFile))
	img := readPNG(t, shot)
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot is %v, want %dx%d", b, width, height)
	}
	if n := distinctColors(img, 4); n < 20 {
		t.Errorf("screenshot has %d distinct colors: the page did not render", n)
	}
	out := os.Getenv("DSBENCH_SCREENSHOT_DIR")
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		writePNG(t, filepath.Join(out, "report.png"), img)
	}

	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		t.Fatalf("screenshot is a %T, which cannot be cut", img)
	}
	// Both timelines are of rolling-update runs, which have as many steps.
	steps := 0
	for _, run := range r.Runs {
		if run.Scenario == "rolling-update" {
			steps = len(run.Steps)
		}
	}
	timelines := 0
	for i, p := range imgs {
		fig := sub.SubImage(p.rect)
		if out != "" {
			writePNG(t, filepath.Join(out, fmt.Sprintf("figure-%d-%s.png", i, p.class)), fig)
		}
		if p.class != figureTimeline {
			continue
		}
		timelines++
		t.Run(fmt.Sprintf("timeline %d", i), func(t *testing.T) {
			checkChips(t, fig, steps)
			if n := besideColumns(fig, colorUpdated, colorCurrent, 4); n < 40 {
				t.Errorf("current shows beside updated in %d pixel columns, want at least 40: one hides the other", n)
			}
			for _, s := range timelineSeries {
				if n := countColor(fig, s.col); n < 50 {
					t.Errorf("%s: %d pixels of its colour, want at least 50", s.name, n)
				}
			}
		})
	}
	if timelines != 2 {
		t.Errorf("found %d timelines on the page, want 2", timelines)
	}
}

// checkChips finds the step chips in a timeline: connected regions of
// colorStepChip. There must be 2*steps of them (above the plot and in the
// key), all of one height give or take the pixel that antialiasing adds at
// an edge (two chips stacked into each other would make a taller one), with
// bounding boxes that do not intersect.
func checkChips(t *testing.T, img image.Image, steps int) {
	t.Helper()
	boxes := colorRegions(img, colorStepChip, 30)
	if len(boxes) != 2*steps {
		t.Errorf("found %d step chips, want %d (%d steps, above the plot and in the key): %v", len(boxes), 2*steps, steps, boxes)
	}
	for i, b := range boxes {
		if d := b.Dy() - boxes[0].Dy(); d < -1 || d > 1 {
			t.Errorf("chip %v is %d pixels high, chip %v %d: chips ran into each other", b, b.Dy(), boxes[0], boxes[0].Dy())
		}
		for _, c := range boxes[:i] {
			if b.Overlaps(c) {
				t.Errorf("chips %v and %v overlap", c, b)
			}
		}
	}
}

// near says whether c is within tol of want in each channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(v uint32, w uint8) bool {
		x := int(v>>8) - int(w)
		return -tol <= x && x <= tol
	}
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

const colorTolerance = 8

// colorRegions returns the bounding boxes, in order of discovery, of the
// 8-connected regions of pixels near col of at least minPixels pixels.
func colorRegions(img image.Image, col color.RGBA, minPixels int) []image.Rectangle {
	b := img.Bounds()
	seen := make(map[image.Point]bool)
	var out []image.Rectangle
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			start := image.Pt(x, y)
			if seen[start] || !near(img.At(x, y), col, colorTolerance) {
				continue
			}
			seen[start] = true
			box := image.Rectangle{Min: start, Max: start.Add(image.Pt(1, 1))}
			n := 0
			for queue := []image.Point{start}; len(queue) > 0; queue = queue[1:] {
				p := queue[0]
				n++
				box = box.Union(image.Rectangle{Min: p, Max: p.Add(image.Pt(1, 1))})
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						q := p.Add(image.Pt(dx, dy))
						if q.In(b) && !seen[q] && near(img.At(q.X, q.Y), col, colorTolerance) {
							seen[q] = true
							queue = append(queue, q)
						}
					}
				}
			}
			if n >= minPixels {
				out = append(out, box)
			}
		}
	}
	return out
}

// besideColumns counts the pixel columns in which a pixel of a has a pixel
// of b at most dist pixels above or below it.
func besideColumns(img image.Image, a, b color.RGBA, dist int) int {
	bounds := img.Bounds()
	n := 0
	for x := bounds.Min.X; x < bounds.Max.X; x++ {
	column:
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			if !near(img.At(x, y), a, colorTolerance) {
				continue
			}
			for d := -dist; d <= dist; d++ {
				if yy := y + d; yy >= bounds.Min.Y && yy < bounds.Max.Y && near(img.At(x, yy), b, colorTolerance) {
					n++
					break column
				}
			}
		}
	}
	return n
}

func countColor(img image.Image, col color.Color) int {
	want := color.RGBAModel.Convert(col).(color.RGBA)
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img.At(x, y), want, colorTolerance) {
				n++
			}
		}
	}
	return n
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return img
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
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

func runChromium(t *testing.T, browser string, width, height int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run",
		"--force-color-profile=srgb", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=%d,%d", width, height),
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
