package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"strings"
)

// frame is what every page's layout gets.
type frame struct {
	Title string
	// Home links to the index; "" for a page outside a site.
	Home    string
	Version string
	Body    any
}

// render executes one page's template inside the layout.
func render(name string, opts Options, title, home string, body any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64 << 10)
	if err := pages.ExecuteTemplate(&buf, name, frame{Title: title, Home: home, Version: opts.Version, Body: body}); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", title, err)
	}
	return buf.Bytes(), nil
}

// rowsHTML writes the run table's rows, the bulk of a long history's
// page, directly: through the template engine's reflection they were a
// fifth of the build's CPU. Every text is escaped as html/template would,
// and the bytes are the same.
func rowsHTML(p *experimentPage) template.HTML {
	var b strings.Builder
	b.Grow(len(p.Rows) * 160)
	esc := html.EscapeString
	for _, r := range p.Rows {
		b.WriteString("<tr")
		if r.Status != "ok" {
			b.WriteString(` class="notok"`)
		}
		b.WriteString("><td>" + esc(r.Date) + "<td>" + esc(r.ID))
		if p.HasPoint {
			b.WriteString("<td>" + esc(r.Point))
		}
		if p.HasRig {
			b.WriteString("<td>" + esc(r.Rig))
		}
		class := "bad"
		if r.Status == "ok" {
			class = "ok"
		}
		b.WriteString("<td>" + esc(r.Commit) + `<td class="` + class + `">` + esc(r.Status))
		if r.Error != "" {
			b.WriteString(`<div class="err">` + esc(r.Error) + "</div>")
		}
		if r.Drift != "" {
			b.WriteString(`<div class="drift">▲ ` + esc(r.Drift) + "</div>")
		}
		for _, c := range r.Cells {
			b.WriteString("<td>" + esc(c.Value) + "<td>" + esc(c.N))
		}
		b.WriteString("</tr>\n")
	}
	return template.HTML(b.String())
}

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"statusClass": func(s string) string {
		if s == "ok" {
			return "ok"
		}
		return "bad"
	},
}).Parse(layout + indexTmpl + experimentTmpl + sweepTmpl + diffTmpl))

// The style sheet: system fonts only, nothing fetched.
const style = `
:root{color-scheme:light;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg2:#f6f8fa;--ok:#1a7f37;--bad:#cf222e;--drift:#6e7781}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1400px;padding:1rem 1.5rem 3rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif;color:var(--fg);background:#fff}
h1{font-size:1.5rem;margin:.6rem 0 .3rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}
a{color:#0969da}nav{font-size:.9rem;color:var(--muted)}nav a{margin-right:.8rem}
.summary{color:var(--muted);margin:.2rem 0 1rem}
table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0 1rem;width:100%}
caption{text-align:left;color:var(--muted);padding:.2rem 0;caption-side:top}
th,td{border-bottom:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:var(--bg2);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fafbfc}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,monospace;font-size:.82rem}
.status,td.ok,td.bad{font-weight:600}.status.ok,td.ok{color:var(--ok)}.status.bad,td.bad{color:var(--bad)}
table.runs td:nth-child(2){font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,monospace;font-size:.82rem}
tr.notok td{background:#fff5f5}
.drift{color:var(--drift);font-size:.8rem}
.err{color:var(--bad);font-size:.8rem}
.better{color:var(--ok);font-weight:600}.worse{color:var(--bad);font-weight:600}.changed{font-weight:600}
.wide{overflow-x:auto}
td.mono,td.nowrap,.nowrap{white-space:nowrap}
table.cfg td.mono{white-space:normal;overflow-wrap:anywhere}
.cols>section{min-width:0}
figure{margin:.5rem 0 1.2rem}figcaption{color:var(--muted);font-size:.85rem}
svg.plot{width:100%;height:auto;max-width:960px;display:block}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.7fr);gap:1.5rem;align-items:start}
@media (max-width:900px){.cols{grid-template-columns:1fr}}
.warn li{color:#9a6700}
footer{margin-top:2rem;color:var(--muted);font-size:.8rem}
`

const layout = `{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>` + style + `</style>
</head>
<body>
{{if .Home}}<nav><a href="{{.Home}}">← all experiments</a></nav>{{end}}
<main>
{{end}}
{{define "foot"}}</main>
<footer>Made by rigor{{if .Version}} {{.Version}}{{end}}. Intervals are 95% Student-t intervals of the mean unless a table says otherwise; a plot's values are in the table beside it.</footer>
</body>
</html>
{{end}}
{{define "figure"}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}
`

