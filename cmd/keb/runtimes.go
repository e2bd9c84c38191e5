package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// runtimesFilters are the filter flags of `keb runtimes`, with the query
// parameter of GET /info/runtimes each one fills.
// Short names are upstream kcp CLI's where it has them, except two kcp
// gives other meanings: kcp's -i is the runtime ID (keb's -r) and its -r the
// region (keb's --region). A runtime ID that is not a UUID is refused with
// that said, and an empty answer to -i says it (runtimeIDHint).
var runtimesFilters = []struct{ flag, short, param, env, help string }{
	{"account", "g", "account", "KEB_RUNTIMES_ACCOUNT", "global account ID"},
	{"subaccount", "s", "subaccount", "KEB_RUNTIMES_SUBACCOUNT", "subaccount ID"},
	{"instance-id", "i", "instance_id", "KEB_RUNTIMES_INSTANCE_ID", "instance ID"},
	{"runtime-id", "r", "runtime_id", "KEB_RUNTIMES_RUNTIME_ID", "runtime ID"},
	{"region", "", "region", "KEB_RUNTIMES_REGION", "provider region"},
	{"plan", "p", "plan", "KEB_RUNTIMES_PLAN", "plan name"},
	{"shoot", "c", "shoot", "KEB_RUNTIMES_SHOOT", "shoot name"},
	{"state", "t", "state", "KEB_RUNTIMES_STATE", "state (provisioning, succeeded, failed, deprovisioning, deprovisioned, suspended, all)"},
	{"kyma-state", "", "kyma_state", "KEB_RUNTIMES_KYMA_STATE", "the Kyma CR's state, as Lifecycle Manager reports it (Ready, Processing, Warning, Error, Deleting)"},
}

// runtimesOptions is one `keb runtimes` invocation.
type runtimesOptions struct {
	url, token, dir string
	output          listOutput
	pageSize        int
	all, ops        bool
	expired         bool
	query           url.Values
	now             func() time.Time
	client          *http.Client
}

func runtimesCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	// The command struct hands no writer to commands, so this one prints to
	// the process's stdout and stderr like `keb token`.
	return bindRuntimes(fs, os.Stdout, os.Stderr, time.Now)
}

// bindRuntimes registers the flags of `keb runtimes` and returns the
// function that lists runtimes to stdout (stderr gets hints only); now is
// the clock ages are computed from.
func bindRuntimes(fs *flag.FlagSet, stdout, stderr io.Writer, now func() time.Time) func(ctx context.Context, args []string) error {
	opts := runtimesOptions{query: url.Values{}, now: now}
	b := config.NewBinder(fs)
	b.String(&opts.url, "url", "KEB_URL", "", "base URL of the broker (default: keb login's, else the running keb dev's, from <dir>/dev-endpoints.json, else http://127.0.0.1:8080)")
	b.String(&opts.token, "token", "KEB_TOKEN", "", "bearer token with scope cld:read (default: keb login's, else one minted with the dev key in --dir, as keb token does)")
	b.String(&opts.dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev (for the default token)")
	b.Int(&opts.pageSize, "page-size", "KEB_RUNTIMES_PAGE_SIZE", 0, fmt.Sprintf("runtimes per page, 1 to %d (0: the server's default)", runtimelisting.MaxPageSize))
	b.Bool(&opts.all, "all", "KEB_RUNTIMES_ALL", false, "follow the next cursors and list every page")
	bindListOutput(b, fs, &opts.output)
	b.Bool(&opts.ops, "ops", "KEB_RUNTIMES_OPS", false, "ask for every operation (op_detail=all) and list them under each runtime")
	b.Bool(&opts.expired, "expired", "KEB_RUNTIMES_EXPIRED", false, "only trial and free runtimes that have expired (expired=true)")
	for _, f := range runtimesFilters {
		bindRepeatable(fs, opts.query, f.param, f.flag, f.short, f.env,
			"only runtimes with this "+f.help+" (repeatable or comma-separated; any of them matches)")
	}
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q (filters are flags, e.g. --instance-id)", args)
		}
		return listRuntimes(ctx, opts, stdout, stderr)
	}
}

// bindRepeatable binds a filter flag whose values accumulate in q[param]:
// each occurrence adds its comma-separated values. The environment variable,
// if set, gives the values used when the flag is not given at all.
func bindRepeatable(fs *flag.FlagSet, q url.Values, param, name, short, env, help string) {
	if v, ok := os.LookupEnv(env); ok {
		if vals := splitValues(v); len(vals) > 0 {
			q[param] = vals
		}
	}
	fromEnv := true
	set := func(s string) error {
		if fromEnv {
			q.Del(param)
			fromEnv = false
		}
		for _, v := range splitValues(s) {
			q.Add(param, v)
		}
		return nil
	}
	fs.Func(name, fmt.Sprintf("%s (env %s)", help, env), set)
	if short != "" {
		fs.Func(short, fmt.Sprintf("short for --%s (env %s)", name, env), set)
	}
}

