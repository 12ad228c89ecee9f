package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

// The Grafana dashboard of the module, over the Prometheus names this
// example serves: its tests are here, beside the example's scrape.
const dashboardFile = "../dashboard/analytics-go.json"

// metricsDoc says what the dashboard shows, and what to alert on.
const metricsDoc = "../../docs/metrics.md"

// targetLabels are the labels Prometheus gives every series of a target
// it scrapes: they are in no exposition, and the dashboard's variables
// select clients by them.
var targetLabels = []string{"job", "instance"}

// grafanaVariables are Grafana's own variables a query may use.
var grafanaVariables = []string{"__rate_interval", "__interval", "__range"}

// dashboard is what the tests read of Grafana's dashboard JSON.
type dashboard struct {
	Inputs []struct {
		Name, Label, Type string
		PluginID          string `json:"pluginId"`
	} `json:"__inputs"`
	Requires []struct {
		Type, ID, Name, Version string
	} `json:"__requires"`
	ID            json.RawMessage
	UID           string
	Title         string
	SchemaVersion int
	Panels        []panel
	Templating    struct {
		List []templateVariable
	}
}

type panel struct {
	ID          *int
	Type        string
	Title       string
	Description string
	GridPos     *struct{ H, W, X, Y int }
	Datasource  *datasourceRef
	Targets     []struct {
		Datasource   *datasourceRef
		Expr         string
		RefID        string `json:"refId"`
		LegendFormat string
	}
	FieldConfig struct {
		Defaults struct {
			Unit string
		}
		Overrides []struct {
			Matcher struct {
				ID      string
				Options any
			}
		}
	}
	Panels []panel // a collapsed row's
}

type datasourceRef struct {
	Type, UID string
}

type templateVariable struct {
	Name, Type, Label string
	Query             json.RawMessage // a string, or {"query": "..."}
	Definition        string          // the query as Grafana shows it
	Datasource        *datasourceRef
	Current           struct {
		Value any
	}
}

// query is the variable's query: Grafana writes it as a string or as an
// object holding it.
func (v templateVariable) query(t *testing.T) string {
	t.Helper()
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var obj struct{ Query string }
	require.NoError(t, json.Unmarshal(v.Query, &obj), "the query of variable %s", v.Name)
	return obj.Query
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d), "%s is JSON", dashboardFile)
	return d
}