const indexTmpl = `{{define "index.html"}}{{template "head" .}}{{with .Body}}
<h1>{{.Title}}</h1>
<p class="summary">{{len .Rows}} {{plural (len .Rows) "experiment" "experiments"}}, {{.Runs}} recorded {{plural .Runs "run" "runs"}}. The headline metric is the latest ok run's (for a sweep, the best point's), its mean with a 95% interval; ▲ counts the runs where the lock, the rig or the spec drifted.</p>
<table>
<caption>Experiments</caption>
<thead><tr><th scope="col">experiment</th><th scope="col" class="num">runs</th><th scope="col">last run</th><th scope="col">status</th><th scope="col">headline metric</th><th scope="col">drift</th><th scope="col">latest vs previous</th></tr></thead>
<tbody>
{{range .Rows}}<tr>
<td><a href="{{.Href}}">{{.ID}}</a>{{if .SweepHref}} · <a href="{{.SweepHref}}">sweep of {{.Points}} points</a>{{end}}</td>
<td class="num">{{.Runs}}{{if .Failed}} <span class="err">({{.Failed}} not ok)</span>{{end}}</td>
<td class="num">{{.Last}}</td>
<td><span class="status {{statusClass .LastStatus}}">{{.LastStatus}}</span></td>
<td>{{with .Headline}}<span class="mono">{{.Metric}}</span> {{if .Best}}best at {{.Point}}: {{end}}<strong>{{.Value}}</strong> {{.Unit}} {{.CI}} <span class="drift">n={{.N}}</span>{{else}}–{{end}}</td>
<td>{{if .Drifts}}<span class="drift nowrap" title="{{.DriftTitle}}">▲ {{.Drifts}}, last {{.LastDrift}}</span>{{else}}–{{end}}</td>
<td>{{if .DiffHref}}<a href="{{.DiffHref}}">diff</a>{{if .Better}} <span class="better">{{.Better}} better</span>{{end}}{{if .Worse}} <span class="worse">{{.Worse}} worse</span>{{end}}{{else}}–{{end}}</td>
</tr>
{{end}}</tbody>
</table>
{{end}}{{template "foot" .}}{{end}}
`

const experimentTmpl = `{{define "experiment.html"}}{{template "head" .}}{{with .Body}}
<h1>{{.ID}}</h1>
<p class="summary">{{.Summary}}{{if .SweepHref}} · <a href="{{.SweepHref}}">sweep</a>{{end}}{{if .DiffHref}} · <a href="{{.DiffHref}}">latest against previous run</a>{{end}}</p>
{{with .Quality}}<h2 id="quality">Speed and quality</h2>
{{if .Figure.SVG}}{{template "figure" .Figure}}{{else}}<p>{{.Caption}}</p>{{end}}
<div class="wide"><table class="quality">
<caption>Each point's latest ok run (the run diff takes): <span class="mono">{{.Metric}}</span> with its 95% interval, the mean KL divergence from the baseline with its 95% interval, its 99th percentile, how often the top token is the baseline's, the perplexity ratio; pareto marks the front.{{if .NotDrawn}} {{.NotDrawn}}{{end}}</caption>
<thead><tr><th scope="col">point</th><th scope="col">run</th><th scope="col" class="num">{{.Metric}}{{if .Unit}} ({{.Unit}}){{end}}</th><th scope="col" class="num">n</th><th scope="col" class="num">mean KLD</th><th scope="col" class="num">KLD 99%</th><th scope="col" class="num">same top</th><th scope="col" class="num">PPL ratio</th><th scope="col">front</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Point}}{{if .Baseline}} <span class="drift">(baseline)</span>{{end}}<td class="mono">{{.Run}}<td class="num">{{.Speed}}<td class="num">{{.SpeedN}}<td class="num">{{.KLD}}<td class="num">{{.KLD99}}<td class="num">{{.SameTop}}<td class="num">{{.PPLRatio}}<td>{{if .Pareto}}<strong>pareto</strong>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}
{{range .Figures}}{{template "figure" .}}{{end}}{{if not .Figures}}<p>No run recorded a metric to plot: the table of runs below says how each ended.</p>{{end}}
{{with .ByCommit}}<h2 id="commits">By engine commit</h2>
{{range .Figures}}{{template "figure" .}}{{end}}
<style>table.commits td:nth-child(n+{{if .HasPoint}}5{{else}}4{{end}}){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}</style>
<div class="wide"><table class="commits">
<caption>The ok runs of each engine commit pooled, in the order the commits were first run: each metric's mean with its 95% interval and the number of samples.</caption>
<thead><tr><th scope="col">commit</th><th scope="col">first run</th>{{if .HasPoint}}<th scope="col">point</th>{{end}}<th scope="col" class="num">ok runs</th>{{range .Columns}}<th scope="col" class="num">{{.}}</th><th scope="col" class="num">n</th>{{end}}</tr></thead>
<tbody>
{{$hp := .HasPoint}}{{range .Rows}}<tr><td class="mono">{{.Commit}}<td>{{.First}}{{if $hp}}<td>{{.Point}}{{end}}<td>{{.Runs}}{{range .Cells}}<td>{{.Value}}<td>{{.N}}{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}
<h2 id="runs">Runs</h2>
<style>table.runs td:nth-child(n+{{.NumFrom}}){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}table.runs td{white-space:nowrap}table.runs td div{white-space:normal;min-width:16rem}</style>
<div class="wide"><table class="runs">
<caption>Every run, oldest first: each metric's mean with its 95% interval and the number of samples; ▲ marks what drifted since the run before.</caption>
<thead><tr><th scope="col">date (UTC)</th><th scope="col">run</th>{{if .HasPoint}}<th scope="col">point</th>{{end}}{{if .HasRig}}<th scope="col">rig</th>{{end}}<th scope="col">commit</th><th scope="col">status</th>{{range .Columns}}<th scope="col" class="num">{{.}}</th><th scope="col" class="num">n</th>{{end}}</tr></thead>
<tbody>
{{.RowsHTML}}</tbody>
</table></div>
{{if .More}}<p class="summary">Not shown: {{range $i, $m := .More}}{{if $i}}, {{end}}<span class="mono">{{$m}}</span>{{end}} ('rigor log --json' has them).</p>{{end}}
{{end}}{{template "foot" .}}{{end}}
`

