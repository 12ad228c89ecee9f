package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The picture's layout, in pixels.
const (
	columns     = 2
	chartWidth  = 480
	chartHeight = 210
	headerH     = 64
	plotLeft    = 62 // within a chart: the y axis's labels
	plotRight   = 14
	plotTop     = 46 // the title and the legend
	plotBottom  = 24 // the x axis's labels
)

// line is one series of a panel, a value per sample (NaN: none).
type line struct {
	name   string
	color  string
	dashed bool
	values []float64
}

// draw renders the panels of rec as an SVG. It fails if a panel reads a
// series the scrapes do not have: a name the bridge no longer exports.
func draw(rec *recording, panels []panel) ([]byte, error) {
	if len(rec.samples) < 2 {
		return nil, fmt.Errorf("%d scrapes: too few to draw", len(rec.samples))
	}
	last := rec.samples[len(rec.samples)-1]
	for _, p := range panels {
		for _, m := range p.metrics {
			if !last.has(m) {
				return nil, fmt.Errorf("panel %q: no series %s in the scrapes", p.title, m)
			}
		}
	}
	rows := (len(panels) + columns - 1) / columns
	width, height := columns*chartWidth, headerH+rows*chartHeight
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="12" y="20" font-size="15" font-weight="bold">%s</text>`+"\n",
		escape("analytics-go dashboard (otelmetrics/dashboard/analytics-go.json): its main panels over a real run"))
	var phases []string
	for _, ph := range rec.script.phases {
		phases = append(phases, fmt.Sprintf("%s from %v to %v", ph.label, ph.from, ph.to))
	}
	for i, text := range []string{
		fmt.Sprintf("%d events/s into one client with a spool, through the otelmetrics bridge and the Prometheus exporter; a scrape every %v, rates and quantiles over %v.",
			rec.script.rate, rec.script.step, rec.script.window),
		fmt.Sprintf("The mock tracking API answers %s (shaded), 200 otherwise.", strings.Join(phases, ", ")),
	} {
		fmt.Fprintf(&b, `<text x="12" y="%d" fill="#555">%s</text>`+"\n", 38+i*15, escape(text))
	}
	for n, p := range panels {
		x, y := (n%columns)*chartWidth, headerH+(n/columns)*chartHeight
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", x, y)
		drawPanel(&b, rec, p)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// lines evaluates p over every sample.
func (p panel) lines(rec *recording) []line {
	byName := map[string]*line{}
	var names []string
	for i := range rec.samples {
		for name, v := range p.values(rec, i) {
			l := byName[name]
			if l == nil {
				l = &line{name: name, dashed: slices.Contains(p.dashed, name), values: make([]float64, len(rec.samples))}
				for k := range l.values {
					l.values[k] = math.NaN()
				}
				byName[name] = l
				names = append(names, name)
			}
			l.values[i] = v
		}
	}
	slices.Sort(names)
	var out []line
	for _, name := range names {
		l := byName[name]
		if p.nonZero && !slices.ContainsFunc(l.values, func(v float64) bool { return v > 0 }) {
			continue
		}
		l.color = cmp.Or(colors[name], p.colors[name])
		if l.color == "" {
			l.color = palette[len(out)%len(palette)]
		}
		out = append(out, *l)
	}
	return out
}

func drawPanel(b *bytes.Buffer, rec *recording, p panel) {
	pw, ph := float64(chartWidth-plotLeft-plotRight), float64(chartHeight-plotTop-plotBottom)
	fmt.Fprintf(b, `<text x="10" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", escape(p.title))
	if p.unit != "" {
		fmt.Fprintf(b, `<text x="%d" y="18" text-anchor="end" fill="#555">%s</text>`+"\n", chartWidth-plotRight, escape(p.unit))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#ddd"/>`+"\n", plotLeft, plotTop, pw, ph)

	total := rec.script.total.Seconds()
	px := func(sec float64) float64 { return plotLeft + pw*sec/total }
	for _, phase := range rec.script.phases { // shaded where the API fails
		x0, x1 := px(phase.from.Seconds()), px(phase.to.Seconds())
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#f2495c" fill-opacity="0.10"/>`+"\n", x0, plotTop, max(x1-x0, 1), ph)
		if x1-x0 > 40 {
			fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#c4162a" font-size="10">%s</text>`+"\n", x0+3, plotTop+11, escape(phase.label))
		}
	}
	for s := 0.0; s <= total; s += 5 { // the x axis
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g s</text>`+"\n", px(s), chartHeight-plotBottom+14, s)
	}

	if p.states {
		drawStates(b, rec, p, px, ph)
		return
	}
	lines := p.lines(rec)
	scale := newScale(lines, p.unit, p.log)
	py := func(v float64) float64 { return plotTop + ph*(1-scale.at(v)) }
	for _, t := range scale.ticks {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", plotLeft, plotLeft+pw, y, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", plotLeft-4, y+4, escape(format(t, p.unit)))
	}

	legendX := 10.0
	for _, l := range lines {
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="31" y2="31" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, legendX+14, l.color, dash)
		fmt.Fprintf(b, `<text x="%.0f" y="35">%s</text>`+"\n", legendX+18, escape(l.name))
		legendX += 32 + 6.4*float64(len(l.name))

		var points []string
		flush := func() {
			if len(points) > 1 {
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", l.color, dash, strings.Join(points, " "))
			}
			points = points[:0]
		}
		for i, v := range l.values {
			if math.IsNaN(v) || math.IsInf(v, 0) || p.log && v <= 0 {
				flush()
				continue
			}
			points = append(points, fmt.Sprintf("%.0f,%.0f", px(rec.samples[i].at.Seconds()), py(v)))
		}
		flush()
	}
}

// drawStates draws a state timeline: a band, colored by the state.
func drawStates(b *bytes.Buffer, rec *recording, p panel, px func(float64) float64, ph float64) {
	legendX := 10.0
	for i, name := range stateNames {
		fmt.Fprintf(b, `<rect x="%.0f" y="26" width="12" height="9" fill="%s"/>`+"\n", legendX, stateColors[i])
		fmt.Fprintf(b, `<text x="%.0f" y="35">%s</text>`+"\n", legendX+16, name)
		legendX += 32 + 6.4*float64(len(name))
	}
	for _, l := range p.lines(rec) {
		y, h := plotTop+ph*0.25, ph*0.5
		fmt.Fprintf(b, `<text x="%d" y="%.0f" text-anchor="end" fill="#555">%s</text>`+"\n", plotLeft-4, y+h/2+4, escape(l.name))
		from := 0
		for i := 1; i <= len(l.values); i++ {
			if i < len(l.values) && l.values[i] == l.values[from] {
				continue
			}
			if s := int(l.values[from]); s >= 0 && s < len(stateColors) {
				x0 := px(rec.samples[from].at.Seconds())
				x1 := px(rec.samples[min(i, len(l.values)-1)].at.Seconds())
				fmt.Fprintf(b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n", x0, y, max(x1-x0, 1), h, stateColors[s])
			}
			from = i
		}
	}
}

// scale maps values to [0, 1] of a plot's height.
type scale struct {
	lo, hi float64 // linear; log10 of them for a log scale
	log    bool
	ticks  []float64
}

func (s scale) at(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	return (v - s.lo) / (s.hi - s.lo)
}

// newScale fits the lines: from 0 to a round value above them, or whole
// decades for a log scale.
func newScale(lines []line, unit string, log bool) scale {
	lo, hi := math.Inf(1), 0.0
	for _, l := range lines {
		for _, v := range l.values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if log {
		if hi == 0 {
			lo, hi = 0.01, 1
		}
		s := scale{lo: math.Floor(math.Log10(lo)), hi: math.Ceil(math.Log10(hi)), log: true}
		if s.hi == s.lo {
			s.hi++
		}
		for d := s.lo; d <= s.hi; d++ {
			s.ticks = append(s.ticks, math.Pow(10, d))
		}
		return s
	}
	if hi == 0 {
		hi = 1
	}
	step := niceStep(hi/4, unit == "bytes")
	s := scale{lo: 0, hi: math.Ceil(hi*1.02/step) * step}
	for t := 0.0; t <= s.hi+step/2; t += step {
		s.ticks = append(s.ticks, t)
	}
	return s
}

// niceStep is the round step at or above x: 1, 2, 2.5 or 5 times a power
// of ten, or a power of two for bytes.
func niceStep(x float64, binary bool) float64 {
	if binary {
		return math.Pow(2, math.Ceil(math.Log2(x)))
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*0.999 {
			return m * p
		}
	}
	return 10 * p
}

// format is a tick's label in the unit: KiB and MiB for bytes, ms or s
// for seconds, k and M for counts.
func format(v float64, unit string) string {
	short := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case v == 0:
		return "0"
	case unit == "bytes":
		for _, u := range []struct {
			size float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if v >= u.size {
				return short(math.Round(v/u.size*100)/100) + " " + u.name
			}
		}
		return short(v) + " B"
	case unit == "s" && v < 1:
		return short(math.Round(v*1e5)/100) + " ms"
	case unit == "s":
		return short(v) + " s"
	case v >= 1e6:
		return short(math.Round(v/1e4)/100) + "M"
	case v >= 1e3:
		return short(math.Round(v/10)/100) + "k"
	}
	return short(math.Round(v*1000) / 1000)
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
