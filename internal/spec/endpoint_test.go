package spec

import (
	"strings"
	"testing"
)

// TestCheckEndpointURL: a base URL with credentials, a query, another
// scheme or /v1 is refused, and the message never repeats the URL.
func TestCheckEndpointURL(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://node7:8000", ""},
		{"https://api.example.com/openai/", ""},
		{"http://bob:hunter2secret@node7:8000", "holds credentials"},
		{"http://hunter2secret@node7:8000", "holds credentials"},
		{"http://node7:8000?api_key=hunter2secret", "query"},
		{"http://node7:8000/#hunter2secret", "fragment"},
		{"ftp://node7", "http or https"},
		{"node7:8000", "http or https"},
		{"http:///v1", "no host"},
		{"http://node7:8000/v1", "without /v1"},
		{"http://node7:8000/v1/", "without /v1"},
		{"http://node7:8000/hunter2secret%zz", "not a URL"},
	} {
		msg, hint := CheckEndpointURL(c.url)
		if c.want == "" {
			if msg != "" {
				t.Errorf("%s: %s", c.url, msg)
			}
			continue
		}
		if !strings.Contains(msg, c.want) || hint == "" {
			t.Errorf("%s: %q (hint %q), want it to say %q with a hint", c.url, msg, hint, c.want)
		}
		if strings.Contains(msg+hint, "hunter2") || strings.Contains(msg+hint, "node7") {
			t.Errorf("%s: the message repeats the URL: %s / %s", c.url, msg, hint)
		}
	}
}
