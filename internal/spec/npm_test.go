package spec

import "testing"

func TestValidNPMVersion(t *testing.T) {
	for _, s := range []string{
		"3.22.1", "v3.22.1", "3", "3.x", "3.22.x", "3.22.*", "*", "x", "^3.22.1", "~3.22", "~>3.2", ">=3.0.0", ">= 3.0.0",
		">=3.0.0 <4", "3.0.0 - 3.22.1", "^2 || ^3", "3.22.1-beta.1", "3.22.1+build.5", "=3.22.1", "latest", "beta",
	} {
		if !ValidNPMVersion(s) {
			t.Errorf("ValidNPMVersion(%q) = false, want true", s)
		}
	}
	for _, s := range []string{
		"=.22.1", "3.22c1", "", " ", "3..1", "3.22.1.4", ">=", "^", "3.22.1 ||", "|| 3", "01.2.3", "3.22.1-", "3.22.1 - ", "--3", "3.22.1!", "3,22,1",
	} {
		if ValidNPMVersion(s) {
			t.Errorf("ValidNPMVersion(%q) = true, want false", s)
		}
	}
}
