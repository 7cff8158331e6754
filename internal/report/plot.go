package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes: wide enough for a time axis of a year, small enough for a
// pull-request comment.
const (
	plotWidth  = 7.5 * vg.Inch
	plotHeight = 3.6 * vg.Inch
)

// The palette: Okabe–Ito, distinguishable with the common colour-vision
// deficiencies. Side A of a diff is the first, side B the second.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{120, 120, 120, 255}, // grey
	color.RGBA{240, 228, 66, 255},  // yellow
}

var (
	failColor  = color.RGBA{200, 0, 0, 255}
	driftColor = color.RGBA{150, 150, 150, 255}
)

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// shapes keeps series apart without colour.
var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

func init() {
	// Sans serif reads better on screens than the default Times-like
	// serif; Liberation Sans has Arial's metrics, which browsers without
	// it fall back to (see fontFallback).
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// Figure is a plot with what a reader without the picture needs: a title
// (the SVG's <title>) and a description (its <desc>). The page shows the
// figure's data as a table beside it.
type Figure struct {
	Title string
	Desc  string
	// Plots are drawn one above the other.
	Plots []*plot.Plot
}

// draw draws the plots stacked on a canvas of the figure's size.
func (f *Figure) draw(c vg.CanvasSizer) {
	dc := draw.New(c)
	// A white ground, so that a plot pasted into a dark page reads.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if len(f.Plots) == 1 {
		drawPlot(f.Plots[0], dc)
		return
	}
	grid := make([][]*plot.Plot, len(f.Plots))
	for i, p := range f.Plots {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(f.Plots), Cols: 1, PadY: vg.Points(6)}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range f.Plots {
		drawPlot(p, canvases[i][0])
	}
}

// drawPlot draws a plot with its legend to the right of the data area,
// where it hides no data: inside, gonum puts it over the top right
// corner, where a time series has its latest points.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	r := leg.Rectangle(c)
	if r.Size().X <= 0 || r.Size().Y <= 0 {
		p.Draw(c)
		return
	}
	w := r.Size().X + vg.Points(10)
	p.Legend = plot.NewLegend()
	p.Draw(draw.Crop(c, 0, -w, 0, 0))
	p.Legend = leg
	title := vg.Length(0)
	if p.Title.Text != "" {
		title = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Draw(draw.Crop(c, c.Size().X-w+vg.Points(6), 0, 0, -title))
}

func (f *Figure) height() vg.Length { return plotHeight * vg.Length(max(1, len(f.Plots))) }

// axisLabel names a metric axis by its unit and the better direction:
// "tok/s, higher is better ↑"; the plot's title names the metric.
func axisLabel(unit, dir string) string {
	s := unit
	if s == "" {
		s = "value"
	}
	switch dir {
	case "higher":
		s += ", higher is better ↑"
	case "lower":
		s += ", lower is better ↓"
	}
	return s
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(9.5)
	p.Y.Tick.Label.Font.Size = vg.Points(9.5)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9.5)
	p.Legend.Padding = vg.Points(2)
	p.Y.Tick.Marker = readableTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{225}
	grid.Horizontal.Color = color.Gray{225}
	p.Add(grid)
	return p
}

// WriteSVG writes the figure as a standalone SVG file.
func (f *Figure) WriteSVG(w io.Writer) error {
	c := vgsvg.New(plotWidth, f.height())
	f.draw(c)
	_, err := c.WriteTo(w)
	return err
}

// WritePNG writes the figure as a PNG at 144 dots per inch (sharp on a
// high-density screen, small enough to attach to a pull request).
func (f *Figure) WritePNG(w io.Writer) error {
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, f.height()), vgimg.UseDPI(144),
		vgimg.UseBackgroundColor(color.White))}
	f.draw(c)
	_, err := c.WriteTo(w)
	return err
}

