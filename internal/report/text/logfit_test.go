package text

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare"
)

// TestWriteLogTextFit: rigor log fits the terminal (a ~250-column table in
// issue 31), says what it left out, and --wide (WriteLogText) keeps every
// column.
func TestWriteLogTextFit(t *testing.T) {
	h := compare.Log(historyRuns())
	var wide, fit bytes.Buffer
	if err := WriteLogText(&wide, h, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteLogTextFit(&fit, h, 80); err != nil {
		t.Fatal(err)
	}
	table := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "20") || strings.HasPrefix(l, "date") {
				out = append(out, l)
			}
		}
		return out
	}
	widest := 0
	for _, l := range table(wide.String()) {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	if widest <= 80 {
		t.Fatalf("the wide table is %d columns: the test needs a wider one", widest)
	}
	for _, l := range table(fit.String()) {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("fitted line of %d columns: %s", n, l)
		}
	}
	if !strings.Contains(fit.String(), "left out to fit 80 columns: --wide shows them)") {
		t.Errorf("no note of the columns left out:\n%s", fit.String())
	}
	if !strings.Contains(table(fit.String())[0], "tokSOut") || !strings.Contains(table(fit.String())[0], "status") {
		t.Errorf("the fitted table lost the status or the first metric: %s", table(fit.String())[0])
	}
}