// panels is every panel, those of collapsed rows included.
func (d dashboard) panels() []panel {
	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

// The dashboard is one Grafana imports: the import asks for a Prometheus
// data source (__inputs) and sets the datasource variable, which every
// panel and query uses, to it; it lists what it requires; every panel
// has its own id, a place on the grid that overlaps no other, and
// targets with their refIds.
func TestDashboardImportable(t *testing.T) {
	d := readDashboard(t)
	assert.Equal(t, "null", string(d.ID), "id: null, so that an import makes a new dashboard")
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,40}$`, d.UID, "uid")
	assert.NotEmpty(t, d.Title, "title")
	assert.GreaterOrEqual(t, d.SchemaVersion, 36, "schemaVersion: data sources as {type, uid} (Grafana 9 and later)")

	require.Len(t, d.Inputs, 1, "__inputs: the data source the import asks for")
	input := d.Inputs[0]
	assert.Equal(t, "datasource", input.Type, "the input's type")
	assert.Equal(t, "prometheus", input.PluginID, "the input's plugin")
	assert.Regexp(t, `^DS_[A-Z0-9_]+$`, input.Name, "the input's name")

	// The datasource variable starts as the input, which the import
	// replaces by the data source picked.
	var dsVar string
	vars := map[string]templateVariable{}
	for _, v := range d.Templating.List {
		require.NotContains(t, vars, v.Name, "variable %s twice", v.Name)
		vars[v.Name] = v
		if v.Type == "datasource" {
			require.Empty(t, dsVar, "one datasource variable")
			dsVar = v.Name
			assert.Equal(t, "prometheus", v.query(t), "the datasource variable lists Prometheus data sources")
			assert.Equal(t, "${"+input.Name+"}", v.Current.Value, "the datasource variable starts as the import's input")
		}
	}
	require.NotEmpty(t, dsVar, "a datasource variable")
	wantDS := datasourceRef{Type: "prometheus", UID: "${" + dsVar + "}"}
	for _, name := range targetLabels {
		v, ok := vars[name]
		if assert.True(t, ok, "a variable for the label %s", name) {
			assert.Equal(t, "query", v.Type, "variable %s", name)
			assert.Equal(t, &wantDS, v.Datasource, "the data source of variable %s", name)
		}
	}

	requires := map[string]bool{}
	for _, r := range d.Requires {
		requires[r.Type+"/"+r.ID] = true
	}
	assert.True(t, requires["grafana/grafana"], "__requires: grafana")
	assert.True(t, requires["datasource/prometheus"], "__requires: the prometheus data source")

	ids := map[int]string{}
	var boxes []panel
	used := map[string]bool{}
	for _, p := range d.panels() {
		name := fmt.Sprintf("panel %q", p.Title)
		assert.NotEmpty(t, p.Title, "a panel's title")
		if assert.NotNil(t, p.ID, "%s: an id", name) {
			assert.NotContains(t, ids, *p.ID, "%s: its id %d is %s's too", name, *p.ID, ids[*p.ID])
			ids[*p.ID] = p.Title
		}
		if assert.NotNil(t, p.GridPos, "%s: a gridPos", name) {
			g := p.GridPos
			assert.True(t, g.W >= 1 && g.X >= 0 && g.X+g.W <= 24 && g.H >= 1 && g.Y >= 0,
				"%s: gridPos %+v within the 24 columns", name, *g)
			for _, q := range boxes {
				o := q.GridPos
				overlap := g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H
				assert.False(t, overlap, "%s overlaps panel %q", name, q.Title)
			}
			boxes = append(boxes, p)
		}
		if p.Type == "row" { // a row holds panels, not queries
			assert.Empty(t, p.Targets, "%s: a row has no targets", name)
			continue
		}
		used[p.Type] = true
		assert.NotEmpty(t, p.Description, "%s: a description, what it shows", name)
		assert.NotEmpty(t, p.FieldConfig.Defaults.Unit, "%s: a unit", name)
		assert.Equal(t, &wantDS, p.Datasource, "%s: the datasource variable", name)
		require.NotEmpty(t, p.Targets, "%s: targets", name)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			assert.NotEmpty(t, tg.RefID, "%s: a target's refId", name)
			assert.False(t, refs[tg.RefID], "%s: refId %s twice", name, tg.RefID)
			refs[tg.RefID] = true
			assert.NotEmpty(t, tg.Expr, "%s, target %s: an expr", name, tg.RefID)
			assert.Equal(t, &wantDS, tg.Datasource, "%s, target %s: the datasource variable", name, tg.RefID)
		}
	}
	for typ := range used {
		assert.True(t, requires["panel/"+typ], "__requires lists the panel type %s", typ)
	}
	for key := range requires {
		if typ, ok := strings.CutPrefix(key, "panel/"); ok {
			assert.True(t, used[typ], "__requires lists the panel type %s, which no panel has", typ)
		}
	}
}

// scrapedSeries is the series of a scrape by name: for a histogram
// family F, F_bucket (with le), F_sum and F_count.
type scrapedSeries struct {
	kind   dto.MetricType      // the family's
	labels map[string][]string // label name → the values seen
}

func seriesOf(families map[string]*dto.MetricFamily) map[string]*scrapedSeries {
	series := map[string]*scrapedSeries{}
	add := func(name string, kind dto.MetricType, m *dto.Metric, extra ...string) {
		s := series[name]
		if s == nil {
			s = &scrapedSeries{kind: kind, labels: map[string][]string{}}
			series[name] = s
		}
		for _, l := range m.GetLabel() {
			s.labels[l.GetName()] = append(s.labels[l.GetName()], l.GetValue())
		}
		for _, label := range extra {
			s.labels[label] = append(s.labels[label], "")
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", f.GetType(), m, "le")
				add(name+"_sum", f.GetType(), m)
				add(name+"_count", f.GetType(), m)
			} else {
				add(name, f.GetType(), m)
			}
		}
	}
	return series
}

// dashboardQueries is every PromQL expression the dashboard holds, by
// where it is: each panel's targets, and the variables' label_values
// queries. For those, a label the variable lists is returned with the
// selector it lists it from.
func dashboardQueries(t *testing.T, d dashboard) (panelExprs, varExprs map[string]string, varLabels map[string]string) {
	t.Helper()
	panelExprs, varExprs, varLabels = map[string]string{}, map[string]string{}, map[string]string{}
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			panelExprs[fmt.Sprintf("panel %q, target %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	labelValues := regexp.MustCompile(`^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		assert.Equal(t, v.query(t), v.Definition, "variable %s: the query Grafana shows is the one it runs", v.Name)
		m := labelValues.FindStringSubmatch(v.query(t))
		require.NotNil(t, m, "variable %s: a label_values(selector, label) query, the one kind this test reads", v.Name)
		where := fmt.Sprintf("variable %s", v.Name)
		varExprs[where], varLabels[where] = m[1], m[2]
	}
	return panelExprs, varExprs, varLabels
}