var (
	svgHeadRE   = regexp.MustCompile(`(?s)^.*?<svg `)
	svgSizeRE   = regexp.MustCompile(`^width="[^"]*" height="[^"]*"`)
	svgFamilyRE = regexp.MustCompile(`font-family:Liberation Sans;`)
)

// fontFallback names fonts with Liberation Sans's metrics for systems
// that lack it; the generic family last. No font is downloaded.
const fontFallback = `font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;`

// inlineSVG renders the figure as an <svg> element to embed in a page:
// no XML prolog, a role, a <title> and <desc> for assistive technology,
// and a width that follows the page.
func (f *Figure) inlineSVG(id string) ([]byte, error) {
	var buf bytes.Buffer
	if err := f.WriteSVG(&buf); err != nil {
		return nil, fmt.Errorf("drawing %s: %w", f.Title, err)
	}
	s := buf.String()
	s = svgHeadRE.ReplaceAllString(s, "")
	s = svgSizeRE.ReplaceAllString(s, `class="plot" preserveAspectRatio="xMidYMid meet"`)
	s = svgFamilyRE.ReplaceAllString(s, fontFallback)
	// The opening tag ends at the first '>'.
	i := strings.IndexByte(s, '>')
	if i < 0 {
		return nil, fmt.Errorf("drawing %s: malformed SVG", f.Title)
	}
	var out bytes.Buffer
	out.Grow(len(s) + 512)
	fmt.Fprintf(&out, `<svg role="img" aria-labelledby="%[1]s-t %[1]s-d" id="%[1]s" `, id)
	out.WriteString(s[:i+1])
	fmt.Fprintf(&out, "\n<title id=\"%s-t\">%s</title><desc id=\"%s-d\">%s</desc>", id, html.EscapeString(f.Title), id, html.EscapeString(f.Desc))
	out.WriteString(s[i+1:])
	return out.Bytes(), nil
}

// point is one value with its interval; Low and High are NaN without one.
type point struct {
	X, Y, Low, High float64
}

// series draws one line of points with their interval bars as three SVG
// paths (the line, the bars, the markers), so that a series of a thousand
// runs stays small. Markers are left out above markerLimit points.
type series struct {
	Points []point
	Color  color.Color
	Shape  draw.GlyphDrawer
	// Line joins consecutive points; a NaN Y breaks it.
	Line bool
}

const markerLimit = 150

func (s *series) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: s.Color, Width: vg.Points(1.2)}
	if s.Line {
		var path vg.Path
		pen := false
		for _, pt := range s.Points {
			if math.IsNaN(pt.Y) {
				pen = false
				continue
			}
			q := vg.Point{X: trX(pt.X), Y: trY(pt.Y)}
			if pen {
				path.Line(q)
			} else {
				path.Move(q)
				pen = true
			}
		}
		c.SetLineStyle(ls)
		c.Stroke(path)
	}
	var bars vg.Path
	capW := vg.Points(3)
	if len(s.Points) > markerLimit {
		capW = 0
	}
	for _, pt := range s.Points {
		if math.IsNaN(pt.Low) || math.IsNaN(pt.High) || math.IsNaN(pt.Y) {
			continue
		}
		x, lo, hi := trX(pt.X), trY(pt.Low), trY(pt.High)
		bars.Move(vg.Point{X: x, Y: lo})
		bars.Line(vg.Point{X: x, Y: hi})
		if capW > 0 {
			bars.Move(vg.Point{X: x - capW, Y: lo})
			bars.Line(vg.Point{X: x + capW, Y: lo})
			bars.Move(vg.Point{X: x - capW, Y: hi})
			bars.Line(vg.Point{X: x + capW, Y: hi})
		}
	}
	c.SetLineStyle(draw.LineStyle{Color: s.Color, Width: vg.Points(0.9)})
	c.Stroke(bars)
	if len(s.Points) <= markerLimit {
		gs := draw.GlyphStyle{Color: s.Color, Radius: vg.Points(2.6), Shape: s.Shape}
		for _, pt := range s.Points {
			if !math.IsNaN(pt.Y) {
				c.DrawGlyph(gs, vg.Point{X: trX(pt.X), Y: trY(pt.Y)})
			}
		}
	}
}