const sweepTmpl = `{{define "sweep.html"}}{{template "head" .}}{{with .Body}}
<h1>{{.ID}}: sweep</h1>
<p class="summary">{{.Summary}} · <a href="{{.ExperimentHref}}">runs over time</a></p>
{{range .Figures}}{{template "figure" .}}{{end}}
<h2 id="points">Points</h2>
<style>table.points td:nth-child(n+{{.NumFrom}}){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}</style>
<div class="wide"><table class="points">
<caption>The latest ok run of each point: each metric's mean with its 95% interval and the number of samples.</caption>
<thead><tr><th scope="col">point</th>{{range .Axes}}<th scope="col">{{.}}</th>{{end}}<th scope="col">run</th><th scope="col">date (UTC)</th><th scope="col">status</th>{{range .Columns}}<th scope="col" class="num">{{.}}</th><th scope="col" class="num">n</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if ne .Status "ok"}} class="notok"{{end}}><td>{{.Point}}{{range .Values}}<td>{{.}}{{end}}<td>{{.Run}}<td>{{.Date}}<td class="{{statusClass .Status}}">{{.Status}}{{range .Cells}}<td>{{.Value}}<td>{{.N}}{{end}}</tr>
{{end}}</tbody>
</table></div>
{{if .More}}<p class="summary">Not shown: {{range $i, $m := .More}}{{if $i}}, {{end}}<span class="mono">{{$m}}</span>{{end}}.</p>{{end}}
{{end}}{{template "foot" .}}{{end}}
`

const diffTmpl = `{{define "diff.html"}}{{template "head" .}}{{with .Body}}
<h1>{{.Title}}</h1>
<p class="summary"><strong>A:</strong> {{.A}}<br><strong>B:</strong> {{.B}}{{if .ExperimentHref}}<br><a href="{{.ExperimentHref}}">runs over time</a>{{end}}</p>
<div class="cols">
<section>
<h2>Configuration</h2>
{{if .Config}}<table class="cfg">
<caption>What differs between the sides' latest runs (spec, lock, rig).</caption>
<thead><tr><th scope="col">field</th><th scope="col">A</th><th scope="col">B</th></tr></thead>
<tbody>
{{range .Config}}<tr><td class="mono">{{.Path}}{{if .Points}} <span class="drift">({{.Points}})</span>{{end}}</td><td class="mono">{{.Old}}</td><td class="mono">{{.New}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>No differences.</p>{{end}}
</section>
<section>
<h2>Metrics</h2>
{{range .Tables}}
<div class="wide"><table>
<caption><span class="mono">{{.Metric}}</span>: {{.Caption}}</caption>
<thead><tr>{{if not .Single}}<th scope="col">point</th>{{end}}<th scope="col" class="num">A</th><th scope="col" class="num">n</th><th scope="col" class="num">B</th><th scope="col" class="num">n</th><th scope="col" class="num">delta</th><th scope="col" class="num">p</th>{{if .Holm}}<th scope="col" class="num">p (Holm)</th>{{end}}<th scope="col" class="num">welch p</th><th scope="col">verdict</th></tr></thead>
<tbody>
{{$t := .}}{{range .Rows}}<tr>{{if not $t.Single}}<td>{{.Point}}</td>{{end}}<td class="num">{{.A}}</td><td class="num">{{.AN}}</td><td class="num">{{.B}}</td><td class="num">{{.BN}}</td><td class="num">{{.Delta}}</td>{{if .Geomean}}<td></td>{{if $t.Holm}}<td></td>{{end}}<td></td><td></td>{{else}}<td class="num">{{.P}}</td>{{if $t.Holm}}<td class="num">{{.PHolm}}</td>{{end}}<td class="num">{{.WelchP}}</td><td class="{{.Class}}">{{.Verdict}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}
</section>
</div>
{{if .Untested}}<p class="untested">{{.Untested}}</p>{{end}}
{{if or .OnlyA .OnlyB}}<p>{{if .OnlyA}}Only in A: {{.OnlyA}}. {{end}}{{if .OnlyB}}Only in B: {{.OnlyB}}.{{end}}</p>{{end}}
<h2>Samples</h2>
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>{{end}}
{{range .Tables}}{{with .Figure}}{{template "figure" .}}{{end}}{{end}}
{{if .Warnings}}<h2>Warnings</h2>
<ul class="warn">{{range .Warnings}}<li>{{.}}</li>
{{end}}</ul>{{end}}
{{end}}{{template "foot" .}}{{end}}
`
