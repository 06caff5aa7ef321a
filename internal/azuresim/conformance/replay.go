package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Fixture is one recording, reduced to the facts the replay checks.
type Fixture struct {
	// Source names the recording: repository, path and commit.
	Source string `json:"source"`
	// Note says what the recording shows, in a sentence.
	Note string `json:"note,omitempty"`
	// Subscription is the recording's subscription ID.
	Subscription string `json:"subscription"`
	Steps        []Step `json:"steps"`
	name         string
}

// Step is one request and Azure's answer to it.
type Step struct {
	Name   string          `json:"name"`
	Method string          `json:"method"`
	Path   string          `json:"path"` // with the query (api-version)
	Body   json.RawMessage `json:"body,omitempty"`
	// Status is Azure's status code.
	Status int `json:"status"`
	// Headers are the headers the replay checks: a value is compared by
	// format (URLs by path, numbers as numbers), null says Azure sends no
	// such header.
	Headers map[string]*string `json:"headers,omitempty"`
	// Response is Azure's body; absent when it was empty.
	Response json.RawMessage `json:"response,omitempty"`
	// Final is the body of the operation status when the long-running
	// operation ended (Azure-AsyncOperation), or absent.
	Final json.RawMessage `json:"final,omitempty"`
}

// Difference is one way azuresim answered otherwise than Azure.
type Difference struct {
	// Where is "<fixture>#<step> <status|header.Name|body.path|final.path>".
	Where string
	// What says how it differs.
	What string
}

func (d Difference) String() string { return d.Where + ": " + d.What }

// Load reads every fixture in dir.
func Load(dir string) ([]Fixture, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Fixture
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Clean(f))
		if err != nil {
			return nil, err
		}
		var fx Fixture
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fx); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if fx.Source == "" || fx.Subscription == "" || len(fx.Steps) == 0 {
			return nil, fmt.Errorf("%s: a fixture names its source and subscription and has steps", f)
		}
		fx.name = strings.TrimSuffix(filepath.Base(f), ".json")
		out = append(out, fx)
	}
	return out, nil
}

// Replay sends a fixture's requests to base (an azuresim URL serving
// without authentication) and returns the differences.
func Replay(c *http.Client, base string, fx Fixture) ([]Difference, error) {
	var out []Difference
	for _, st := range fx.Steps {
		where := fx.name + "#" + st.Name
		resp, err := send(c, st.Method, base+st.Path, st.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if resp.status != st.Status {
			out = append(out, Difference{where + " status", fmt.Sprintf("Azure %d, azuresim %d (%s)", st.Status, resp.status, firstLine(resp.body))})
		}
		out = append(out, compareHeaders(where, st.Headers, resp.header)...)
		out = append(out, compareBody(where+" body", st.Response, resp.body)...)
		if st.Final != nil {
			final, err := follow(c, resp)
			if err != nil {
				out = append(out, Difference{where + " final", err.Error()})
				continue
			}
			out = append(out, compareBody(where+" final", st.Final, final)...)
		}
	}
	return out, nil
}

// answer is a response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func send(c *http.Client, method, u string, body []byte) (answer, error) {
	var r io.Reader
	if len(body) > 0 {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		return answer{}, err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// follow polls an operation as azcore does: Azure-AsyncOperation first,
// until its status is terminal, waiting what retry-after-ms or
// Retry-After says (at most 2 s between polls, 2 min in all).
func follow(c *http.Client, resp answer) ([]byte, error) {
	u := resp.header.Get("Azure-AsyncOperation")
	if u == "" {
		return nil, fmt.Errorf("no Azure-AsyncOperation header to follow (status %d)", resp.status)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r, err := send(c, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		var s struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(r.body, &s)
		switch s.Status {
		case "Succeeded", "Failed", "Canceled":
			return r.body, nil
		}
		time.Sleep(retryAfter(r.header))
	}
	return nil, fmt.Errorf("the operation at %s did not end within 2 minutes", u)
}

func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.Atoi(h.Get("retry-after-ms")); err == nil {
		return min(time.Duration(ms)*time.Millisecond, 2*time.Second)
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		return min(time.Duration(s)*time.Second, 2*time.Second)
	}
	return 100 * time.Millisecond
}

func compareHeaders(where string, want map[string]*string, got http.Header) []Difference {
	var out []Difference
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, g := want[n], got.Values(n)
		at := where + " header." + n
		switch {
		case w == nil && len(g) > 0:
			out = append(out, Difference{at, fmt.Sprintf("Azure sends none, azuresim %q", g[0])})
		case w != nil && len(g) == 0:
			out = append(out, Difference{at, fmt.Sprintf("Azure sends %q, azuresim none", *w)})
		case w != nil && headerShape(n, *w) != headerShape(n, g[0]):
			out = append(out, Difference{at, fmt.Sprintf("Azure %q, azuresim %q", headerShape(n, *w), headerShape(n, g[0]))})
		}
	}
	return out
}

// headerShape is what of a header value must match: a URL's path with its
// last segment (the operation's token) and host left out, a number's
// being a number, otherwise the normalised value.
func headerShape(name, v string) string {
	switch strings.ToLower(name) {
	case "azure-asyncoperation", "location":
		u, err := url.Parse(v)
		if err != nil {
			return "not a URL: " + v
		}
		p := u.Path
		if i := strings.LastIndex(p, "/"); i >= 0 {
			p = p[:i] + "/<operation>"
		}
		q := ""
		if u.Query().Has("api-version") {
			q = "?api-version"
		}
		return strings.ToLower(p) + q
	case "retry-after":
		if _, err := strconv.Atoi(v); err == nil {
			return "<seconds>"
		}
		return "not a number: " + v
	}
	return normalise(v)
}

var (
	guidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	ipRE   = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)
	timeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)
)