// DataRange covers the points and their intervals.
func (s *series) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, pt := range s.Points {
		xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
		for _, y := range []float64{pt.Y, pt.Low, pt.High} {
			if !math.IsNaN(y) {
				ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			}
		}
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail draws the series' legend entry.
func (s *series) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	if s.Line {
		c.StrokeLine2(draw.LineStyle{Color: s.Color, Width: vg.Points(1.2)}, c.Min.X, y, c.Max.X, y)
	}
	c.DrawGlyph(draw.GlyphStyle{Color: s.Color, Radius: vg.Points(2.6), Shape: s.Shape}, c.Center())
}

// vlines marks x positions with dashed vertical lines over the whole
// height: the runs where the configuration or the rig drifted.
type vlines struct {
	X     []float64
	Color color.Color
}

func (v *vlines) style() draw.LineStyle {
	return draw.LineStyle{Color: v.Color, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
}

func (v *vlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	var path vg.Path
	for _, x := range v.X {
		path.Move(vg.Point{X: trX(x), Y: c.Min.Y})
		path.Line(vg.Point{X: trX(x), Y: c.Max.Y})
	}
	c.SetLineStyle(v.style())
	c.Stroke(path)
}

func (v *vlines) Thumbnail(c *draw.Canvas) {
	x := c.Center().X
	c.StrokeLine2(v.style(), x, c.Min.Y, x, c.Max.Y)
}

// marks draws a glyph at each x along the bottom edge: the failed runs,
// which have no value to place.
type marks struct {
	X     []float64
	Color color.Color
}

func (m *marks) glyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: m.Color, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
}

func (m *marks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, x := range m.X {
		c.DrawGlyph(m.glyph(), vg.Point{X: trX(x), Y: c.Min.Y + vg.Points(5)})
	}
}

func (m *marks) Thumbnail(c *draw.Canvas) { c.DrawGlyph(m.glyph(), c.Center()) }

// strip draws samples as dots spread sideways around an x position, with
// the center and its interval as a bar beside them.
type strip struct {
	X       float64
	Samples []float64
	Center  float64
	Low     float64
	High    float64
	Color   color.Color
	Shape   draw.GlyphDrawer
}

func (s *strip) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x := trX(s.X)
	gs := draw.GlyphStyle{Color: s.Color, Radius: vg.Points(2.4), Shape: s.Shape}
	n := len(s.Samples)
	width := vg.Points(14)
	for i, v := range s.Samples {
		// A deterministic spread: the samples in their recorded order,
		// evenly across the strip, so a figure never changes between
		// two builds.
		off := vg.Length(0)
		if n > 1 {
			off = width * vg.Length(float64(i)/float64(n-1)-0.5)
		}
		c.DrawGlyph(gs, vg.Point{X: x + off, Y: trY(v)})
	}
	if math.IsNaN(s.Center) {
		return
	}
	bx := x + width/2 + vg.Points(7)
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(1.1)}
	if !math.IsNaN(s.Low) && !math.IsNaN(s.High) {
		c.StrokeLine2(ls, bx, trY(s.Low), bx, trY(s.High))
		c.StrokeLine2(ls, bx-vg.Points(3), trY(s.Low), bx+vg.Points(3), trY(s.Low))
		c.StrokeLine2(ls, bx-vg.Points(3), trY(s.High), bx+vg.Points(3), trY(s.High))
	}
	c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(2)}, bx-vg.Points(5), trY(s.Center), bx+vg.Points(5), trY(s.Center))
}

func (s *strip) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, v := range append(append([]float64(nil), s.Samples...), s.Center, s.Low, s.High) {
		if !math.IsNaN(v) {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	return s.X - 0.5, s.X + 0.5, ymin, ymax
}

func (s *strip) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: s.Color, Radius: vg.Points(2.6), Shape: s.Shape}, c.Center())
}