// checkQuery checks what q refers to against the series of a scrape: each
// metric is a series (or a histogram's _bucket, _sum or _count), each
// label of a matcher or of a by/without clause is on each series it
// applies to (or is a target's label), each equality matcher's value is
// one the series has, rate() and increase() go over counters and
// histogram_quantile over buckets kept by le, and every Grafana variable
// is defined.
func checkQuery(t *testing.T, where string, q *promQuery, series map[string]*scrapedSeries, vars []string) {
	t.Helper()
	hasLabel := func(metric, label string) bool {
		s := series[metric]
		return s != nil && (s.labels[label] != nil || slices.Contains(targetLabels, label))
	}
	for _, s := range q.selectors {
		got := series[s.metric]
		if !assert.NotNil(t, got, "%s: %s is no series of the example's /metrics", where, s.metric) {
			continue
		}
		for _, m := range s.matchers {
			assert.True(t, hasLabel(s.metric, m.label), "%s: %s has no label %s", where, s.metric, m.label)
			if m.op == "=" && !strings.Contains(m.value, "$") && got.labels[m.label] != nil {
				assert.Contains(t, got.labels[m.label], m.value, "%s: %s{%s} has no value %q", where, s.metric, m.label, m.value)
			}
		}
	}
	for _, g := range q.groupings {
		for _, metric := range q.metricsIn(g.from, g.to) {
			for _, label := range g.labels {
				assert.True(t, hasLabel(metric, label), "%s: %s (%s) groups %s, which has no label %s", where, g.keyword, label, metric, label)
			}
		}
	}
	for _, c := range q.calls {
		inside := q.metricsIn(c.from, c.to)
		switch c.fn {
		case "rate", "irate", "increase":
			for _, metric := range inside {
				if s := series[metric]; s != nil {
					counter := s.kind == dto.MetricType_COUNTER || s.kind == dto.MetricType_HISTOGRAM
					assert.True(t, counter, "%s: %s over %s, a %s", where, c.fn, metric, s.kind)
				}
			}
		case "histogram_quantile":
			for _, metric := range inside {
				assert.True(t, strings.HasSuffix(metric, "_bucket"), "%s: histogram_quantile over %s", where, metric)
			}
			for _, agg := range q.calls {
				if agg.from > c.from && agg.to < c.to && promAggregations[agg.fn] {
					keeps := agg.grouping >= 0 && q.groupings[agg.grouping].keyword == "by" &&
						slices.Contains(q.groupings[agg.grouping].labels, "le")
					assert.True(t, keeps, "%s: the %s inside histogram_quantile keeps le (by (le, ...))", where, agg.fn)
				}
			}
		}
	}
	for _, v := range q.variables {
		assert.True(t, slices.Contains(vars, v) || slices.Contains(grafanaVariables, v), "%s: the variable $%s is not defined", where, v)
	}
}

