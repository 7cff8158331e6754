package llamabench

import (
	"encoding/json"
	"strings"
	"testing"
)

func fixtureRows(t *testing.T, name string) []Row {
	t.Helper()
	fx := readFixture(t, name)
	rows, complete, err := ParseJSON(fx.stdout)
	if err != nil || !complete {
		t.Fatalf("ParseJSON(%s): complete %v, error %v", name, complete, err)
	}
	return rows
}

func TestOutCanon(t *testing.T) {
	tests := []struct {
		field string
		in    any
		want  string
	}{
		{"no_kv_offload", "1", "1"},
		{"no_kv_offload", true, "1"},
		{"no_kv_offload", false, "0"},
		{"no_kv_offload", json.Number("0"), "0"},
		{"no_kv_offload", "on", "1"},
		{"no_kv_offload", "2", "2"},
		{"flash_attn", true, "1"},
		{"flash_attn", "on", "1"},
		{"flash_attn", "off", "0"},
		{"flash_attn", "auto", "-1"},
		{"flash_attn", json.Number("-1"), "-1"},
		{"n_ubatch", "016", "16"},
		{"n_ubatch", 16, "16"},
		{"n_ubatch", int64(16), "16"},
		{"n_ubatch", 16.0, "16"},
		{"n_ubatch", json.Number("16"), "16"},
		{"n_ubatch", "abc", "abc"},
		{"tensor_split", "1/1/1/1", "1.00/1.00/1.00/1.00"},
		{"tensor_split", "1.00/1.00/1.00/1.00", "1.00/1.00/1.00/1.00"},
		{"tensor_split", "3;1", "3.00/1.00"},
		{"tensor_split", "1/1/0/0", "1.00/1.00"},
		{"tensor_split", "0", "0.00"},
		{"tensor_split", 0, "0.00"},
		{"tensor_split", "0/0", "0.00"},
		{"tensor_split", "a/b", "a/b"},
		{"type_k", " q8_0 ", "q8_0"},
		{"ser", "-1, 0", "-1,0"},
		{"split_mode", nil, ""},
	}
	for _, tt := range tests {
		if got := outCanon(tt.field, tt.in); got != tt.want {
			t.Errorf("outCanon(%q, %#v) = %q, want %q", tt.field, tt.in, got, tt.want)
		}
	}
}

func TestSplitRows_fixtures(t *testing.T) {
	tests := []struct {
		fixture string
		// points are the sweep's points as flags; each must find a group
		// of rowsPer rows whose fields report the point's values.
		points  []map[string]any
		rowsPer int
	}{
		{"llama.cpp_sweep_ub_t_json", []map[string]any{
			{"ub": 16, "t": 1}, {"ub": 16, "t": 2}, {"ub": "32", "t": "1"}, {"-ub": 32, "-t": 2},
		}, 2},
		{"llama.cpp-cpu_sweep_ub_t_json", []map[string]any{
			{"ub": 16, "t": 1}, {"ub": 16, "t": 2}, {"ub": 32, "t": 1}, {"ub": 32, "t": 2},
		}, 2},
		{"ik_llama.cpp_sweep_ub_t_json", []map[string]any{
			{"ub": 16, "t": 1}, {"ub": 16, "t": 2}, {"ub": 32, "t": 1}, {"ub": 32, "t": 2},
		}, 2},
		// flash_attn is a bool in both of these builds; flags say 0/1/on.
		{"llama.cpp_ctk_q8_fa_json", []map[string]any{
			{"fa": 0, "ctk": "f16"}, {"fa": "1", "ctk": "f16"}, {"fa": "off", "ctk": "q8_0"}, {"fa": true, "ctk": "q8_0"},
		}, 2},
		{"ik_llama.cpp_ctk_q8_fa_json", []map[string]any{
			{"fa": 0, "ctk": "f16"}, {"fa": 1, "ctk": "f16"}, {"fa": 0, "ctk": "q8_0"}, {"fa": 1, "ctk": "q8_0"},
		}, 2},
		{"llama.cpp_nkvo_json", []map[string]any{{"nkvo": 0}, {"nkvo": "1"}}, 2},
		{"ik_llama.cpp_nkvo_json", []map[string]any{{"nkvo": false}, {"nkvo": 1}}, 2},
		{"ik_llama.cpp_ikflags_json", []map[string]any{{"gr": 0}, {"gr": 1}}, 2},
	}
	for _, tt := range tests {
		rows := fixtureRows(t, tt.fixture)
		_, fields, err := FlagKey(tt.points[0])
		if err != nil {
			t.Fatalf("FlagKey(%v): %v", tt.points[0], err)
		}
		groups := SplitRows(rows, fields)
		if len(groups) != len(tt.points) {
			t.Errorf("SplitRows(%s, %v): got %d groups, want %d", tt.fixture, fields, len(groups), len(tt.points))
		}
		total := 0
		for _, p := range tt.points {
			key, _, err := FlagKey(p)
			if err != nil {
				t.Fatalf("FlagKey(%v): %v", p, err)
			}
			g, ok := groups[key]
			if !ok {
				t.Errorf("%s: point %v (key %q) has no group among %v", tt.fixture, p, key, groupKeys(groups))
				continue
			}
			if g.Key != key || len(g.Rows) != tt.rowsPer {
				t.Errorf("%s: point %v: group %q has %d rows, want key %q and %d rows", tt.fixture, p, g.Key, len(g.Rows), key, tt.rowsPer)
			}
			total += len(g.Rows)
			if err := VerifyRows(g.Rows, p); err != nil {
				t.Errorf("%s: point %v: VerifyRows: %v", tt.fixture, p, err)
			}
			for f, v := range g.Values {
				if f == "" || v == "" {
					t.Errorf("%s: group %q: empty field or value in %v", tt.fixture, g.Key, g.Values)
				}
			}
		}
		if total != len(rows) {
			t.Errorf("%s: the points' groups hold %d rows, want all %d", tt.fixture, total, len(rows))
		}
	}
}