func splitValues(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// listRuntimes fetches one page (or every page with all) and prints it.
func listRuntimes(ctx context.Context, opts runtimesOptions, stdout, stderr io.Writer) error {
	if err := opts.output.check(); err != nil {
		return err
	}
	if opts.url == "" {
		opts.url = devURL(opts.dir)
	}
	for _, id := range opts.query["runtime_id"] {
		if uuid.Validate(id) != nil {
			return fmt.Errorf("runtime ID %q is not one (runtime IDs are UUIDs): kcp's -r is the provider region, keb's --region; keb's -r is --runtime-id", id)
		}
	}
	if opts.pageSize < 0 || opts.pageSize > runtimelisting.MaxPageSize {
		return fmt.Errorf("bad --page-size %d (want 1 to %d, or 0 for the server's default)", opts.pageSize, runtimelisting.MaxPageSize)
	}
	base, err := url.Parse(strings.TrimRight(opts.url, "/") + "/info/runtimes")
	if opts.ops {
		opts.query.Set("op_detail", "all")
	}
	if opts.expired {
		opts.query.Set("expired", "true")
	}
	if err != nil || base.Scheme == "" || base.Host == "" {
		return fmt.Errorf("bad --url %q: want e.g. http://127.0.0.1:8080", opts.url)
	}
	token := opts.token
	if token == "" {
		if token, err = devToken(opts.dir); err != nil {
			return err
		}
	}
	client := opts.client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	now := opts.now
	if now == nil {
		now = time.Now
	}

	if opts.all && opts.output.format != "yaml" {
		return streamRuntimes(ctx, client, *base, token, opts, stdout, stderr, now())
	}
	all, err := fetchPages(ctx, client, *base, token, opts.query, opts.pageSize, opts.all)
	if err != nil {
		return err
	}
	if all.Data == nil {
		all.Data = []runtimelisting.RuntimeDTO{}
	}
	if opts.all {
		all.Count = len(all.Data)
	}

	if len(all.Data) == 0 && !opts.output.structured() {
		fmt.Fprintln(stderr, "No runtimes found"+instanceIDHint(opts.query))
		return nil
	}
	table, wide := runtimeColumns(now())
	if opts.ops && !opts.output.structured() && !strings.HasPrefix(opts.output.format, "custom-columns=") {
		cols := table
		if opts.output.format == "wide" {
			cols = wide
		}
		if err := printTable(stdout, opts.output, all.Data, cols, operationLines(now())); err != nil {
			return err
		}
	} else if err := printItems(stdout, opts.output, page[runtimelisting.RuntimeDTO]{Data: all.Data, Count: all.Count,
		TotalCount: all.TotalCount, Next: all.Next}, table, wide); err != nil {
		return err
	}
	if all.Next != "" {
		fmt.Fprintf(stderr, "%d of %d runtimes shown; --all lists every page\n", len(all.Data), all.TotalCount)
	}
	return nil
}

// streamRuntimes prints every page (--all) as it arrives, so that the
// command's memory holds one page whatever the number of runtimes (100,000
// runtimes kept whole took 1 GiB): JSON as the one document the buffered
// listing prints, tables a page at a time (each page's columns aligned on
// their own, the header once). YAML, whose keys are sorted with count
// before data, is printed whole (listRuntimes).
func streamRuntimes(ctx context.Context, client *http.Client, base url.URL, token string, opts runtimesOptions, stdout, stderr io.Writer, now time.Time) error {
	table, wide := runtimeColumns(now)
	cols := table
	switch {
	case opts.output.format == "wide":
		cols = wide
	case strings.HasPrefix(opts.output.format, "custom-columns="):
		var err error
		if cols, err = customColumns[runtimelisting.RuntimeDTO](opts.output.format); err != nil {
			return err
		}
	}
	var sub func(runtimelisting.RuntimeDTO) []string
	if opts.ops && !strings.HasPrefix(opts.output.format, "custom-columns=") {
		sub = operationLines(now)
	}
	js := &jsonStream{w: stdout}
	rows, total := 0, 0
	err := eachPage(ctx, client, base, token, opts.query, opts.pageSize, true, func(p runtimelisting.Response) error {
		total = p.TotalCount
		if opts.output.format == "json" {
			rows += len(p.Data)
			return js.items(p.Data)
		}
		if len(p.Data) == 0 {
			return nil
		}
		o := opts.output
		o.noHeaders = o.noHeaders || rows > 0
		rows += len(p.Data)
		return printTable(stdout, o, p.Data, cols, sub)
	})
	if err != nil {
		return err
	}
	if opts.output.format == "json" {
		return js.end(total)
	}
	if rows == 0 {
		fmt.Fprintln(stderr, "No runtimes found"+instanceIDHint(opts.query))
	}
	return nil
}

// instanceIDHint says, when -i found nothing, that keb's -i is the instance
// ID: a kcp user's -i means the runtime ID (keb's -r).
func instanceIDHint(q url.Values) string {
	if len(q["instance_id"]) == 0 {
		return ""
	}
	return " (-i is --instance-id here; kcp's -i is the runtime ID, keb's -r)"
}

// jsonStream writes {"data": [...], "count": n, "totalCount": t} item by
// item, byte for byte as printObject writes the whole page.
type jsonStream struct {
	w     io.Writer
	n     int
	begun bool
	err   error
}

func (s *jsonStream) write(str string) {
	if s.err == nil {
		_, s.err = io.WriteString(s.w, str)
	}
}

func (s *jsonStream) begin() {
	if !s.begun {
		s.write("{\n  \"data\": [")
		s.begun = true
	}
}

func (s *jsonStream) items(items []runtimelisting.RuntimeDTO) error {
	s.begin()
	for _, it := range items {
		// printObject's encoder settings, one level deeper.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("    ", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(it); err != nil {
			return err
		}
		b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if s.n == 0 {
			s.write("\n    ")
		} else {
			s.write(",\n    ")
		}
		s.write(string(b))
		s.n++
	}
	return s.err
}