// fitY sets the y axis of a plot of the series pts: a rate's interval
// computed on the log scale (never below 0: the mean times exp(∓ the
// relative half-width)); for values that cannot be negative, an axis
// clipped at 0 and bars cut there; a log axis when the values span 100×
// or more, which a linear axis flattens. It changes the points in place,
// before the plot draws them.
func fitY(p *plot.Plot, unit string, pts [][]point) {
	rate := strings.HasSuffix(unit, "/s")
	lo, hi := math.Inf(1), math.Inf(-1)
	nonNeg, positive := true, true
	for _, ps := range pts {
		for i := range ps {
			pt := &ps[i]
			if math.IsNaN(pt.Y) {
				continue
			}
			if rate && pt.Y > 0 && !math.IsNaN(pt.Low) && !math.IsNaN(pt.High) {
				rel := (pt.High - pt.Low) / 2 / pt.Y
				pt.Low, pt.High = pt.Y*math.Exp(-rel), pt.Y*math.Exp(rel)
			}
			nonNeg = nonNeg && pt.Y >= 0
			positive = positive && pt.Y > 0
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
	}
	if math.IsInf(lo, 0) {
		padY(p)
		return
	}
	if positive && hi/lo >= 100 {
		// A log axis over the values; an interval reaching below the
		// axis is cut at its bottom.
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = inRange{plot.LogTicks{Prec: -1}}
		// gonum centres the axis label at the arithmetic middle of the
		// range, high up a log axis, and shrinks the plot to fit it
		// there: the label ends at the top instead.
		p.Y.Label.Position = draw.PosTop
		p.Y.Min, p.Y.Max = lo/math.Pow(hi/lo, 0.08), hi*math.Pow(hi/lo, 0.1)
		for _, ps := range pts {
			for i := range ps {
				pt := &ps[i]
				if !math.IsNaN(pt.Low) && pt.Low < p.Y.Min {
					pt.Low = p.Y.Min
				}
				if !math.IsNaN(pt.High) && pt.High > p.Y.Max {
					pt.High = p.Y.Max
				}
			}
		}
		return
	}
	ymin, ymax := lo, hi
	for _, ps := range pts {
		for i := range ps {
			pt := &ps[i]
			if nonNeg && !math.IsNaN(pt.Low) && pt.Low < 0 {
				pt.Low = 0
			}
			for _, y := range []float64{pt.Low, pt.High} {
				if !math.IsNaN(y) {
					ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
				}
			}
		}
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	padY(p)
	if nonNeg && p.Y.Min < 0 {
		p.Y.Min = 0
	}
}

// inRange keeps a ticker's ticks within the axis: gonum's log ticks run
// to the next power of ten, and the plot shrinks to make room for a label
// outside its range.
type inRange struct{ plot.Ticker }

func (r inRange) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range r.Ticker.Ticks(min, max) {
		if t.Value >= min && t.Value <= max {
			out = append(out, t)
		}
	}
	return out
}

// padY widens the y range by a margin, so points and bars do not sit on
// the frame, and keeps a zero baseline in view when the data is near it.
func padY(p *plot.Plot) {
	lo, hi := p.Y.Min, p.Y.Max
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		p.Y.Min, p.Y.Max = 0, 1
		return
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.1, 1)
	}
	// The legend is drawn beside the data area (drawPlot): no room above
	// the data for it.
	p.Y.Min = lo - span*0.12
	p.Y.Max = hi + span*0.08
	if lo >= 0 && p.Y.Min < 0 {
		p.Y.Min = 0
	}
}

// dateTicks label a time axis (Unix seconds) at round UTC times: hours,
// days, weeks, months or years, whichever gives a handful of ticks.
type dateTicks struct{}