func groupKeys(groups map[string]RowGroup) []string {
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	return keys
}

func TestSplitRows_missingField(t *testing.T) {
	rows := fixtureRows(t, "llama.cpp_pp32_tg16_r2_json") // mainline: no mla_attn
	groups := SplitRows(rows, []string{"mla_attn", "n_ubatch", "mla_attn"})
	g, ok := groups["mla_attn=,n_ubatch=512"]
	if len(groups) != 1 || !ok || len(g.Rows) != 2 {
		t.Errorf("SplitRows on a missing field = %v, want one group \"mla_attn=,n_ubatch=512\" of 2 rows", groupKeys(groups))
	}
	if key, _, _ := FlagKey(map[string]any{"mla": 0, "ub": 512}); groups[key].Rows != nil {
		t.Errorf("point key %q found the rows of a fork without the field", key)
	}
}

func TestFlagKey(t *testing.T) {
	key, fields, err := FlagKey(map[string]any{"ub": 16, "ts": "1/1/1/1", "nkvo": 1, "fa": "on"})
	if want := "flash_attn=1,n_ubatch=16,no_kv_offload=1,tensor_split=1.00/1.00/1.00/1.00"; err != nil || key != want {
		t.Errorf("FlagKey = %q, %v; want %q", key, err, want)
	}
	if strings.Join(fields, ",") != "flash_attn,n_ubatch,no_kv_offload,tensor_split" {
		t.Errorf("FlagKey fields = %v, want them sorted", fields)
	}
	for _, flags := range []map[string]any{{"r": 3}, {"no-such": 1}, {"ub": 1, "ubatch-size": 2}} {
		if _, _, err := FlagKey(flags); err == nil {
			t.Errorf("FlagKey(%v): no error, want one", flags)
		}
	}
	// The schema's @flag attributes are the table: schema names and
	// spellings, with or without dashes, of both forks.
	for flag, want := range map[string]string{
		"ub": "n_ubatch", "-ub": "n_ubatch", "cpuStrict": "cpu_strict", "--cpu-strict": "cpu_strict",
		"fmoe": "fused_moe", "nCpuMoe": "n_cpu_moe", "ncmoe": "n_cpu_moe", "p": "n_prompt",
	} {
		if got, ok := FieldOf(flag); !ok || got != want {
			t.Errorf("FieldOf(%q) = %q, %v; want %q", flag, got, ok, want)
		}
	}
	for _, flag := range []string{"r", "pg", "v", "rpc", "tgb"} {
		if got, ok := FieldOf(flag); ok {
			t.Errorf("FieldOf(%q) = %q; want no field", flag, got)
		}
	}
}

func TestVerifyRows(t *testing.T) {
	tests := []struct {
		fixture string
		flags   map[string]any
		errHas  string // "" for no error
	}{
		{"llama.cpp_pp32_tg16_r2_json", map[string]any{"p": 32, "n": 16, "r": 2, "ub": 512, "ctk": "f16", "nkvo": 0}, ""},
		{"ik_llama.cpp_fmoe_rtr_json", map[string]any{"p": 32, "n": 16, "fmoe": 1}, ""},
		{"ik_llama.cpp_rtr1_q8_json", map[string]any{"rtr": 1, "fmoe": 1}, ""},
		// ik reads -ctk bogus as f16 and exits 0.
		{"ik_llama.cpp_err_bad_flag_value", map[string]any{"p": 0, "n": 16, "ctk": "bogus"}, `-ctk bogus: row 1 reports type_k "f16"`},
		// Both forks read -p abc as 0 and exit 0.
		{"llama.cpp_err_bad_int", map[string]any{"p": "abc", "n": 16}, "-p abc: no row reports n_prompt abc"},
		{"ik_llama.cpp_err_bad_int", map[string]any{"p": "abc", "n": 16}, "-p abc: no row reports n_prompt abc"},
		// ik's -rtr is not swept: "0,1" runs only rtr 0.
		{"ik_llama.cpp_fmoe_rtr_json", map[string]any{"rtr": 1}, `-rtr 1: row 1 reports repack "0"`},
		// A flag this fork does not report is not checked.
		{"llama.cpp_pp32_tg16_r2_json", map[string]any{"mla": 3, "r": 9}, ""},
	}
	for _, tt := range tests {
		err := VerifyRows(fixtureRows(t, tt.fixture), tt.flags)
		switch {
		case tt.errHas == "" && err != nil:
			t.Errorf("VerifyRows(%s, %v): %v", tt.fixture, tt.flags, err)
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("VerifyRows(%s, %v) = %v, want an error containing %q", tt.fixture, tt.flags, err, tt.errHas)
		}
	}
}