// Every query of the dashboard names series that a real scrape of this
// example returns, with their labels and label values, for a client that
// delivered, failed, retried on both paths and has a spool: so a metric,
// a label or a value renamed in the bridge (or in the dashboard) fails
// here. So do the alerts docs/metrics.md proposes. And every series of
// the scrape is on the dashboard.
func TestDashboardQueriesMatchTheScrape(t *testing.T) {
	d := readDashboard(t)
	demo, err := start("127.0.0.1:0", analytics.WithSpool(t.TempDir()))
	require.NoError(t, err, "start")
	defer demo.close()
	require.NoError(t, demo.send(context.Background(), 40), "send")
	st := demo.client.Stats()
	require.Positive(t, st.Delivered, "events delivered")
	require.Positive(t, st.Failed.Total(), "events failed")
	require.Positive(t, st.Retries.Backoff, "backoff retries")
	require.Positive(t, st.Retries.RateLimit, "rate-limit retries")
	require.Positive(t, st.Spool.MaxBytes, "a spool")
	series := seriesOf(scrape(t, demo.metricsURL))

	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	panelExprs, varExprs, varLabels := dashboardQueries(t, d)
	require.NotEmpty(t, panelExprs, "the panels' queries")
	shown := map[string]bool{}
	for where, expr := range panelExprs {
		q, err := parsePromQL(expr)
		if !assert.NoError(t, err, "%s: %s", where, expr) {
			continue
		}
		checkQuery(t, where, q, series, vars)
		// Each selector follows the variables, or the panel would show
		// every client whatever is selected.
		for _, s := range q.selectors {
			shown[s.metric] = true
			for _, label := range targetLabels {
				assert.Contains(t, s.matchers, promMatcher{label, "=~", "$" + label}, "%s: %s selects %s=~\"$%s\"", where, s.metric, label, label)
			}
		}
	}
	for where, expr := range varExprs {
		q, err := parsePromQL(expr)
		if !assert.NoError(t, err, "%s: %s", where, expr) {
			continue
		}
		checkQuery(t, where, q, series, vars)
		for _, metric := range q.metrics() {
			assert.True(t, slices.Contains(targetLabels, varLabels[where]) || series[metric].labels[varLabels[where]] != nil,
				"%s lists the label %s, which %s has not", where, varLabels[where], metric)
		}
	}

	// An override by name styles a series a target draws: its legend,
	// with each value of the label it names.
	legend := regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	for _, p := range d.panels() {
		var names []*regexp.Regexp
		for _, tg := range p.Targets {
			q, err := parsePromQL(tg.Expr)
			if err != nil {
				continue // reported above
			}
			// The legend as a pattern: {{label}} is one of the label's
			// values on the target's series, or any for a target's label.
			pattern := regexp.QuoteMeta(tg.LegendFormat)
			for _, m := range legend.FindAllStringSubmatch(tg.LegendFormat, -1) {
				values := []string{}
				for _, metric := range q.metrics() {
					if s := series[metric]; s != nil {
						for _, v := range s.labels[m[1]] {
							values = append(values, regexp.QuoteMeta(v))
						}
					}
				}
				alt := "(?:" + strings.Join(values, "|") + ")"
				if slices.Contains(targetLabels, m[1]) {
					alt = ".*"
				}
				pattern = strings.Replace(pattern, regexp.QuoteMeta(m[0]), alt, 1)
			}
			names = append(names, regexp.MustCompile("^"+pattern+"$"))
		}
		for _, o := range p.FieldConfig.Overrides {
			if o.Matcher.ID != "byName" {
				continue
			}
			name, _ := o.Matcher.Options.(string)
			drawn := slices.ContainsFunc(names, func(re *regexp.Regexp) bool { return re.MatchString(name) })
			assert.True(t, drawn, "panel %q: an override for %q, a series none of its targets draws", p.Title, name)
		}
	}

	// The alerts docs/metrics.md proposes beside the dashboard: each line
	// of its promql blocks but comments.
	doc, err := os.ReadFile(metricsDoc)
	require.NoError(t, err)
	var alerts int
	for _, block := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		for n, line := range strings.Split(block[1], "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			alerts++
			where := fmt.Sprintf("%s, a promql block's line %d", metricsDoc, n+1)
			q, err := parsePromQL(line)
			if assert.NoError(t, err, "%s: %s", where, line) {
				checkQuery(t, where, q, series, nil)
			}
		}
	}
	assert.NotZero(t, alerts, "%s proposes alerts in promql blocks", metricsDoc)

	// What the dashboard leaves out: target_info is the exporter's
	// resource metadata, not the client's.
	leftOut := []string{"target_info"}
	for name := range series {
		if !slices.Contains(leftOut, name) {
			assert.True(t, shown[name], "%s, a series of the example's /metrics, is on no panel", name)
		}
	}
}