func (dateTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := time.Unix(int64(math.Floor(min)), 0).UTC(), time.Unix(int64(math.Ceil(max)), 0).UTC()
	span := hi.Sub(lo)
	type step struct {
		d      time.Duration
		months int
		format string
	}
	steps := []step{
		{time.Second, 0, "15:04:05"}, {5 * time.Second, 0, "15:04:05"}, {15 * time.Second, 0, "15:04:05"},
		{30 * time.Second, 0, "15:04:05"}, {time.Minute, 0, "15:04"}, {2 * time.Minute, 0, "15:04"},
		{5 * time.Minute, 0, "15:04"}, {10 * time.Minute, 0, "15:04"}, {15 * time.Minute, 0, "15:04"},
		{30 * time.Minute, 0, "01-02 15:04"},
		{time.Hour, 0, "01-02 15:04"}, {3 * time.Hour, 0, "01-02 15:04"}, {6 * time.Hour, 0, "01-02 15:04"},
		{12 * time.Hour, 0, "01-02 15:04"}, {24 * time.Hour, 0, "2006-01-02"}, {2 * 24 * time.Hour, 0, "2006-01-02"},
		{7 * 24 * time.Hour, 0, "2006-01-02"}, {14 * 24 * time.Hour, 0, "2006-01-02"},
		{0, 1, "2006-01"}, {0, 2, "2006-01"}, {0, 3, "2006-01"}, {0, 6, "2006-01"}, {0, 12, "2006"}, {0, 24, "2006"},
	}
	pick := steps[len(steps)-1]
	for _, st := range steps {
		d := st.d
		if st.months > 0 {
			d = time.Duration(st.months) * 30 * 24 * time.Hour
		}
		if span/d <= 7 {
			pick = st
			break
		}
	}
	var t time.Time
	if pick.months == 0 {
		t = lo.Truncate(pick.d)
		if pick.d >= 7*24*time.Hour { // weeks start on Monday
			t = time.Date(lo.Year(), lo.Month(), lo.Day(), 0, 0, 0, 0, time.UTC)
			for t.Weekday() != time.Monday {
				t = t.AddDate(0, 0, -1)
			}
		}
	} else {
		m := (int(lo.Month()) - 1) / pick.months * pick.months
		t = time.Date(lo.Year(), time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
	}
	var out []plot.Tick
	for i := 0; i < 100; i++ {
		if !t.Before(lo) && !t.After(hi) {
			out = append(out, plot.Tick{Value: float64(t.Unix()), Label: t.Format(pick.format)})
		}
		if t.After(hi) {
			break
		}
		if pick.months == 0 {
			t = t.Add(pick.d)
		} else {
			t = t.AddDate(0, pick.months, 0)
		}
	}
	return out
}

// slantTicks turns the x tick labels when there are many, so that long
// point names do not run into each other.
func slantTicks(p *plot.Plot, n int) {
	if n <= 6 {
		return
	}
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
}

// nominalTicks labels integer x positions with names.
type nominalTicks []string

func (n nominalTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for i, s := range n {
		if float64(i) >= min && float64(i) <= max {
			out = append(out, plot.Tick{Value: float64(i), Label: s})
		}
	}
	return out
}

// valueTicks are the swept values themselves, when there are few.
type valueTicks []float64

func (v valueTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, x := range v {
		out = append(out, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
	}
	return out
}

// readableTicks are gonum's default ticks labelled with the fewest
// decimals that tell every two major ticks apart (the default format
// labels 15.9, 16.0 and 16.1 all "16").
type readableTicks struct{}

func (readableTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for prec := 0; prec <= 8; prec++ {
		seen := map[string]bool{}
		ok := true
		for _, t := range ts {
			if t.Label == "" {
				continue
			}
			l := strconv.FormatFloat(t.Value, 'f', prec, 64)
			if seen[l] {
				ok = false
				break
			}
			seen[l] = true
		}
		if ok {
			for i := range ts {
				if ts[i].Label != "" {
					ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', prec, 64)
				}
			}
			return ts
		}
	}
	return ts
}