// normalise makes what differs on every run compare by format.
func normalise(s string) string {
	s = timeRE.ReplaceAllString(s, "<time>")
	s = guidRE.ReplaceAllString(s, "<guid>")
	return ipRE.ReplaceAllString(s, "<ip>")
}

func compareBody(where string, want json.RawMessage, got []byte) []Difference {
	if len(bytes.TrimSpace(want)) == 0 {
		if len(bytes.TrimSpace(got)) > 0 {
			return []Difference{{where, "Azure answers no body, azuresim " + firstLine(got)}}
		}
		return nil
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return []Difference{{where, "the fixture's body is not JSON: " + err.Error()}}
	}
	if len(bytes.TrimSpace(got)) == 0 {
		return []Difference{{where, "Azure answers a body, azuresim none"}}
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return []Difference{{where, "azuresim's body is not JSON: " + firstLine(got)}}
	}
	return compareValue(where, w, g)
}

func compareValue(at string, w, g any) []Difference {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return []Difference{{at, fmt.Sprintf("Azure an object, azuresim %s", describe(g))}}
		}
		return compareObject(at, wv, gv)
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return []Difference{{at, fmt.Sprintf("Azure an array, azuresim %s", describe(g))}}
		}
		if len(wv) != len(gv) {
			return []Difference{{at, fmt.Sprintf("Azure %d items, azuresim %d", len(wv), len(gv))}}
		}
		var out []Difference
		for i := range wv {
			out = append(out, compareValue(fmt.Sprintf("%s[%d]", at, i), wv[i], gv[i])...)
		}
		return out
	case string:
		gs, ok := g.(string)
		if !ok || normalise(wv) != normalise(gs) {
			return []Difference{{at, fmt.Sprintf("Azure %q, azuresim %s", normalise(wv), describe(g))}}
		}
		return nil
	default:
		if fmt.Sprint(w) != fmt.Sprint(g) {
			return []Difference{{at, fmt.Sprintf("Azure %v, azuresim %s", w, describe(g))}}
		}
		return nil
	}
}

// compareObject compares two objects key by key: missing, extra, and
// differing values.
func compareObject(at string, w, g map[string]any) []Difference {
	keys := make([]string, 0, len(w)+len(g))
	for k := range w {
		keys = append(keys, k)
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []Difference
	for _, k := range keys {
		wk, inW := w[k]
		gk, inG := g[k]
		switch {
		case !inG:
			out = append(out, Difference{at + "." + k, "Azure sends " + describe(wk) + ", azuresim nothing"})
		case !inW:
			out = append(out, Difference{at + "." + k, "Azure sends nothing, azuresim " + describe(gk)})
		default:
			out = append(out, compareValue(at+"."+k, wk, gk)...)
		}
	}
	return out
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(normalise(x))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return "{" + strings.Join(keys, ",") + "}"
	case []any:
		return fmt.Sprintf("[%d items]", len(x))
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Allowed is the allow-list: a difference whose Where starts with an
// entry's prefix is accepted for the entry's reason.
type Allowed struct {
	Prefix string
	Reason string
	used   bool
}

// LoadAllowList reads "<fixture>#<step> <where-prefix> | <reason>" lines;
// blank lines and lines starting with # are skipped, and every entry needs
// a reason.
func LoadAllowList(path string) ([]*Allowed, error) {
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	var out []*Allowed
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		prefix, reason, ok := strings.Cut(line, "|")
		if !ok || strings.TrimSpace(reason) == "" || strings.TrimSpace(prefix) == "" {
			return nil, fmt.Errorf("%s:%d: want \"<where-prefix> | <reason>\"", path, i+1)
		}
		out = append(out, &Allowed{Prefix: strings.TrimSpace(prefix), Reason: strings.TrimSpace(reason)})
	}
	return out, nil
}

// Match returns the entry that allows d, or nil.
func Match(list []*Allowed, d Difference) *Allowed {
	for _, a := range list {
		if d.Where == a.Prefix || strings.HasPrefix(d.Where, a.Prefix+".") || strings.HasPrefix(d.Where, a.Prefix+"[") {
			a.used = true
			return a
		}
	}
	return nil
}

// Unused are the entries no difference matched: stale ones must go.
func Unused(list []*Allowed) []*Allowed {
	var out []*Allowed
	for _, a := range list {
		if !a.used {
			out = append(out, a)
		}
	}
	return out
}