func (s *jsonStream) end(total int) error {
	s.begin()
	if s.n > 0 {
		s.write("\n  ")
	}
	s.write(fmt.Sprintf("],\n  \"count\": %d,\n  \"totalCount\": %d\n}\n", s.n, total))
	return s.err
}

// fetchPages reads GET /info/runtimes with query: one page, or with all
// every page, following the next cursors.
func fetchPages(ctx context.Context, client *http.Client, base url.URL, token string, query url.Values, pageSize int, all bool) (runtimelisting.Response, error) {
	var out runtimelisting.Response
	err := eachPage(ctx, client, base, token, query, pageSize, all, func(page runtimelisting.Response) error {
		if !all {
			out = page
			return nil
		}
		out.Data = append(out.Data, page.Data...)
		out.TotalCount = page.TotalCount
		return nil
	})
	return out, err
}

// eachPage reads GET /info/runtimes with query and hands each page to f:
// one page, or with all every page, following the next cursors.
func eachPage(ctx context.Context, client *http.Client, base url.URL, token string, query url.Values, pageSize int, all bool, f func(runtimelisting.Response) error) error {
	seen := map[string]bool{}
	next := ""
	for {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		if pageSize > 0 {
			q.Set("page_size", strconv.Itoa(pageSize))
		}
		if next != "" {
			q.Set("next", next)
		}
		u := base
		u.RawQuery = q.Encode()
		page, err := fetchRuntimes(ctx, client, u.String(), token)
		if err != nil {
			return err
		}
		if err := f(page); err != nil {
			return err
		}
		if !all || page.Next == "" {
			return nil
		}
		if seen[page.Next] {
			return fmt.Errorf("the server returned the cursor %q twice; stopping", page.Next)
		}
		seen[page.Next] = true
		next = page.Next
	}
}

// fetchRuntimes makes one request; any answer but 200 is an error carrying
// the server's description.
func fetchRuntimes(ctx context.Context, client *http.Client, u, token string) (runtimelisting.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return runtimelisting.Response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return runtimelisting.Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return runtimelisting.Response{}, fmt.Errorf("reading the answer of %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return runtimelisting.Response{}, fmt.Errorf("the broker answered %s: %s", resp.Status, describeError(body))
	}
	var page runtimelisting.Response
	if err := json.Unmarshal(body, &page); err != nil {
		return runtimelisting.Response{}, fmt.Errorf("decoding the answer of %s: %w", u, err)
	}
	return page, nil
}

// describeError is what an error answer says: its OSB description (or
// error), else its text, cut at 500 bytes.
func describeError(body []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"description"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && (e.Description != "" || e.Error != "") {
		msg = e.Description
		if msg == "" {
			msg = e.Error
		}
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	if msg == "" {
		msg = "no description"
	}
	return msg
}

// devToken mints a cld:read token with the dev key in dir, as `keb token`
// does; it never creates a key, since a running `keb dev` would refuse it.
func devToken(dir string) (string, error) { return devTokenWith(dir, auth.ScopeCLDRead) }

// devTokenWith is the token the operator commands send without --token:
// keb login's (its token, or one from its client with the scopes), else one
// minted with the scopes with the dev key in dir.
func devTokenWith(dir string, scopes ...string) (string, error) {
	if c, ok, err := readLoginConfig(); err != nil {
		return "", err
	} else if ok {
		return c.token(context.Background(), scopes)
	}
	if _, err := os.Stat(dir + "/dev-signing-key.pem"); err != nil {
		return "", fmt.Errorf("no --token and no dev signing key in %s: start `keb dev` (make run) or pass --token / KEB_TOKEN", dir)
	}
	key, err := auth.LoadOrCreateDevKey(dir)
	if err != nil {
		return "", err
	}
	tok, err := key.Mint(devstack.Issuer, devstack.Audience, "keb-token-cli", scopes, 5*time.Minute)
	if err != nil {
		return "", errors.Join(errors.New("minting a dev token"), err)
	}
	return tok, nil
}

// age renders how long ago t was: 45s, 5m, 3h, 2d.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
